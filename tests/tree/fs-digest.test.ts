import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { sha256, type Sha256Digest } from "../../src/core/index.ts";
import { frameEntry, frameTree, fsIdentity } from "../../src/tree/fs-digest.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { assertCode } from "../helpers/errors.ts";

const D = (path: string, extra: Partial<FsEntry> = {}): FsEntry => ({ type: "dir", path, mode: 0o755, uid: 0, gid: 0, mtime: 0, ...extra }) as FsEntry;
const F = (path: string, data: string, extra: Partial<FsEntry> = {}): FsEntry =>
  ({ type: "file", path, mode: 0o644, uid: 0, gid: 0, mtime: 0, size: Buffer.byteLength(data), sha256: sha256(data), ...extra }) as FsEntry;
const L = (path: string, target: string): FsEntry => ({ type: "symlink", path, mode: 0o777, uid: 0, gid: 0, mtime: 0, target });
const tree = (...es: FsEntry[]) => new Map(es.map((e) => [e.path, e]));

const base = [D("/"), D("/etc"), F("/etc/a", "alpha"), L("/etc/l", "a"), D("/é"), F("/é/z", "zz"), D("/Z")];

// An independent encoder of the documented framing (docs/workload.md), written from the spec text.
function oracle(entries: FsEntry[]): Sha256Digest {
  const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  const parts: Buffer[] = [Buffer.from("cairn.fs/1\0")];
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const u64 = (n: number) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(BigInt(n));
    return b;
  };
  const i64 = (n: number) => {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(n));
    return b;
  };
  const s = (t: string) => Buffer.concat([u32(Buffer.byteLength(t)), Buffer.from(t)]);
  parts.push(u64(sorted.length));
  for (const e of sorted) {
    parts.push(Buffer.from({ dir: "D", file: "F", symlink: "L" }[e.type]), s(e.path), u32(e.mode), u32(e.uid), u32(e.gid), i64(e.mtime));
    if (e.type === "file") parts.push(u64(e.size), Buffer.from(e.sha256.slice(7), "hex"));
    if (e.type === "symlink") parts.push(s(e.target));
  }
  return sha256(Buffer.concat(parts));
}

test("cairn.fs/1 equals an independent encoder of the documented framing", () => {
  assert.equal(fsIdentity(tree(...base)), oracle(base));
  assert.equal(fsIdentity(tree(...base)), sha256(Buffer.concat([Buffer.from("cairn.fs/1\0", "utf8"), frameTree(tree(...base))])));
});

test("cairn.fs/1 equals the independent encoder on random trees: every number range, non-ASCII and long names, frames across the 64 KiB hash buffer (property)", () => {
  const name = fc.oneof(fc.stringMatching(/^[a-z0-9é\u{1F600}\ue000-]{1,12}$/u), fc.constantFrom("x".repeat(255), "é".repeat(200), "\u{1F600}".repeat(100)));
  const nums = fc.record({
    mode: fc.integer({ min: 0, max: 0o7777 }),
    uid: fc.oneof(fc.constantFrom(0, 0xffffffff, 0x80000000), fc.nat()),
    gid: fc.oneof(fc.constantFrom(0, 0xffffffff, 0x80000000), fc.nat()),
    mtime: fc.oneof(fc.constantFrom(Number.MIN_SAFE_INTEGER, -1, -(2 ** 32), 2 ** 32, Number.MAX_SAFE_INTEGER), fc.integer()),
  });
  const leaf = fc.oneof(
    fc.record({ n: nums, size: fc.oneof(fc.constantFrom(0, 2 ** 32, Number.MAX_SAFE_INTEGER), fc.nat()), data: fc.string() }).map(
      ({ n, size, data }) =>
        (path: string): FsEntry => ({ type: "file", path, ...n, size, sha256: sha256(data) }),
    ),
    fc.record({ n: nums, target: fc.string({ minLength: 1 }).filter((t) => !t.includes("\0")) }).map(
      ({ n, target }) =>
        (path: string): FsEntry => ({ type: "symlink", path, ...n, target }),
    ),
  );
  fc.assert(
    fc.property(fc.uniqueArray(fc.tuple(name, leaf), { selector: ([n]) => n, maxLength: 400 }), fc.nat({ max: 3 }), (leaves, depth) => {
      const dirs: FsEntry[] = [D("/")];
      let at = "";
      for (let k = 0; k < depth; k++) dirs.push(D((at = `${at}/d${"é".repeat(k)}`)));
      const entries = [...dirs, ...leaves.map(([n, make]) => make(`${at}/${n}`))];
      assert.equal(fsIdentity(tree(...entries)), oracle(entries));
    }),
    { numRuns: 60 },
  );
});

