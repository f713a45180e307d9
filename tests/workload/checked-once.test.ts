/**
 * A derivation checks its tree once (`sortedEntries`) and hands the checked
 * entries to both encoders (claim W62): `fsIdentityOf(sortedEntries(t))` is
 * `fsIdentity(t)` and `hashDerived(d, _, sortedEntries(t))` is
 * `hashDerived(d)`, on a frozen tree and on a Map out of order; a tree the
 * check refuses is still refused by `finishDerivation`, before any identity.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { sha256 } from "../../src/core/index.ts";
import { fsIdentity, fsIdentityOf, sortedEntries, STRICT_POLICY, type CanonicalTree, type FsEntry } from "../../src/tree/index.ts";
import { FrozenTree } from "../../src/tree/frozen-tree.ts";
import { hashDerived } from "../../src/workload/derived-entry.ts";
import { finishDerivation } from "../../src/workload/derive.ts";
import { makeLaunch } from "../../src/workload/launch.ts";
import { parseCanonicalSpec } from "../../src/workload/spec.ts";
import { assertCode } from "../helpers/errors.ts";

const launch = makeLaunch({ argv: ["/bin/true"], env: ["A=1"], workdir: "/", user: "1000:1000" }, "/launch");
const d0 = sha256(Buffer.from("x"));
const identities = { workload: d0, source: d0, fs: d0, launch: d0 };
const root: FsEntry = { path: "/", type: "dir", mode: 0o755, uid: 0, gid: 0, mtime: 0 };

function entries(n: number): FsEntry[] {
  const out: FsEntry[] = [root];
  for (let d = 0; d < 20; d++) out.push({ path: `/d${d}`, type: "dir", mode: 0o755, uid: d, gid: 0, mtime: d });
  for (let i = 0; i < n; i++) {
    const path = `/d${i % 20}/f${i}\u00e9`;
    out.push(
      i % 7 === 0
        ? { path, type: "symlink", mode: 0o777, uid: 0, gid: 0, mtime: -i, target: `../t${i}` }
        : { path, type: "file", mode: 0o644, uid: i, gid: 2, mtime: i, size: i * 31, sha256: sha256(String(i)) },
    );
  }
  return out;
}

const derivedOf = (tree: CanonicalTree) => ({
  kind: "oci" as const,
  identities,
  policy: STRICT_POLICY,
  launch,
  raw: [{ role: "manifest" as const, digest: d0, size: 3 }],
  tree,
});

test("the checked entries give the same fs identity and derived digest as each encoder checking the tree itself", () => {
  const list = entries(3000);
  const sorted = [...list].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const trees: Array<[string, CanonicalTree]> = [
    ["a frozen tree", new FrozenTree(sorted)],
    ["a Map out of byte order", new Map([...list].reverse().map((e) => [e.path, e]))],
  ];
  for (const [what, t] of trees) {
    const checked = sortedEntries(t);
    assert.equal(fsIdentityOf(checked), fsIdentity(t), what);
    assert.deepEqual(hashDerived(derivedOf(t), undefined, checked), hashDerived(derivedOf(t)), what);
  }
  // control: another tree gives another identity and digest
  const other = new FrozenTree(sorted.slice(0, -1));
  assert.notEqual(fsIdentityOf(sortedEntries(other)), fsIdentity(trees[0]![1]));
  assert.notDeepEqual(hashDerived(derivedOf(other), undefined, sortedEntries(other)), hashDerived(derivedOf(trees[0]![1])));
});

test("finishDerivation still refuses a tree the check refuses (WORKLOAD_MISMATCH), and derives the valid one", () => {
  const spec = parseCanonicalSpec(Buffer.from(JSON.stringify({ schema: "cairn.workload/1", source: { oci: { manifest: d0 } } })), "test spec");
  const facts = { kind: "oci" as const, manifest: d0 };
  const ok = new FrozenTree([root, { path: "/a", type: "file", mode: 0o644, uid: 0, gid: 0, mtime: 0, size: 1, sha256: d0 }]);
  const derived = finishDerivation({ spec, tree: ok, launch, source: facts, raw: [] });
  assert.equal(derived.identities.fs, fsIdentity(ok), "control: the valid tree derives, with its fs identity");
  const orphan = new FrozenTree([root, { path: "/missing/a", type: "file", mode: 0o644, uid: 0, gid: 0, mtime: 0, size: 1, sha256: d0 }]);
  assertCode(() => finishDerivation({ spec, tree: orphan, launch, source: facts, raw: [] }), "WORKLOAD_MISMATCH");
});
