// Verify memos (src/workload/verify-memo.ts): a second verify of an OCI lock on the
// same machine reads the tree back instead of re-deriving it, and is refused or
// re-derives exactly where a full verify would. Every negative test has its control:
// the same verify with the memo intact uses the memo.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalBytes } from "../../src/core/index.ts";
import { Store } from "../../src/store/index.ts";
import { entriesInByteOrder } from "../../src/tree/index.ts";
import {
  cairnBuild,
  loadVerifyKey,
  lockDigestOf,
  openVerifiedWorkload,
  readWorkloadLock,
  verifyWorkloadLock,
  VERIFY_MEMO_SCHEMA,
  type VerifiedWorkload,
} from "../../src/workload/index.ts";
import { readStoredDerived } from "../../src/workload/derived-read.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";
import { dir, file, symlink } from "./fixtures/tar-writer.ts";
import { assemble, flipStoredByte, helloImage, objectPath, ociWorkspace, rawDigest } from "./fixtures/workspace.ts";

const opts = { skip: GCC_SKIP };

function keysDir(): string {
  return join(mkdtempSync(join(tmpdir(), "cairn-keys-")), "keys");
}

async function assembled() {
  const image = helloImage();
  const ws = ociWorkspace({
    ...image,
    layers: [
      ...image.layers,
      { entries: [dir("data/", { mode: 0o750, uid: 7, gid: 8, mtime: 5 }), file("data/a", "alpha", { mode: 0o640 }), symlink("data/l", "a")] },
    ],
  });
  await assemble(ws);
  return ws;
}

function memoPath(ws: { storeDir: string; lockPath: string }): string {
  return new Store(ws.storeDir, { write: false }).pathOf("verified", lockDigestOf(readWorkloadLock(ws.lockPath)));
}

function sameWorkload(a: VerifiedWorkload, b: VerifiedWorkload): void {
  assert.deepEqual(entriesInByteOrder(a.tree), entriesInByteOrder(b.tree));
  assert.deepEqual(a.launch, b.launch);
  assert.deepEqual(a.identities, b.identities);
  assert.equal(a.derivedDigest, b.derivedDigest);
}

test("a second verify of an OCI lock uses the first's memo and hands out the same tree, launch and contents", opts, async () => {
  const ws = await assembled();
  const keys = keysDir();
  const full = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.deepEqual(full.derivation, { how: "re-derived", memoWritten: true, why: "no memo for this lock" });
  assert.equal(statSync(join(keys, "verify-memo.key")).mode & 0o777, 0o600);
  assert.equal(statSync(keys).mode & 0o777, 0o700);
  assert.ok(existsSync(memoPath(ws)));
  const fast = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.equal(fast.derivation.how, "memo", JSON.stringify(fast.derivation));
  assert.deepEqual(fast.repaired, []);
  sameWorkload(fast, full);
  const a = fast.tree.get("/data/a");
  assert.ok(a?.type === "file");
  assert.equal(Buffer.from(await fast.content.get(a.sha256)).toString(), "alpha");
  // --full re-derives even so, and writes the memo again
  const again = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys, full: true });
  assert.equal(again.derivation.how, "re-derived");
  sameWorkload(again, full);
  // without a key directory nothing is read or written: the verify is the full one
  const plain = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  assert.equal(plain.derivation.how, "re-derived");
});

test("under a memo a changed layer is still refused (control: the same verify before the change uses the memo)", opts, async () => {
  const ws = await assembled();
  const keys = keysDir();
  await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.equal((await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys })).derivation.how, "memo");
  flipStoredByte(objectPath(ws, rawDigest(ws, "layer", 1)), -9);
  await assertCodeAsync(() => openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys }), "STORE_CORRUPT");
  await assertCodeAsync(() => verifyWorkloadLock(ws.lockPath, ws.storeDir, { memoKeyDir: keys }), "STORE_CORRUPT");
});

