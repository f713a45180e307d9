/**
 * fsIdentity writes the frames end to end into one 64 KiB buffer and hashes
 * it whenever the next frame does not fit (claim W59): the digest must stay
 * the sha256 of the tag and `frameTree`, across many flushes and around a
 * frame longer than the buffer.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { sha256 } from "../../src/core/index.ts";
import type { CanonicalTree, FsEntry } from "../../src/tree/index.ts";
import { frameTree, fsIdentity } from "../../src/tree/fs-digest.ts";

const digest = sha256(Buffer.from("x"));
const root: FsEntry = { path: "/", type: "dir", mode: 0o755, uid: 0, gid: 0, mtime: 0 };
const tree = (list: readonly FsEntry[]): CanonicalTree => new Map([root, ...list].map((e) => [e.path, e]));
const framed = (t: CanonicalTree) => sha256(Buffer.concat([Buffer.from("cairn.fs/1\0", "utf8"), frameTree(t)]));
const file = (path: string, i: number): FsEntry => ({ path, type: "file", mode: 0o644, uid: i, gid: 2, mtime: -i, size: i * 4099, sha256: digest });

test("fsIdentity equals the sha256 of the tag and frameTree across buffer flushes and a frame longer than the buffer", () => {
  const many = Array.from({ length: 5000 }, (_, i) => file(`/f${String(i).padStart(5, "0")}\u00e9`, i));
  const long: FsEntry = { path: "/m", type: "symlink", mode: 0o777, uid: 0, gid: 0, mtime: 1, target: "\u20ac".repeat(40_000) };
  const cases: Array<[string, FsEntry[]]> = [
    ["the root alone", []],
    ["5,000 files", many],
    ["a 120 KB symlink target between short entries", [file("/a", 1), long, file("/z", 2)]],
    ["a long frame after 1,800 short ones", [...many.slice(0, 900), long, ...many.slice(900, 1800)]],
  ];
  for (const [what, list] of cases) assert.equal(fsIdentity(tree(list)), framed(tree(list)), what);
  assert.notEqual(fsIdentity(tree(many)), fsIdentity(tree(many.slice(1))), "control: another tree");
});
