/**
 * The derived entry is written entry by entry (src/workload/derived-entry.ts)
 * instead of canonicalizing one model of the whole tree; these tests hold
 * the two equal, byte for byte, on every kind of entry and on odd strings.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { canonicalBytes, canonicalize, identityBytes, sha256 } from "../../src/core/index.ts";
import type { CanonicalTree, FsEntry } from "../../src/tree/index.ts";
import { sortedEntries, STRICT_POLICY, policyModel } from "../../src/tree/index.ts";
import { DERIVED_ENTRY_IDENTITY, hashDerived, encodeDerived, entryModel, entryText } from "../../src/workload/derived-entry.ts";
import { rawModel } from "../../src/workload/closure.ts";
import { launchModel, makeLaunch } from "../../src/workload/launch.ts";
import { assertCode } from "../helpers/errors.ts";

const digest = sha256(Buffer.from("x"));
const entries: FsEntry[] = [
  { path: "/", type: "dir", mode: 0o755, uid: 0, gid: 0, mtime: 0 },
  { path: '/a "quoted"\\\n\u0001', type: "file", mode: 0o644, uid: 4294967295, gid: 1000, mtime: 1_700_000_000, size: 12, sha256: digest },
  { path: "/\u00e9\u{1F600}\ue000", type: "symlink", mode: 0o777, uid: 1, gid: 2, mtime: -5, target: "../t\u2028\u2029" },
  { path: "/big", type: "file", mode: 0o1777, uid: 0, gid: 0, mtime: Number.MAX_SAFE_INTEGER, size: 2 ** 40, sha256: digest },
];
const tree = (list: readonly FsEntry[]): CanonicalTree => new Map(list.map((e) => [e.path, e]));

test("each entry's text is its model's JCS text", () => {
  for (const [i, e] of entries.entries()) assert.equal(entryText(e, i), canonicalize(entryModel(e)), e.path);
});

test("the derived entry's bytes equal canonicalBytes of the whole model", () => {
  const launch = makeLaunch({ argv: ["/bin/true"], env: ["A=1"], workdir: "/", user: "1000:1000" }, "/launch");
  const identities = { workload: digest, source: digest, fs: digest, launch: digest };
  for (const list of [entries, [entries[0]!]]) {
    const d = { kind: "oci" as const, identities, policy: STRICT_POLICY, launch, raw: [{ role: "manifest" as const, digest, size: 3 }], tree: tree(list) };
    const whole = identityBytes(DERIVED_ENTRY_IDENTITY, {
      source_kind: d.kind,
      identities: { ...identities },
      policy: policyModel(d.policy),
      launch: launchModel(d.launch),
      raw: rawModel(d.raw),
      tree: sortedEntries(d.tree).map(entryModel),
    });
    assert.ok(encodeDerived(d).equals(whole), `${list.length} entries`);
    assert.ok(canonicalBytes(JSON.parse(whole.toString("utf8"))).equals(whole), "control: the model's bytes are canonical");
  }
});

test("a value JCS refuses is refused at its place in the whole document", () => {
  const bad: FsEntry = { path: "/x", type: "symlink", mode: 0o777, uid: 0, gid: 0, mtime: 0, target: "\ud800" };
  assertCode(() => entryText(bad, 7), "JSON_STRING", "/tree/7/target");
  assert.equal(entryText({ ...bad, target: "\ud800\udc00" }, 7).includes("\u{10000}"), true, "control: the paired surrogate is accepted");
});

test("verification's streamed digest of the derived entry is the sha256 and length of its bytes", () => {
  const launch = makeLaunch({ argv: ["/bin/true"], env: [], workdir: "/", user: "1000:1000" }, "/launch");
  const identities = { workload: digest, source: digest, fs: digest, launch: digest };
  // many entries (the 64 KiB buffer fills and flushes many times), one entry text longer than the buffer, multi-byte UTF-8
  const many: FsEntry[] = [entries[0]!];
  for (let i = 0; i < 3000; i++)
    many.push({ path: `/f${String(i).padStart(5, "0")}-\u00e9`, type: "file", mode: 0o644, uid: 0, gid: 0, mtime: i, size: i, sha256: digest });
  many.push({ path: "/zlong", type: "symlink", mode: 0o777, uid: 0, gid: 0, mtime: 0, target: "\u{1F600}".repeat(40_000) });
  for (const list of [entries, [entries[0]!], many]) {
    const d = { kind: "oci" as const, identities, policy: STRICT_POLICY, launch, raw: [{ role: "manifest" as const, digest, size: 3 }], tree: tree(list) };
    const bytes = encodeDerived(d);
    assert.deepEqual(hashDerived(d), { digest: sha256(bytes), size: bytes.length }, `${list.length} entries`);
  }
  // control: one changed entry changes the digest
  const d = { kind: "oci" as const, identities, policy: STRICT_POLICY, launch, raw: [], tree: tree(many) };
  const other = { ...d, tree: tree([...many.slice(0, -1), { ...many[many.length - 1]!, mtime: 1 }]) };
  assert.notEqual(hashDerived(d).digest, hashDerived(other).digest);
});
