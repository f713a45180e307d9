// The cairn.fs/1 framing's number ranges (src/tree/fs-digest.ts): each bound
// is refused one past it and accepted at it, and each refusal names the entry.
// Written to kill StrykerJS survivors (bench/mutation/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { sha256 } from "../../src/core/index.ts";
import { frameEntry, frameTree, fsIdentity, sortedEntries } from "../../src/tree/fs-digest.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { assertCode } from "../helpers/errors.ts";

const D = (path: string, extra: Partial<FsEntry> = {}): FsEntry => ({ type: "dir", path, mode: 0o755, uid: 0, gid: 0, mtime: 0, ...extra }) as FsEntry;
const F = (path: string, extra: Partial<FsEntry> = {}): FsEntry =>
  ({ type: "file", path, mode: 0o644, uid: 0, gid: 0, mtime: 0, size: 1, sha256: sha256("x"), ...extra }) as FsEntry;
const L = (path: string, target: string): FsEntry => ({ type: "symlink", path, mode: 0o777, uid: 0, gid: 0, mtime: 0, target });
const tree = (...es: FsEntry[]) => new Map(es.map((e) => [e.path, e]));
const U32_MAX = 0xffffffff;

test("every number is held to its frame: at the bound it frames, one past it is WORKLOAD_MISMATCH naming the entry", () => {
  const accepted: Partial<FsEntry>[] = [
    { mode: 0 },
    { mode: 0o7777 },
    { uid: U32_MAX },
    { gid: U32_MAX },
    { uid: 0, gid: 0 },
    { mtime: -1 },
    { mtime: Number.MAX_SAFE_INTEGER },
    { mtime: Number.MIN_SAFE_INTEGER },
    { size: 0 },
    { size: Number.MAX_SAFE_INTEGER },
  ];
  for (const extra of accepted) assert.match(fsIdentity(tree(D("/"), F("/f", extra))), /^sha256:/, JSON.stringify(extra));
  const refused: Partial<FsEntry>[] = [
    { mode: -1 },
    { mode: 0o10000 },
    { mode: 1.5 },
    { uid: -1 },
    { uid: U32_MAX + 1 },
    { uid: 0.5 },
    { gid: -1 },
    { gid: U32_MAX + 1 },
    { gid: 0.5 },
    { mtime: 0.5 },
    { mtime: Number.MAX_SAFE_INTEGER + 1 },
    { size: -1 },
    { size: 0.5 },
    { size: Number.MAX_SAFE_INTEGER + 1 },
  ];
  for (const extra of refused) assertCode(() => fsIdentity(tree(D("/"), F("/f", extra))), "WORKLOAD_MISMATCH", "/f");
  // The same bounds hold for directories (no size): a directory with a bad mode is refused too.
  assertCode(() => fsIdentity(tree(D("/"), D("/d", { mode: 0o10000 }))), "WORKLOAD_MISMATCH", "/d");
  assertCode(() => fsIdentity(tree(D("/", { uid: -1 }))), "WORKLOAD_MISMATCH", "/");
});

test("the root must be a directory; a parent must be a directory; each refusal names its entry", () => {
  assertCode(() => fsIdentity(tree(F("/"))), "WORKLOAD_MISMATCH", "/");
  assertCode(() => fsIdentity(new Map()), "WORKLOAD_MISMATCH", "/");
  assertCode(() => fsIdentity(tree(D("/"), L("/a", "x"), F("/a/b"))), "WORKLOAD_MISMATCH", "/a/b");
  assertCode(() => fsIdentity(tree(D("/"), F("/a/b"))), "WORKLOAD_MISMATCH", "/a/b");
  assertCode(
    () =>
      fsIdentity(
        new Map([
          ["/", D("/")],
          ["/x", D("/y")],
        ] as [string, FsEntry][]),
      ),
    "WORKLOAD_MISMATCH",
    "/x",
  );
  assertCode(() => fsIdentity(tree(D("/"), D("a"))), "WORKLOAD_MISMATCH", "a");
  assert.equal(sortedEntries(tree(D("/"), D("/a"), F("/a/b"))).length, 3);
});

test("a symlink target must be non-empty and free of NUL; a one-byte target is the control", () => {
  assert.match(fsIdentity(tree(D("/"), L("/l", "x"))), /^sha256:/);
  assertCode(() => fsIdentity(tree(D("/"), L("/l", ""))), "WORKLOAD_MISMATCH", "/l");
  assertCode(() => fsIdentity(tree(D("/"), L("/l", "a\0b"))), "WORKLOAD_MISMATCH", "/l");
});

test("a type the framing has no tag for is refused by the identity and by frameEntry, naming the entry; the three known types frame (control)", () => {
  for (const type of ["fifo", "hardlink", "toString", ""]) {
    const odd = { ...F("/f"), type } as unknown as FsEntry;
    assertCode(() => fsIdentity(tree(D("/"), odd)), "WORKLOAD_MISMATCH", "/f");
    assertCode(() => frameEntry(odd), "WORKLOAD_MISMATCH", "/f");
  }
  for (const e of [D("/d"), F("/d"), L("/d", "x")]) assert.equal(frameEntry(e)[0], { dir: 0x44, file: 0x46, symlink: 0x4c }[e.type]);
  // frameEntry holds numbers to the identity's ranges too (byte stores would wrap them silently)
  assertCode(() => frameEntry(F("/f", { mode: 0o10000 })), "WORKLOAD_MISMATCH", "/f");
  assertCode(() => frameEntry(F("/f", { uid: U32_MAX + 1 })), "WORKLOAD_MISMATCH", "/f");
  assert.equal(frameEntry(F("/f", { mode: 0o7777, uid: U32_MAX })).length > 0, true, "control: at the bounds it frames");
});

test("frameEntry writes the documented bytes for each type", () => {
  const hex = (b: Buffer) => b.toString("hex");
  const path = "00000002" + Buffer.from("/d").toString("hex");
  const nums = (mode: number) => mode.toString(16).padStart(8, "0") + "00000001" + "00000002" + "fffffffffffffffe";
  assert.equal(hex(frameEntry(D("/d", { uid: 1, gid: 2, mtime: -2 }))), `44${path}${nums(0o755)}`);
  const file = frameEntry(F("/d", { uid: 1, gid: 2, mtime: -2, size: 258 }));
  assert.equal(hex(file), `46${path}${nums(0o644)}0000000000000102${sha256("x").slice(7)}`);
  assert.equal(hex(frameEntry({ ...L("/d", "é"), uid: 1, gid: 2, mtime: -2 })), `4c${path}${nums(0o777)}00000002c3a9`);
  // The tree frame starts with the entry count as a u64.
  assert.equal(hex(frameTree(tree(D("/"), D("/d"))).subarray(0, 8)), "0000000000000002");
  assert.equal(fsIdentity(tree(D("/"))), sha256(Buffer.concat([Buffer.from("cairn.fs/1\0"), frameTree(tree(D("/")))])));
});
