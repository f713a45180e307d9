import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sha256 } from "../../src/core/index.ts";
import { inspectPack, Store } from "../../src/store/index.ts";
import { openVerifiedWorkload } from "../../src/workload/index.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";
import { dir, file } from "./fixtures/tar-writer.ts";
import { binaryWorkspace, helloImage, ociWorkspace } from "./fixtures/workspace.ts";

const CHILD = fileURLToPath(new URL("./fixtures/assemble-child.ts", import.meta.url));

function runChild(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): {
  done: Promise<{ code: number | null; signal: string | null; out: string }>;
  paused: Promise<string | undefined>;
  kill: () => void;
} {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let out = "";
  let onPause!: (line: string | undefined) => void;
  const paused = new Promise<string | undefined>((res) => (onPause = res));
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    const line = out.split("\n").find((l) => l.startsWith("paused "));
    if (line !== undefined) onPause(line);
  });
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const done = new Promise<{ code: number | null; signal: string | null; out: string }>((res) =>
    child.on("close", (code, signal) => res({ code, signal, out })),
  );
  child.on("close", () => onPause(undefined));
  return { done, paused, kill: () => void child.kill("SIGKILL") };
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

/**
 * Kills an assembly at every publication point it reaches, one fresh store
 * per kill: the child pauses at the n-th `staged` (temporary file complete,
 * not named) or `named` (renamed, directory not fsynced) point and is killed
 * there (fault injection, tests/workload/fixtures/assemble-child.ts), for
 * n = 1, 2, ... until an assembly completes without reaching point n.
 * Returns the kills, each one mid-publication by construction.
 */
async function killAtEveryPublication(ws: { dir: string; specPath: string; lockPath: string }): Promise<{ staged: number; named: number }> {
  const kills = { staged: 0, named: 0 };
  for (const point of ["staged", "named"] as const) {
    for (let n = 1; ; n++) {
      assert.ok(n <= 64, "an assembly publishes a bounded number of files");
      const storeDir = join(ws.dir, `store-${point}-${n}`);
      const c = runChild([ws.specPath, storeDir, ws.lockPath], { CAIRN_TEST_PUBLISH_PAUSE: `${point}:${n}` });
      const line = await c.paused;
      if (line === undefined) {
        // Fewer than n publications: the assembly completed (the control) and its lock verifies.
        const r = await c.done;
        assert.equal(r.code, 0, r.out);
        await openVerifiedWorkload(ws.lockPath, storeDir);
        rmSync(ws.lockPath);
        break;
      }
      c.kill();
      const { signal } = await c.done;
      assert.equal(signal, "SIGKILL");
      const target = line.split(" ")[3]!;
      const staging = join(storeDir, "staging");
      const leftovers = readdirSync(staging).flatMap((w) => readdirSync(join(staging, w)));
      if (point === "staged") {
        // Killed with a complete temporary file and no name: the kill landed mid-publication.
        assert.equal(existsSync(target), false, `${target} not published`);
        assert.ok(leftovers.length > 0, "the killed writer's temporary file is left in its staging");
      } else {
        assert.equal(existsSync(target), true, `${target} published before the kill`);
      }
      kills[point]++;
      assertStoreWhole(storeDir);
      // The GC root is recorded before the lock is written, so no kill at any publication (the root's included)
      // leaves a lock, and never a lock that no root protects from gc.
      assert.equal(existsSync(ws.lockPath), false, "a run killed while publishing a store entry leaves no lock");
      // The next writer removes dead writers' staging, and its assembly verifies.
      new Store(storeDir).close();
      assert.deepEqual(readdirSync(staging), [], "dead writers' staging was cleaned");
      const next = runChild([ws.specPath, storeDir, ws.lockPath]);
      const r = await next.done;
      assert.equal(r.code, 0, r.out);
      await openVerifiedWorkload(ws.lockPath, storeDir);
      assertStoreWhole(storeDir);
      rmSync(ws.lockPath);
      rmSync(storeDir, { recursive: true, force: true });
    }
  }
  return kills;
}

test("SIGKILL at each store publication point of a binary assembly leaves no published partial entry and no lock; the next writer cleans staging and verifies", {
  skip: GCC_SKIP,
  timeout: 300_000,
}, async (t) => {
  const kills = await killAtEveryPublication(binaryWorkspace());
  t.diagnostic(`kills mid-publication: ${kills.staged} with the file staged, ${kills.named} just after naming`);
  assert.ok(kills.staged >= 2 && kills.named >= 2, "the executable and the derived entry are each killed mid-publication");
});

test("SIGKILL at each store publication point of an OCI assembly (layers, content pack, derived entry) leaves no partial entry and no lock; a later assembly verifies", {
  skip: GCC_SKIP,
  timeout: 300_000,
}, async (t) => {
  const many = Array.from({ length: 200 }, (_, i) => file(`data/f${i}`, `content ${i}\n`.repeat(20), { mode: 0o644 }));
  const base = helloImage();
  const ws = ociWorkspace({ ...base, layers: [...base.layers, { entries: [dir("data/"), ...many] }] });
  const kills = await killAtEveryPublication(ws);
  t.diagnostic(`kills mid-publication: ${kills.staged} with the file staged, ${kills.named} just after naming`);
  assert.ok(kills.staged >= 3 && kills.named >= 3, "raw objects, the content pack and the derived entry are each killed mid-publication");
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
