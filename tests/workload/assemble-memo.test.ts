// An assembly that writes its content pack also writes a verify memo for the
// lock it writes (src/workload/assemble.ts, derived_by: assemble), so the first
// verify or replay preflight on this machine hashes the raw closure instead of
// re-deriving it. Every negative test has its control: the same verify with the
// memo intact uses the memo.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Store } from "../../src/store/index.ts";
import { entriesInByteOrder } from "../../src/tree/index.ts";
import { assembleWorkload, openVerifiedWorkload, verifyWorkloadLock, type VerifiedWorkload } from "../../src/workload/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";
import { dir, file } from "./fixtures/tar-writer.ts";
import { binaryWorkspace, flipStoredByte, helloImage, objectPath, ociWorkspace, rawDigest, type Workspace } from "./fixtures/workspace.ts";

const opts = { skip: GCC_SKIP };

function keysDir(): string {
  return join(mkdtempSync(join(tmpdir(), "cairn-keys-")), "keys");
}

function workspace(): Workspace {
  const image = helloImage();
  return ociWorkspace({ ...image, layers: [...image.layers, { entries: [dir("data/"), file("data/a", "alpha"), file("data/b", "beta")] }] });
}

const assembleWith = (ws: Workspace, memoKeyDir: string | undefined) =>
  assembleWorkload({ specPath: ws.specPath, storeDir: ws.storeDir, lockOut: ws.lockPath, cairnVersion: "test", memoKeyDir });

async function readAll(w: VerifiedWorkload): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of w.tree.values()) if (e.type === "file") out.set(e.path, Buffer.from(await w.content.get(e.sha256)).toString("latin1"));
  return out;
}

test(
  "an assembly's memo: the first verify and preflight use it and hand out what a full verify does (control: without memoKeyDir none is written)",
  opts,
  async () => {
    const ws = workspace();
    const keys = keysDir();
    const r = await assembleWith(ws, keys);
    assert.deepEqual(r.memo, { written: true });
    const lockOnly = await verifyWorkloadLock(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
    assert.equal(lockOnly.derivation.how, "memo");
    assert.equal((lockOnly.derivation as { derivedBy: string }).derivedBy, "assemble");
    assert.equal((lockOnly.derivation as { tree: string }).tree, "hashed only");
    const fast = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
    assert.equal(fast.derivation.how, "memo");
    assert.equal((fast.derivation as { derivedBy: string }).derivedBy, "assemble");
    const full = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
    assert.equal(full.derivation.how, "re-derived");
    assert.deepEqual(full.repaired, []);
    assert.deepEqual(entriesInByteOrder(fast.tree), entriesInByteOrder(full.tree));
    assert.deepEqual(fast.launch, full.launch);
    assert.deepEqual(fast.identities, full.identities);
    assert.deepEqual(await readAll(fast), await readAll(full));
    // control: the same assembly without a key directory writes no memo
    const plain = workspace();
    assert.equal((await assembleWith(plain, undefined)).memo, undefined);
    const first = await verifyWorkloadLock(plain.lockPath, plain.storeDir, { memoKeyDir: keys });
    assert.equal(first.derivation.how, "re-derived");
    assert.equal((first.derivation as { why: string }).why, "no memo for this lock");
  },
);

test("under an assembly's memo a layer changed after the assembly is refused (control: before the change the memo is used)", opts, async () => {
  const ws = workspace();
  const keys = keysDir();
  await assembleWith(ws, keys);
  assert.equal((await verifyWorkloadLock(ws.lockPath, ws.storeDir, { memoKeyDir: keys })).derivation.how, "memo");
  flipStoredByte(objectPath(ws, rawDigest(ws, "layer", 1)), -9);
  await assertCodeAsync(() => verifyWorkloadLock(ws.lockPath, ws.storeDir, { memoKeyDir: keys }), "STORE_CORRUPT");
  await assertCodeAsync(() => openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys }), "STORE_CORRUPT");
});

test(
  "an assembly asked for a memo compares a pack already stored instead of keeping it: a corrupt one is replaced (control: without a memo it is kept)",
  opts,
  async () => {
    const keys = keysDir();
    // control: a plain assembly over a corrupt pack of the same name keeps it, and only a full verify repairs it
    const plain = workspace();
    await assembleWith(plain, undefined);
    const packOf = (ws: Workspace) => {
      const store = new Store(ws.storeDir, { write: false });
      const lock = JSON.parse(readFileSync(ws.lockPath, "utf8")) as { derived: { digest: string } };
      const pack = store.packOf(lock.derived.digest as never);
      assert.ok(pack !== undefined);
      return store.pathOf("packs", pack);
    };
    const corrupt = (ws: Workspace) => flipStoredByte(packOf(ws), 0); // same size, another byte in the first content
    corrupt(plain);
    await assembleWith(plain, undefined);
    const repaired = await openVerifiedWorkload(plain.lockPath, plain.storeDir);
    assert.equal(repaired.repaired.length, 1, "the plain assembly kept the corrupt pack");
    // asked for a memo, the assembly compares the stored pack with what it wrote and replaces it
    const ws = workspace();
    await assembleWith(ws, keys);
    corrupt(ws);
    const again = await assembleWith(ws, keys);
    assert.deepEqual(again.memo, { written: true });
    const w = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
    assert.equal(w.derivation.how, "memo");
    assert.equal((w.derivation as { packBody: string }).packBody, "unchanged");
    const contents = await readAll(w);
    assert.equal(contents.get("/data/a"), "alpha");
    assert.equal(contents.get("/data/b"), "beta");
    assert.deepEqual((await openVerifiedWorkload(ws.lockPath, ws.storeDir)).repaired, [], "the pack the memo names holds the right bytes");
  },
);

test("a memo key that cannot be used refuses the assembly before it writes a lock (control: a good key directory assembles)", opts, async () => {
  const ws = workspace();
  const keys = keysDir();
  await assembleWith(workspace(), keys); // makes the key
  writeFileSync(join(keys, "verify-memo.key"), "short");
  await assertCodeAsync(() => assembleWith(ws, keys), "IO_ERROR");
  assert.equal(existsSync(ws.lockPath), false);
  const good = keysDir();
  assert.deepEqual((await assembleWith(ws, good)).memo, { written: true });
  // a binary workload has no pack and no memo: its verify always re-derives
  const bin = binaryWorkspace();
  const b = await assembleWorkload({ specPath: bin.specPath, storeDir: bin.storeDir, lockOut: bin.lockPath, cairnVersion: "test", memoKeyDir: good });
  assert.equal(b.memo, undefined);
});
