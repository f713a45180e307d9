/**
 * Verify reads each stored layer once (claims W56, W57): unstaged, re-hashed
 * as gunzip reads it, and the stored content pack compared with the layer's
 * bytes as they stream past instead of being re-hashed afterwards. These
 * tests hold that nothing verify refused before slips through: a changed
 * layer byte that gunzip ignores, a stale or wrong pack record, a pack
 * changed under a correct record.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import type { Sha256Digest } from "../../src/core/index.ts";
import { PackWriter, Store } from "../../src/store/index.ts";
import { openVerifiedWorkload } from "../../src/workload/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";
import { assemble, objectPath, ociWorkspace, rawDigest, readLockJson } from "./fixtures/workspace.ts";

const opts = { skip: GCC_SKIP };

async function assembled() {
  const ws = ociWorkspace();
  await assemble(ws);
  const derived = (readLockJson(ws).derived as { digest: Sha256Digest }).digest;
  const store = new Store(ws.storeDir, { write: false });
  const pack = store.packOf(derived);
  assert.ok(pack !== undefined, "assembly records the pack");
  return { ws, derived, pack, packPath: store.pathOf("packs", pack) };
}

function editByte(path: string, at: number, value: (b: number) => number): void {
  const b = readFileSync(path);
  b[at] = value(b[at]!);
  writeFileSync(path, b);
}

test("a stored layer byte gunzip ignores (the gzip header's OS byte) is refused by the layer digest, read once", opts, async () => {
  const { ws } = await assembled();
  assert.deepEqual((await openVerifiedWorkload(ws.lockPath, ws.storeDir)).repaired, [], "control: intact");
  const layer = objectPath(ws, rawDigest(ws, "layer"));
  const original = readFileSync(layer);
  assert.deepEqual([...original.subarray(0, 2)], [0x1f, 0x8b], "a gzip layer");
  // byte 9 of a gzip member is the OS that wrote it: informational, so the stream still inflates to the same tar
  editByte(layer, 9, (b) => (b === 3 ? 255 : 3));
  await assertCodeAsync(() => openVerifiedWorkload(ws.lockPath, ws.storeDir), "DIGEST_MISMATCH");
  // and a byte inside the deflate data, where gunzip or the tar gate fails before the end of the blob
  writeFileSync(layer, original);
  editByte(layer, Math.floor(original.length / 2), (b) => b ^ 0x40);
  await assertCodeAsync(() => openVerifiedWorkload(ws.lockPath, ws.storeDir), "DIGEST_MISMATCH");
  writeFileSync(layer, original);
  assert.deepEqual((await openVerifiedWorkload(ws.lockPath, ws.storeDir)).repaired, [], "control: restored");
});

test("a pack changed under its correct record is rebuilt (compared while streaming), an intact one is not", opts, async () => {
  const { ws, packPath } = await assembled();
  const original = readFileSync(packPath);
  for (const at of [0, Math.floor((original.length - 12) / 2), original.length - 1]) {
    editByte(packPath, at, (b) => b ^ 1);
    const w = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
    assert.equal(w.repaired.length, 1, `a byte changed at ${at} of ${original.length}`);
    assert.ok(readFileSync(packPath).equals(original), "the rebuilt pack is the original");
    assert.deepEqual((await openVerifiedWorkload(ws.lockPath, ws.storeDir)).repaired, [], "control: the rebuilt pack verifies");
  }
});

test("a missing, stale or foreign pack record only costs the hashed check: the intact pack is accepted, a changed one rebuilt", opts, async () => {
  const { ws, derived, pack, packPath } = await assembled();
  const store = new Store(ws.storeDir);
  const record = store.pathOf("derived-packs", derived);
  // a foreign pack that exists: a record naming it makes the streamed comparison fail
  const foreign = new PackWriter(store);
  foreign.add(Buffer.from("not this workload's contents"));
  const other = foreign.finish().digest;
  store.close();
  const cases: Array<[string, () => void]> = [
    ["no record", () => rmSync(record)],
    ["a record naming a missing pack", () => writeFileSync(record, `sha256:${"0".repeat(64)}\n`)],
    ["a record naming another pack", () => writeFileSync(record, `${other}\n`)],
    ["a malformed record", () => writeFileSync(record, "not a digest")],
  ];
  const original = readFileSync(packPath);
  for (const [what, edit] of cases) {
    edit();
    assert.deepEqual((await openVerifiedWorkload(ws.lockPath, ws.storeDir)).repaired, [], `${what}: the intact pack is accepted`);
    assert.equal(readFileSync(record, "latin1"), `${pack}\n`, `${what}: verify records the pack again`);
    edit();
    editByte(packPath, 0, (b) => b ^ 1);
    assert.equal((await openVerifiedWorkload(ws.lockPath, ws.storeDir)).repaired.length, 1, `${what}: a changed pack is rebuilt`);
    assert.ok(readFileSync(packPath).equals(original));
  }
});
