/**
 * Streamed store reads (issue 15, item 3): `streamPacked` and `Store.stream`
 * hand a content over a MiB at a time and verify it as it passes: the same
 * bytes as the whole reads (controls), the same refusals, and STORE_CORRUPT
 * for wrong bytes once the chunks are handed over.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256 } from "../../src/core/index.ts";
import { PackWriter, readPacked, Store, streamPacked } from "../../src/store/index.ts";
import { assertCode } from "../helpers/errors.ts";

const fresh = () => new Store(join(mkdtempSync(join(tmpdir(), "cairn-stream-read-")), "store"));
const BIG = Buffer.alloc((3 << 20) + 7);
for (let i = 0; i < BIG.length; i++) BIG[i] = (i * 7 + (i >> 10)) & 0xff;
const SMALL = Buffer.from("small\n");

/** The chunks a streamed read hands over, copied (the reader reuses its buffer), and the count it returned. */
function collect(read: (chunk: (b: Buffer) => void) => number): { bytes: Buffer; count: number; chunks: number[] } {
  const parts: Buffer[] = [];
  const count = read((b) => void parts.push(Buffer.from(b)));
  return { bytes: Buffer.concat(parts), count, chunks: parts.map((p) => p.length) };
}

function flipByte(path: string, at: number): void {
  const b = readFileSync(path);
  b.writeUInt8(b.readUInt8(at) ^ 1, at);
  writeFileSync(path, b);
}

test("streamPacked hands over the bytes readPacked returns, a MiB at a time; a changed byte is STORE_CORRUPT after the chunks", () => {
  const store = fresh();
  const w = new PackWriter(store);
  for (const c of [SMALL, BIG, Buffer.alloc(0)]) w.add(c);
  const pack = w.finish();
  for (const c of [SMALL, BIG, Buffer.alloc(0)]) {
    const got = collect((chunk) => streamPacked(store, pack, sha256(c), c.length, chunk));
    assert.ok(got.bytes.equals(readPacked(store, pack, sha256(c), c.length)), "control: the same bytes as the whole read");
    assert.equal(got.count, c.length);
    assert.ok(got.chunks.every((n) => n <= 1 << 20));
  }
  assert.deepEqual(collect((chunk) => streamPacked(store, pack, sha256(BIG), BIG.length, chunk)).chunks, [1 << 20, 1 << 20, 1 << 20, 7]);
  assertCode(() => streamPacked(store, pack, sha256("absent"), 10, () => {}), "STORE_MISSING");
  assertCode(() => streamPacked(store, pack, sha256(BIG), BIG.length - 1, () => {}), "LIMIT_EXCEEDED");
  flipByte(store.pathOf("packs", pack.digest), pack.entries.get(sha256(BIG))!.offset + BIG.length - 1);
  let handed = 0;
  assertCode(() => streamPacked(store, pack, sha256(BIG), BIG.length, (b) => void (handed += b.length)), "STORE_CORRUPT");
  assert.equal(handed, BIG.length, "the refusal comes once the bytes passed: the caller must not use them before the call returns");
  assert.ok(collect((chunk) => streamPacked(store, pack, sha256(SMALL), SMALL.length, chunk)).bytes.equals(SMALL), "other contents still read");
  // a content that fits one buffer is checked whole before anything is handed over
  flipByte(store.pathOf("packs", pack.digest), pack.entries.get(sha256(SMALL))!.offset + 2);
  handed = 0;
  assertCode(() => streamPacked(store, pack, sha256(SMALL), SMALL.length, (b) => void (handed += b.length)), "STORE_CORRUPT");
  assert.equal(handed, 0, "nothing of a small content with a wrong byte reaches the caller");
});

test("Store.stream hands over a loose object as Store.read returns it; a changed object is STORE_CORRUPT, an absent one STORE_MISSING", () => {
  const store = fresh();
  const digest = store.put("objects", BIG);
  const got = collect((chunk) => store.stream("objects", digest, BIG.length, chunk));
  assert.ok(got.bytes.equals(store.read("objects", digest, BIG.length)), "control: the same bytes as the whole read");
  assert.equal(got.count, BIG.length);
  assertCode(() => store.stream("objects", sha256("absent"), 10, () => {}), "STORE_MISSING");
  assertCode(() => store.stream("objects", digest, BIG.length - 1, () => {}), "LIMIT_EXCEEDED");
  flipByte(store.pathOf("objects", digest), 5);
  assertCode(() => store.stream("objects", digest, BIG.length, () => {}), "STORE_CORRUPT");
});
