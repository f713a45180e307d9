import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sha256 } from "../../src/core/index.ts";
import { inspectPack, Store } from "../../src/store/index.ts";
import { openVerifiedWorkload } from "../../src/workload/index.ts";
import { GCC_SKIP, programBytes } from "./fixtures/static-program.ts";
import { dir, file } from "./fixtures/tar-writer.ts";
import { binaryWorkspace, helloImage, ociWorkspace } from "./fixtures/workspace.ts";

const CHILD = fileURLToPath(new URL("./fixtures/assemble-child.ts", import.meta.url));

function runChild(args: string[]): {
  done: Promise<{ code: number | null; signal: string | null; out: string }>;
  firstResult: Promise<void>;
  kill: () => void;
} {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let first!: () => void;
  const firstResult = new Promise<void>((res) => (first = res));
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    first();
  });
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const done = new Promise<{ code: number | null; signal: string | null; out: string }>((res) =>
    child.on("close", (code, signal) => res({ code, signal, out })),
  );
  child.on("close", () => first());
  return { done, firstResult, kill: () => void child.kill("SIGKILL") };
}

/** Every published file in objects/, derived/ and packs/ is complete and matches its name. No stray files. */
function assertStoreWhole(storeDir: string): number {
  let n = 0;
  for (const area of ["objects", "derived"]) {
    const dir = join(storeDir, area, "sha256");
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      assert.match(name, /^[0-9a-f]{64}$/, `stray file ${area}/${name}`);
      assert.equal(sha256(readFileSync(join(dir, name))), `sha256:${name}`, `partial ${area}/${name}`);
      n++;
    }
  }
  // A content pack is named by its index (not its bytes): inspectPack checks the name and every content.
  const packs = join(storeDir, "packs", "sha256");
  if (existsSync(packs)) {
    const store = new Store(storeDir, { write: false });
    for (const name of readdirSync(packs)) {
      assert.match(name, /^[0-9a-f]{64}$/, `stray file packs/${name}`);
      inspectPack(store, `sha256:${name}`, Number.MAX_SAFE_INTEGER);
      n++;
    }
  }
  return n;
}

test("SIGKILL at random moments never leaves a published partial entry; the next writer cleans staging", { skip: GCC_SKIP, timeout: 120_000 }, async (t) => {
  // A padded executable (trailing bytes after the segments are valid ELF) makes each write take a while.
  const ws = binaryWorkspace();
  writeFileSync(join(ws.dir, "hello"), Buffer.concat([programBytes("static"), Buffer.alloc(24 * 1024 * 1024, 7)]));
  const lockBase = join(ws.dir, "crash.lock");
  const iterations = 6;
  let killedMidWrite = 0;
  for (let i = 0; i < iterations; i++) {
    const c = runChild([ws.specPath, ws.storeDir, lockBase, "loop"]);
    // Kill at a random moment inside the assembly loop (after the first one, so startup is not what gets killed).
    await c.firstResult;
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 250)));
    c.kill();
    const { signal } = await c.done;
    assert.equal(signal, "SIGKILL");
    assertStoreWhole(ws.storeDir);
    if (readdirSync(join(ws.storeDir, "staging")).length > 0) killedMidWrite++;
    // Every lock that exists is complete and verifies: the lock is published last.
    for (const name of readdirSync(ws.dir).filter((f) => /^crash\.lock\.\d+\.json$/.test(f))) {
      await openVerifiedWorkload(join(ws.dir, name), ws.storeDir);
    }
  }
  const leftovers = readdirSync(join(ws.storeDir, "staging"));
  t.diagnostic(`kills that landed mid-write (staging left behind): ${killedMidWrite} of ${iterations}`);
  // The next writer removes dead writers' staging.
  const s = new Store(ws.storeDir);
  s.close();
  assert.deepEqual(readdirSync(join(ws.storeDir, "staging")), [], `leftovers before: ${leftovers.length}`);
  const final = runChild([ws.specPath, ws.storeDir, ws.lockPath]);
  assert.equal((await final.done).code, 0);
  await openVerifiedWorkload(ws.lockPath, ws.storeDir);
});