test("entries sort by UTF-8 bytes, not UTF-16 or locale: /Z < /etc < /é", () => {
  const framed = frameTree(tree(...base)).toString("latin1");
  assert.ok(framed.indexOf("/Z") < framed.indexOf("/etc") && framed.indexOf("/etc") < framed.indexOf("/\u00c3"));
});

test("identity is independent of insertion order (property)", () => {
  fc.assert(
    fc.property(fc.shuffledSubarray(base.slice(1), { minLength: base.length - 1, maxLength: base.length - 1 }), (shuffled) => {
      assert.equal(fsIdentity(tree(D("/"), ...shuffled)), fsIdentity(tree(...base)));
    }),
  );
});

test("every covered field changes the identity", () => {
  const id = fsIdentity(tree(...base));
  const variants: FsEntry[][] = [
    [D("/"), D("/etc"), F("/etc/a", "alphA"), L("/etc/l", "a"), D("/é"), F("/é/z", "zz"), D("/Z")],
    [D("/"), D("/etc", { mode: 0o700 }), F("/etc/a", "alpha"), L("/etc/l", "a"), D("/é"), F("/é/z", "zz"), D("/Z")],
    [D("/"), D("/etc", { uid: 1 }), F("/etc/a", "alpha"), L("/etc/l", "a"), D("/é"), F("/é/z", "zz"), D("/Z")],
    [D("/"), D("/etc", { gid: 1 }), F("/etc/a", "alpha"), L("/etc/l", "a"), D("/é"), F("/é/z", "zz"), D("/Z")],
    [D("/"), D("/etc", { mtime: 1 }), F("/etc/a", "alpha"), L("/etc/l", "a"), D("/é"), F("/é/z", "zz"), D("/Z")],
    [D("/"), D("/etc"), F("/etc/a", "alpha"), L("/etc/l", "b"), D("/é"), F("/é/z", "zz"), D("/Z")],
    [D("/"), D("/etc"), F("/etc/a", "alpha"), F("/etc/l", "a"), D("/é"), F("/é/z", "zz"), D("/Z")],
    [D("/"), D("/etc"), F("/etc/a", "alpha"), L("/etc/l", "a"), D("/é"), F("/é/z", "zz")],
  ];
  const seen = new Set([id]);
  for (const v of variants) {
    const other = fsIdentity(tree(...v));
    assert.ok(!seen.has(other), "a changed field must change the identity");
    seen.add(other);
  }
});

test("length prefixes keep path/target boundaries unambiguous", () => {
  assert.notDeepEqual(frameEntry(L("/ab", "c")), frameEntry(L("/a", "bc")));
  assert.notEqual(fsIdentity(tree(D("/"), L("/ab", "c"))), fsIdentity(tree(D("/"), L("/a", "bc"))));
});

test("malformed trees are refused: missing root, missing parent, non-canonical path, key mismatch", () => {
  assertCode(() => fsIdentity(tree(D("/etc"))), "WORKLOAD_MISMATCH");
  assertCode(() => fsIdentity(tree(D("/"), F("/etc/a", "x"))), "WORKLOAD_MISMATCH");
  assertCode(() => fsIdentity(tree(D("/"), D("/a/"))), "WORKLOAD_MISMATCH");
  assertCode(() => fsIdentity(tree(D("/"), D("/a/../b"))), "WORKLOAD_MISMATCH");
  assertCode(
    () =>
      fsIdentity(
        new Map([
          ["/", D("/")],
          ["/x", D("/y")],
        ]),
      ),
    "WORKLOAD_MISMATCH",
  );
  assertCode(() => fsIdentity(tree(D("/"), F("/a", "x"), F("/a/b", "y"))), "WORKLOAD_MISMATCH");
  // control: a well-formed tree passes
  assert.match(fsIdentity(tree(D("/"), D("/a"), F("/a/b", "y"))), /^sha256:/);
});