test("a memo made under another key, edited, or of another build is not used: the verify re-derives", opts, async () => {
  const ws = await assembled();
  const keys = keysDir();
  await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  const good = readFileSync(memoPath(ws));
  // control
  assert.equal((await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys })).derivation.how, "memo");
  // another machine's key (a copied store): the MAC does not hold
  const other = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keysDir() });
  assert.equal(other.derivation.how, "re-derived");
  assert.match((other.derivation as { why: string }).why, /MAC/);
  // the other key's verify wrote its own memo; put ours back, then edit one field
  writeFileSync(memoPath(ws), good);
  const edited = JSON.parse(good.toString()) as Record<string, unknown>;
  edited.verified_at = "2000-01-01T00:00:00.000Z";
  writeFileSync(memoPath(ws), JSON.stringify(edited));
  const e = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.equal(e.derivation.how, "re-derived");
  assert.match((e.derivation as { why: string }).why, /MAC/);
  // a memo with a valid MAC for another build (what a changed cairn finds)
  const key = loadVerifyKey(keys);
  const body = { ...(JSON.parse(good.toString()) as Record<string, unknown>) };
  delete body.mac;
  body.build = `sha256:${"0".repeat(64)}`;
  const mac = createHmac("sha256", key).update(canonicalBytes(body)).digest("hex");
  writeFileSync(memoPath(ws), JSON.stringify({ ...body, mac }));
  const b = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.equal(b.derivation.how, "re-derived");
  assert.match((b.derivation as { why: string }).why, /another cairn build/);
  assert.equal(body.schema, VERIFY_MEMO_SCHEMA);
  assert.notEqual(cairnBuild(), body.build);
});

test("a corrupt pack under a memo is rebuilt by re-deriving, and the next verify uses the memo again", opts, async () => {
  const ws = await assembled();
  const keys = keysDir();
  const first = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  const memo = JSON.parse(readFileSync(memoPath(ws), "utf8")) as { pack: { digest: string } };
  const packFile = new Store(ws.storeDir, { write: false }).pathOf("packs", memo.pack.digest);
  chmodSync(packFile, 0o600);
  const bytes = readFileSync(packFile);
  bytes[0]! ^= 1;
  writeFileSync(packFile, bytes);
  const repaired = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.equal(repaired.derivation.how, "re-derived");
  assert.match((repaired.derivation as { why: string }).why, /pack failed its check/);
  assert.equal(repaired.repaired.length, 1);
  const after = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.equal(after.derivation.how, "memo");
  sameWorkload(after, first);
});

test("a pack whose file changed but whose bytes did not is hashed once under the memo, then trusted by its stat again", opts, async () => {
  const ws = await assembled();
  const keys = keysDir();
  await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  // control: an untouched pack is checked by its index and stat
  const before = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.deepEqual(before.derivation, {
    how: "memo",
    verifiedAt: (before.derivation as { verifiedAt: string }).verifiedAt,
    derivedBy: "verify",
    packBody: "unchanged",
    tree: "read back",
  });
  const memo = JSON.parse(readFileSync(memoPath(ws), "utf8")) as { pack: { digest: string } };
  const packFile = new Store(ws.storeDir, { write: false }).pathOf("packs", memo.pack.digest);
  chmodSync(packFile, 0o400); // the change time moves, the bytes stay
  const touched = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.equal(touched.derivation.how, "memo");
  assert.equal((touched.derivation as { packBody: string }).packBody, "hashed");
  const next = await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.equal((next.derivation as { packBody: string }).packBody, "unchanged");
});

test("a changed derived entry under a memo is refused as in a full verify", opts, async () => {
  const ws = await assembled();
  const keys = keysDir();
  const lock = readWorkloadLock(ws.lockPath);
  await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  // control: both verifies use the memo before the change
  assert.equal((await openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys })).derivation.how, "memo");
  assert.equal((await verifyWorkloadLock(ws.lockPath, ws.storeDir, { memoKeyDir: keys })).derivation.how, "memo");
  const p = objectPath(ws, lock.derived.digest, "derived");
  const bytes = readFileSync(p);
  chmodSync(p, 0o600);
  writeFileSync(p, Buffer.concat([bytes.subarray(0, bytes.length - 2), Buffer.from(" }")]));
  await assertCodeAsync(() => openVerifiedWorkload(ws.lockPath, ws.storeDir, { memoKeyDir: keys }), "STORE_CORRUPT");
  await assertCodeAsync(() => openVerifiedWorkload(ws.lockPath, ws.storeDir), "STORE_CORRUPT");
  await assertCodeAsync(() => verifyWorkloadLock(ws.lockPath, ws.storeDir, { memoKeyDir: keys }), "STORE_CORRUPT");
});

