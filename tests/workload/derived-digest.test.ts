/**
 * Verify hashes the derived entry as it is written instead of holding it
 * (claim W58): hashDerived must give the sha256 and size of exactly the
 * bytes encodeDerived builds, across its 64 KiB buffer's boundaries, with
 * multi-byte characters and with one entry longer than the buffer.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { sha256 } from "../../src/core/index.ts";
import type { CanonicalTree, FsEntry } from "../../src/tree/index.ts";
import { STRICT_POLICY } from "../../src/tree/index.ts";
import { encodeDerived, hashDerived } from "../../src/workload/derived-entry.ts";
import { makeLaunch } from "../../src/workload/launch.ts";
import { assertCode } from "../helpers/errors.ts";

const digest = sha256(Buffer.from("x"));
const launch = makeLaunch({ argv: ["/bin/true"], env: ["A=1"], workdir: "/", user: "1000:1000" }, "/launch");
const identities = { workload: digest, source: digest, fs: digest, launch: digest };
const entry = (list: readonly FsEntry[]) => ({
  kind: "oci" as const,
  identities,
  policy: STRICT_POLICY,
  launch,
  raw: [{ role: "manifest" as const, digest, size: 3 }],
  tree: new Map(list.map((e) => [e.path, e])) as CanonicalTree,
});
const root: FsEntry = { path: "/", type: "dir", mode: 0o755, uid: 0, gid: 0, mtime: 0 };
const files = (n: number, name: (i: number) => string): FsEntry[] =>
  Array.from({ length: n }, (_, i) => ({ path: `/${name(i)}`, type: "file", mode: 0o644, uid: 1, gid: 2, mtime: i, size: i, sha256: digest }) as FsEntry);

test("hashDerived is the sha256 and size of encodeDerived's bytes", () => {
  const cases: Array<[string, FsEntry[]]> = [
    ["the root alone", [root]],
    ["2,000 entries (several 64 KiB buffers)", [root, ...files(2000, (i) => `f${String(i).padStart(5, "0")}`)]],
    ["multi-byte and escaped names", [root, ...files(3000, (i) => `\u00e9\u{1F600}"\\\n${i}`)]],
    [
      "one entry longer than the buffer, between short ones",
      [root, ...files(3, (i) => `a${i}`), ...files(1, () => `b${"\u20ac".repeat(30_000)}`), ...files(3, (i) => `c${i}`)],
    ],
  ];
  for (const [what, list] of cases) {
    const bytes = encodeDerived(entry(list));
    assert.deepEqual(hashDerived(entry(list)), { digest: sha256(bytes), size: bytes.length }, what);
  }
  assert.notDeepEqual(
    hashDerived(entry([root, ...files(2, (i) => `${i}`)])),
    hashDerived(entry([root, ...files(2, (i) => `${i + 1}`)])),
    "control: another tree",
  );
});

test("hashDerived refuses what encodeDerived refuses, at the same place", () => {
  const bad: FsEntry = { path: "/x", type: "symlink", mode: 0o777, uid: 0, gid: 0, mtime: 0, target: "\ud800" };
  assertCode(() => encodeDerived(entry([root, bad])), "JSON_STRING", "/tree/1/target");
  assertCode(() => hashDerived(entry([root, bad])), "JSON_STRING", "/tree/1/target");
  assert.equal(hashDerived(entry([root, { ...bad, target: "t" }])).size, encodeDerived(entry([root, { ...bad, target: "t" }])).length, "control");
});