test("SIGKILL during OCI layer application leaves no partial entry and no lock, or a complete lock; a later assembly verifies", {
  skip: GCC_SKIP,
  timeout: 120_000,
}, async (t) => {
  // Enough files that most kills land mid-application (content packs made 3,000 too quick).
  const many = Array.from({ length: 12_000 }, (_, i) => file(`data/f${i}`, `content ${i}\n`.repeat(20), { mode: 0o644 }));
  const base = helloImage();
  const ws = ociWorkspace({ ...base, layers: [...base.layers, { entries: [dir("data/"), ...many] }] });
  let midway = 0;
  for (let i = 0; i < 4; i++) {
    const c = runChild([ws.specPath, ws.storeDir, ws.lockPath, "announce"]);
    await c.firstResult;
    await new Promise((r) => setTimeout(r, 200 + Math.floor(Math.random() * 800)));
    c.kill();
    const { signal } = await c.done;
    assertStoreWhole(ws.storeDir);
    if (existsSync(ws.lockPath)) {
      // The lock was written before the kill (the child exited, or was killed while exiting):
      // the lock is published last, so it is complete and verifies.
      await openVerifiedWorkload(ws.lockPath, ws.storeDir);
      rmSync(ws.lockPath);
    } else {
      assert.equal(signal, "SIGKILL", "an assembly that was not killed leaves a lock");
      midway++;
    }
  }
  t.diagnostic(`${midway} of 4 kills landed before the lock was written`);
  const final = runChild([ws.specPath, ws.storeDir, ws.lockPath]);
  assert.equal((await final.done).code, 0);
  await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  assert.deepEqual(readdirSync(join(ws.storeDir, "staging")), [], "dead writers' staging was cleaned");
});

test("concurrent assemblers of one workload produce the same bytes and a store that verifies", { skip: GCC_SKIP, timeout: 120_000 }, async () => {
  const ws = binaryWorkspace();
  const children = Array.from({ length: 4 }, (_, i) => runChild([ws.specPath, ws.storeDir, join(ws.dir, `c${i}.lock.json`)]));
  const results = await Promise.all(children.map((c) => c.done));
  for (const r of results) assert.equal(r.code, 0, r.out);
  const ids = new Set(results.map((r) => r.out.trim()));
  assert.equal(ids.size, 1, "every assembler reports the same workload and derived entry");
  assertStoreWhole(ws.storeDir);
  for (let i = 0; i < 4; i++) await openVerifiedWorkload(join(ws.dir, `c${i}.lock.json`), ws.storeDir);
  assert.deepEqual(readdirSync(join(ws.storeDir, "staging")), []);
});

test("concurrent OCI assemblers publish one identical content pack and a store that verifies", { skip: GCC_SKIP, timeout: 120_000 }, async () => {
  const many = Array.from({ length: 2000 }, (_, i) => file(`data/f${i}`, `content ${i}\n`.repeat(10), { mode: 0o644 }));
  const base = helloImage();
  const ws = ociWorkspace({ ...base, layers: [...base.layers, { entries: [dir("data/"), ...many] }] });
  const children = Array.from({ length: 3 }, (_, i) => runChild([ws.specPath, ws.storeDir, join(ws.dir, `c${i}.lock.json`)]));
  const results = await Promise.all(children.map((c) => c.done));
  for (const r of results) assert.equal(r.code, 0, r.out);
  assert.equal(new Set(results.map((r) => r.out.trim())).size, 1, "every assembler reports the same workload and derived entry");
  assertStoreWhole(ws.storeDir);
  assert.equal(readdirSync(join(ws.storeDir, "packs", "sha256")).length, 1, "one pack: the same bytes under the same name");
  for (let i = 0; i < 3; i++) {
    const w = await openVerifiedWorkload(join(ws.dir, `c${i}.lock.json`), ws.storeDir);
    assert.equal(Buffer.from(await w.content.get(sha256("content 7\n".repeat(10)))).toString(), "content 7\n".repeat(10));
  }
  assert.deepEqual(readdirSync(join(ws.storeDir, "staging")), []);
});