test("verifyWorkloadLock under a memo hashes the derived entry without reading the tree back; re-deriving, it counts the tree", opts, async () => {
  const ws = await assembled();
  const keys = keysDir();
  const first = await verifyWorkloadLock(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  const opened = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  assert.equal(first.derivation.how, "re-derived");
  assert.equal(first.entries, opened.tree.size);
  const fast = await verifyWorkloadLock(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.deepEqual(fast.derivation, {
    how: "memo",
    verifiedAt: (fast.derivation as { verifiedAt: string }).verifiedAt,
    derivedBy: "verify",
    packBody: "unchanged",
    tree: "hashed only",
  });
  assert.equal(fast.entries, undefined);
  assert.deepEqual(fast.identities, opened.identities);
  assert.equal(fast.derivedDigest, opened.derivedDigest);
  const memo = JSON.parse(readFileSync(memoPath(ws), "utf8")) as { pack: { digest: string } };
  const packFile = new Store(ws.storeDir, { write: false }).pathOf("packs", memo.pack.digest);
  // a pack whose stat moved is hashed in full, once
  chmodSync(packFile, 0o400);
  assert.equal(((await verifyWorkloadLock(ws.lockPath, ws.storeDir, { memoKeyDir: keys })).derivation as { packBody: string }).packBody, "hashed");
  assert.equal(((await verifyWorkloadLock(ws.lockPath, ws.storeDir, { memoKeyDir: keys })).derivation as { packBody: string }).packBody, "unchanged");
  // a pack that fails its check still makes it re-derive (and repair), memo or not
  chmodSync(packFile, 0o600);
  const bytes = readFileSync(packFile);
  bytes[bytes.length - 20]! ^= 1; // in the index
  writeFileSync(packFile, bytes);
  const repaired = await verifyWorkloadLock(ws.lockPath, ws.storeDir, { memoKeyDir: keys });
  assert.equal(repaired.derivation.how, "re-derived");
  assert.equal(repaired.repaired.length, 1);
});

test("readStoredDerived reads the stored entry strictly and recomputes the identities it names", opts, async () => {
  const ws = await assembled();
  const lock = readWorkloadLock(ws.lockPath);
  const full = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  const bytes = readFileSync(objectPath(ws, lock.derived.digest, "derived"));
  // control: the stored bytes read back to the verified tree and launch
  const read = readStoredDerived(bytes, lock);
  assert.deepEqual(entriesInByteOrder(read.tree), entriesInByteOrder(full.tree));
  assert.deepEqual(read.launch, full.launch);
  const model = JSON.parse(bytes.toString()) as { tree: Array<Record<string, unknown>>; launch: Record<string, unknown> };
  const variant = (edit: (m: typeof model) => void): Buffer => {
    const m = JSON.parse(bytes.toString()) as typeof model;
    edit(m);
    return Buffer.from(JSON.stringify(m));
  };
  const i = model.tree.findIndex((e) => e.path === "/data/a");
  assert.ok(i > 0);
  const cases: Array<[string, Buffer, RegExp]> = [
    ["a changed mode", variant((m) => void (m.tree[i]!.mode = 0o644)), /fs identity/],
    ["an extra key", variant((m) => void (m.tree[i]!.extra = 1)), /exactly the keys/],
    ["a size as text", variant((m) => void (m.tree[i]!.size = "5")), /wrong form/],
    ["an upper-case sha256", variant((m) => void (m.tree[i]!.sha256 = `sha256:${String(m.tree[i]!.sha256).slice(7).toUpperCase()}`)), /wrong form/],
    [
      "an entry's keys out of JCS order",
      variant((m) => {
        const e = m.tree[i]!;
        m.tree[i] = Object.fromEntries(Object.entries(e).reverse());
      }),
      /in that order/,
    ],
    ["an unknown type", variant((m) => void (m.tree[i]!.type = "fifo")), /exactly the keys|type cairn does not write/],
    ["entries out of order", variant((m) => void m.tree.reverse()), /byte order/],
    ["another argv", variant((m) => void (m.launch.argv = ["/bin/sh"])), /launch/],
    ["not JSON", Buffer.from("{"), /not JSON/],
  ];
  for (const [what, b, message] of cases) {
    assert.throws(
      () => readStoredDerived(b, lock),
      (e: unknown) => e instanceof Error && (e as { code?: string }).code === "WORKLOAD_MISMATCH",
      what,
    );
    assert.throws(() => readStoredDerived(b, lock), message, what);
  }
});

test("the memo key: a key that is not 32 bytes is refused, never replaced; a made key is kept", () => {
  const keys = keysDir();
  const k1 = loadVerifyKey(keys);
  assert.equal(k1.length, 32);
  assert.ok(loadVerifyKey(keys).equals(k1));
  writeFileSync(join(keys, "verify-memo.key"), "short");
  assertCode(() => loadVerifyKey(keys), "IO_ERROR");
  assert.equal(readFileSync(join(keys, "verify-memo.key"), "utf8"), "short");
});
