/**
 * FrozenTree (src/tree/frozen-tree.ts) is the canonical tree applyLayers
 * returns: a byte-ordered array behind the ReadonlyMap interface. These
 * tests hold it to what a Map of the same entries answers.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { compareBytes } from "../../src/core/index.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { FrozenTree } from "../../src/tree/frozen-tree.ts";

const dir = (path: string): FsEntry => ({ path, type: "dir", mode: 0o755, uid: 0, gid: 0, mtime: 0 });

test("lookups and iteration answer as a Map of the same entries, in byte order", () => {
  const unit = fc.constantFrom("a", "b", "/", "\u00e9", "\ue000", "\u{1F600}", "-", ".");
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.array(unit, { minLength: 1, maxLength: 4 }).map((u) => `/${u.join("")}`)),
      fc.array(fc.string(), { maxLength: 5 }),
      (paths, probes) => {
        const sorted = [...paths].sort(compareBytes).map(dir);
        const t = new FrozenTree(sorted);
        const m = new Map(sorted.map((e) => [e.path, e]));
        assert.equal(t.size, m.size);
        assert.deepEqual([...t.keys()], [...m.keys()]);
        assert.deepEqual([...t], [...m]);
        assert.deepEqual([...t.values()], [...m.values()]);
        for (const p of [...paths, ...probes, "/", ""]) {
          assert.equal(t.get(p), m.get(p), p);
          assert.equal(t.has(p), m.has(p), p);
        }
        const seen: string[] = [];
        t.forEach((e, k, map) => {
          assert.equal(e.path, k);
          assert.equal(map, t);
          seen.push(k);
        });
        assert.deepEqual(seen, [...m.keys()]);
      },
    ),
  );
});

test("entries out of byte order (or repeated) are refused when the tree is made", () => {
  // UTF-16 order puts U+1F600 before U+E000; byte order puts it after
  assert.throws(() => new FrozenTree([dir("/"), dir("/\u{1F600}"), dir("/\ue000")]), TypeError);
  assert.throws(() => new FrozenTree([dir("/"), dir("/a"), dir("/a")]), TypeError);
  assert.equal(new FrozenTree([dir("/"), dir("/\ue000"), dir("/\u{1F600}")]).size, 3, "control: byte order is accepted");
});

test("fromEntries sorts entries in any order by byte order, as the checked constructor accepts them, and refuses a repeated path", () => {
  const unit = fc.constantFrom("a", "b", "/", "\u00e9", "\ue000", "\u{1F600}", "\uD800", "-", ".");
  fc.assert(
    fc.property(fc.uniqueArray(fc.array(unit, { minLength: 1, maxLength: 4 }).map((u) => `/${u.join("")}`)), (paths) => {
      const t = FrozenTree.fromEntries(paths.map(dir));
      const expected = [...paths].sort(compareBytes);
      assert.deepEqual([...t.keys()], expected);
      // the checked constructor accepts the same order: fromEntries skipped a comparison, not a rule
      assert.deepEqual([...new FrozenTree([...t.values()]).keys()], expected);
    }),
  );
  assert.throws(() => FrozenTree.fromEntries([dir("/b"), dir("/"), dir("/b")]), /appears twice/);
  assert.equal(FrozenTree.fromEntries([dir("/b"), dir("/"), dir("/a")]).size, 3, "control: distinct paths are accepted");
});
