/**
 * Verify hashes the derived entry as it is written instead of holding it
 * (claim W58): hashDerived must give the sha256 and size of exactly the
 * bytes encodeDerived builds, across its 64 KiB buffer's boundaries, with
 * multi-byte characters and with one entry longer than the buffer.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { compareBytes, identityBytes, sha256 } from "../../src/core/index.ts";
import type { CanonicalTree, FsEntry, SortedEntries } from "../../src/tree/index.ts";
import { policyModel, STRICT_POLICY } from "../../src/tree/index.ts";
import { rawModel } from "../../src/workload/closure.ts";
import { DERIVED_ENTRY_IDENTITY, encodeDerived, entryModel, hashDerived } from "../../src/workload/derived-entry.ts";
import { launchModel, makeLaunch } from "../../src/workload/launch.ts";
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

test("hashDerived writes each entry's bytes as the whole model's JCS encoding has them, on random entries: odd numbers, escaped and non-ASCII strings, lone surrogates (property)", () => {
  const num = fc.oneof(
    fc.integer(),
    fc.constantFrom(0, -0, 0.5, -1.25, 1e21, 2 ** 53, -(2 ** 53), Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 4294967295),
  );
  const str = fc.oneof(
    fc.stringMatching(/^[a-z0-9/._-]{1,40}$/),
    fc.constantFrom("/a\u0010b", "/\u001f", "/x\u007f", '/q"', "/b\\s"), // ASCII with one byte to escape (or, DEL, not)
    fc.string({
      unit: fc.constantFrom("a", "/", '"', "\\", "\n", "\u0000", "\u001f", "\u007f", "\u00e9", "\u2028", "\u{1F600}", "\ud800", "\udc00", "\ue000"),
    }),
  );
  const entryArb = fc.oneof(
    fc.record({ type: fc.constant("dir" as const), mode: num, uid: num, gid: num, mtime: num }),
    fc.record({ type: fc.constant("file" as const), mode: num, uid: num, gid: num, mtime: num, size: num, sha256: fc.oneof(fc.constant(digest), str) }),
    fc.record({ type: fc.constant("symlink" as const), mode: num, uid: num, gid: num, mtime: num, target: str }),
  );
  fc.assert(
    fc.property(fc.uniqueArray(fc.tuple(str, entryArb), { selector: ([p]) => p, maxLength: 30 }), (list) => {
      // entries handed over as checked, unchecked: the writer's own fallbacks are what is tested, not the tree check
      const entries = list.map(([path, e]) => ({ path, ...e }) as FsEntry).sort((a, b) => compareBytes(a.path, b.path));
      const d = entry(entries);
      let whole: Buffer | undefined;
      let refused: unknown;
      try {
        whole = identityBytes(DERIVED_ENTRY_IDENTITY, {
          source_kind: d.kind,
          identities: { ...identities },
          policy: policyModel(d.policy),
          launch: launchModel(d.launch),
          raw: rawModel(d.raw),
          tree: entries.map(entryModel),
        });
      } catch (e) {
        refused = e;
      }
      if (whole === undefined) {
        assert.throws(
          () => hashDerived(d, undefined, entries as unknown as SortedEntries),
          (e: unknown) => (e as { code?: string }).code === (refused as { code?: string }).code,
        );
        return;
      }
      assert.deepEqual(hashDerived(d, undefined, entries as unknown as SortedEntries), { digest: sha256(whole), size: whole.length });
    }),
    { numRuns: 300 },
  );
});
