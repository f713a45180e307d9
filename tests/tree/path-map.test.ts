/**
 * PathMap (src/tree/path-map.ts), the tree model's table of entries by path,
 * answers as a Map does under any sequence of sets and deletes: lookups,
 * size, and iteration in insertion order (a replaced key keeps its place, a
 * deleted and re-added one goes last), across chunk growth, deletions and
 * the rebuilds that close their holes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { PathMap } from "../../src/tree/path-map.ts";

type Op = { set: string; v: number } | { del: string };

function check(ops: readonly Op[], probes: readonly string[]): void {
  const p = new PathMap<number>();
  const m = new Map<string, number>();
  for (const op of ops) {
    if ("set" in op) {
      p.set(op.set, op.v);
      m.set(op.set, op.v);
    } else assert.equal(p.delete(op.del), m.delete(op.del), `delete ${op.del}`);
  }
  assert.equal(p.size, m.size);
  assert.deepEqual([...p.entries()], [...m.entries()]);
  assert.deepEqual([...p.keys()], [...m.keys()]);
  assert.deepEqual([...p.values()], [...m.values()]);
  for (const k of [...m.keys(), ...probes]) {
    assert.equal(p.get(k), m.get(k), k);
    assert.equal(p.has(k), m.has(k), k);
  }
}

test("a path map answers as a Map under any sets and deletes", () => {
  const key = fc.string({ maxLength: 3 });
  const op: fc.Arbitrary<Op> = fc.oneof(fc.record({ set: key, v: fc.integer() }), fc.record({ del: key }));
  fc.assert(fc.property(fc.array(op, { maxLength: 400 }), fc.array(key, { maxLength: 10 }), (ops, probes) => check(ops, probes)));
});

test("a path map answers as a Map across many chunks, mass deletions and re-additions", () => {
  const ops: Op[] = [];
  for (let i = 0; i < 30_000; i++) ops.push({ set: `/d/${i}`, v: i });
  for (let i = 0; i < 30_000; i += 3) ops.push({ del: `/d/${i}` });
  for (let i = 0; i < 30_000; i += 6) ops.push({ set: `/d/${i}`, v: -i });
  for (let i = 30_000; i < 40_000; i++) ops.push({ set: `/d/${i}`, v: i });
  check(ops, ["/d/3", "/d/6", "/d/40000", ""]);
});
