/**
 * PathSet (src/tree/path-set.ts), the per-layer duplicate check of layer
 * application, answers as a Set<string> of the same paths does, across its
 * chunk and table growth.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { PathSet } from "../../src/tree/path-set.ts";

test("a path set answers as a Set of the same paths", () => {
  fc.assert(
    fc.property(fc.array(fc.string({ maxLength: 6 }), { maxLength: 300 }), fc.array(fc.string({ maxLength: 6 }), { maxLength: 20 }), (adds, probes) => {
      const s = new PathSet();
      const m = new Set<string>();
      for (const p of adds) {
        assert.equal(s.add(p), !m.has(p), p);
        m.add(p);
      }
      assert.equal(s.size, m.size);
      for (const p of [...adds, ...probes]) assert.equal(s.has(p), m.has(p), p);
    }),
  );
});

test("a path set keeps every path across many chunks and rehashes; a repeat is refused (control: a new path is added)", () => {
  const s = new PathSet();
  for (let i = 0; i < 20_000; i++) assert.equal(s.add(`/d/${i % 7}/f${i}`), true);
  assert.equal(s.size, 20_000);
  for (let i = 0; i < 20_000; i += 997) assert.equal(s.add(`/d/${i % 7}/f${i}`), false, `repeat ${i}`);
  assert.equal(s.has("/d/0/f20000"), false);
  assert.equal(s.add("/d/0/f20000"), true, "control: a path not yet named is added");
  assert.equal(s.size, 20_001);
});
