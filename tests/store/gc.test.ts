// `cairn store gc` and `cairn store du`: the roots (locks the store recorded
// while their files exist, --keep-lock, --keep-runs), what is removed and
// what stays verifiable, --drop-packs, the exclusion between gc and writers,
// and gc run concurrently with four assemblers and a verifier. Every removal
// has its control (the same store with the root kept verifies).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Store } from "../../src/store/index.ts";
import { hostTag } from "../../src/store/staging.ts";
import { collectStoreGarbage } from "../../src/vm/index.ts";
import { openVerifiedWorkload } from "../../src/workload/index.ts";
import { runCli } from "../helpers/cli.ts";
import type { ProgressEvent } from "../../src/core/index.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { assemble, binaryWorkspace, helloImage, ociWorkspace, type Workspace } from "../workload/fixtures/workspace.ts";
import { file } from "../workload/fixtures/tar-writer.ts";

const CHILD = fileURLToPath(new URL("./fixtures/gc-child.ts", import.meta.url));

/** Two OCI workloads with different layers in one store (so each has its own pack), both assembled. */
async function twoWorkloads(): Promise<{ a: Workspace; b: Workspace; store: string }> {
  const a = ociWorkspace();
  const base = helloImage();
  const bw = ociWorkspace({ ...base, layers: [...base.layers, { entries: [file("etc/extra", "only in b\n", { mode: 0o644, mtime: 1700000000 })] }] });
  const b = { ...bw, storeDir: a.storeDir };
  await assemble(a);
  await assemble(b);
  return { a, b, store: a.storeDir };
}

const files = (store: string, area: string) => readdirSync(join(store, area, "sha256")).length;

test("gc removes exactly what a deleted lock alone needed; the kept lock verifies; a dry run removes nothing", async () => {
  const { a, b, store } = await twoWorkloads();
  assert.equal(files(store, "packs"), 2);
  const before = { objects: files(store, "objects"), derived: files(store, "derived") };
  // control: with both locks present nothing is garbage
  const none = collectStoreGarbage({ storeDir: store, cwd: a.dir });
  assert.equal(none.freedBytes, 0);
  assert.equal(none.roots.kept, 2);
  rmSync(b.lockPath);
  const dry = collectStoreGarbage({ storeDir: store, cwd: a.dir, dryRun: true });
  assert.ok(dry.freedBytes > 0);
  assert.equal(dry.removed.packs.files, 1);
  assert.equal(dry.removed.derived.files, 1);
  assert.equal(files(store, "packs"), 2, "a dry run removes nothing");
  assert.equal(files(store, "objects"), before.objects);
  const r = collectStoreGarbage({ storeDir: store, cwd: a.dir });
  assert.equal(r.freedBytes, dry.freedBytes, "the dry run reported what gc then freed");
  assert.equal(r.roots.stale, 1);
  assert.equal(files(store, "packs"), 1);
  assert.equal(files(store, "derived"), before.derived - 1);
  assert.ok(files(store, "objects") < before.objects, "b's spec, documents and its extra layer are gone");
  const w = await openVerifiedWorkload(a.lockPath, store);
  assert.deepEqual(w.repaired, [], "a's pack was kept, not rebuilt");
  await assertCodeAsync(() => openVerifiedWorkload(b.lockPath, store), "IO_ERROR"); // b's lock is gone
  assert.equal(collectStoreGarbage({ storeDir: store, cwd: a.dir }).freedBytes, 0, "a second gc finds nothing");
  for (const d of [a.dir, b.dir]) rmSync(d, { recursive: true, force: true });
});

test("--keep-lock and --keep-runs keep locks the store never recorded; without them their closure is removed", async () => {
  const { a, b, store } = await twoWorkloads();
  // copies the store never recorded: a runs directory with one run, and a loose lock
  const runs = join(b.dir, "runs");
  mkdirSync(join(runs, "run-1"), { recursive: true });
  copyFileSync(b.lockPath, join(runs, "run-1", "lock.json"));
  const loose = join(b.dir, "loose.lock.json");
  copyFileSync(b.lockPath, loose);
  rmSync(b.lockPath);
  const kept = collectStoreGarbage({ storeDir: store, cwd: b.dir, keepRuns: [runs] });
  assert.equal(kept.removed.derived.files, 0);
  assert.equal(kept.removed.packs.files, 0, "the pack record of b's derived entry keeps its pack");
  const kept2 = await runCli(["store", "gc", "--store", store, "--keep-lock", loose, "--json"]);
  assert.equal(kept2.code, 0, kept2.stderr);
  assert.equal(JSON.parse(kept2.stdout).removed.derived.files, 0);
  // a bad named root is refused before anything is removed
  writeFileSync(join(b.dir, "bad.lock.json"), "{}");
  assertCode(() => collectStoreGarbage({ storeDir: store, cwd: b.dir, keepLocks: [join(b.dir, "bad.lock.json")] }), "WORKLOAD_LOCK_INVALID");
  assertCode(() => collectStoreGarbage({ storeDir: store, cwd: b.dir, keepRuns: [join(b.dir, "no-such-runs")] }), "USAGE");
  assert.equal(files(store, "derived"), 2, "refused gcs removed nothing");
  // now the copies are not named: b's closure goes, and the copies no longer verify (while a's still does)
  const gone = collectStoreGarbage({ storeDir: store, cwd: b.dir });
  assert.equal(gone.removed.derived.files, 1);
  await assertCodeAsync(() => openVerifiedWorkload(loose, store), "STORE_MISSING");
  await openVerifiedWorkload(a.lockPath, store);
  for (const d of [a.dir, b.dir]) rmSync(d, { recursive: true, force: true });
});

test("a verified lock becomes a root; --drop-packs removes packs and verify rebuilds them from the kept layers", async () => {
  const { a, b, store } = await twoWorkloads();
  const copy = join(b.dir, "copy.lock.json");
  copyFileSync(b.lockPath, copy);
  rmSync(b.lockPath);
  await openVerifiedWorkload(copy, store); // a replay's preflight verifies the run's lock: it is recorded
  assert.equal(collectStoreGarbage({ storeDir: store, cwd: b.dir }).removed.derived.files, 0);
  const dropped = collectStoreGarbage({ storeDir: store, cwd: b.dir, dropPacks: true });
  assert.equal(dropped.removed.packs.files, 2);
  assert.equal(dropped.removed.objects.files, 0, "the compressed layers stay: a replay needs them");
  for (const lock of [a.lockPath, copy]) {
    const w = await openVerifiedWorkload(lock, store);
    assert.equal(w.repaired.length, 1, "the pack was rebuilt from the layers");
    assert.equal((await w.content.get([...w.tree.values()].find((e) => e.type === "file")!.sha256)).length > 0, true);
  }
  assert.equal(files(store, "packs"), 2);
  for (const d of [a.dir, b.dir]) rmSync(d, { recursive: true, force: true });
});

test("store du shows each area and what gc would free", async () => {
  const { a, b, store } = await twoWorkloads();
  rmSync(b.lockPath);
  const du = await runCli(["store", "du", "--store", store, "--json"]);
  assert.equal(du.code, 0, du.stderr);
  const j = JSON.parse(du.stdout);
  assert.equal(j.areas.packs.files, 2);
  assert.equal(j.roots, 2);
  assert.equal(j.reclaimable_bytes, collectStoreGarbage({ storeDir: store, cwd: a.dir, dryRun: true }).freedBytes);
  assert.ok(j.reclaimable_bytes > 0);
  assert.equal(files(store, "packs"), 2, "du removes nothing");
  const human = await runCli(["store", "du", "--store", store]);
  assert.match(human.stdout, /content packs/);
  for (const d of [a.dir, b.dir]) rmSync(d, { recursive: true, force: true });
});

/** Runs the child fixture; resolves with its exit code and output. */
function child(args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    const c = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { stdio: ["ignore", "pipe", "pipe"], timeout: timeoutMs, killSignal: "SIGKILL" });
    let stdout = "";
    let stderr = "";
    c.stdout.on("data", (d) => (stdout += d));
    c.stderr.on("data", (d) => (stderr += d));
    c.on("close", (code) => resolveRun({ code, stdout, stderr }));
  });
}

test("gc waits for an open writer (STORE_BUSY after its wait) and a writer waits for a running gc", { timeout: 120_000 }, async () => {
  const ws = binaryWorkspace();
  await assemble(ws);
  // an open writer in another process: gc cannot sweep
  const holder = spawn(process.execPath, ["--import", "tsx", CHILD, "hold", ws.storeDir], { stdio: ["pipe", "pipe", "inherit"], timeout: 60_000 });
  await new Promise<void>((ok) => holder.stdout.once("data", () => ok()));
  assertCode(() => collectStoreGarbage({ storeDir: ws.storeDir, cwd: ws.dir, waitMs: 300 }), "STORE_BUSY");
  assert.ok(!existsSync(join(ws.storeDir, "gc.lock")), "a gc that gave up leaves no marker");
  holder.stdin.end();
  await new Promise((ok) => holder.on("close", ok));
  // control: the writer closed, the same gc runs
  assert.equal(collectStoreGarbage({ storeDir: ws.storeDir, cwd: ws.dir, waitMs: 300 }).roots.kept, 1);
  // a gc held by a live process (a sleeper stands in for it): a writer does not open until the marker goes
  const sleeper = spawn("sleep", ["30"]);
  writeFileSync(join(ws.storeDir, "gc.lock"), `${hostTag()}-${sleeper.pid}\n`);
  const blocked = spawnSync(process.execPath, ["--import", "tsx", CHILD, "hold", ws.storeDir], { input: "", timeout: 3000, encoding: "utf8" });
  assert.equal(blocked.stdout, "", "the writer did not open while the gc marker was held");
  // control: the marker's owner dies (a gc killed mid-sweep): the writer opens
  sleeper.kill("SIGKILL");
  await new Promise((ok) => sleeper.on("close", ok));
  const opened = spawnSync(process.execPath, ["--import", "tsx", CHILD, "hold", ws.storeDir], { input: "", timeout: 30_000, encoding: "utf8" });
  assert.equal(opened.stdout, "open\n");
  rmSync(ws.dir, { recursive: true, force: true });
});

test("gc runs concurrently with four assemblers and a verifier; every lock that remains verifies", { timeout: 600_000 }, async () => {
  const bin = binaryWorkspace();
  const oci = ociWorkspace();
  const store = bin.storeDir;
  const locks = join(bin.dir, "locks");
  mkdirSync(locks);
  // garbage before the race: an OCI workload whose lock is deleted (its pack and layers are unreferenced)
  await assemble({ ...oci, storeDir: store });
  rmSync(oci.lockPath);
  const runs = await Promise.all([
    child(["assemble", bin.specPath, store, locks, "a", "6"], 300_000),
    child(["assemble", bin.specPath, store, locks, "b", "6"], 300_000),
    child(["assemble", bin.specPath, store, locks, "c", "6"], 300_000),
    child(["assemble", oci.specPath, store, locks, "oci", "4"], 300_000),
    child(["verify", locks, store, "3"], 300_000),
    child(["gc", store, "6"], 300_000),
  ]);
  for (const r of runs) assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
  assert.ok(Number(runs[5]!.stdout) > 0, "gc freed bytes while the others ran");
  // after a last gc, every lock still there verifies, and the deleted ones' closures are gone
  collectStoreGarbage({ storeDir: store, cwd: bin.dir });
  const remaining = readdirSync(locks).filter((n) => /^[a-z]+-[0-9]+\.json$/.test(n));
  assert.equal(remaining.length, 3 * 4 + 3, "each assembler deleted its odd locks but the last");
  for (const n of remaining) await openVerifiedWorkload(join(locks, n), store);
  const derived = new Store(store, { write: false });
  assert.equal(readdirSync(join(derived.root, "derived", "sha256")).length, 3 * 4 + 1, "one derived entry per distinct kept workload");
  for (const d of [bin.dir, oci.dir]) rmSync(d, { recursive: true, force: true });
});

test("gc reports progress: phase mark in recorded locks read, then sweep in files, one event a file, ending at the total", async () => {
  const { a, store } = await twoWorkloads();
  const events: ProgressEvent[] = [];
  const r = collectStoreGarbage({ storeDir: store, cwd: a.dir, dryRun: true, progress: (e) => events.push(e) });
  const mark = events.filter((e) => e.phase === "mark");
  const sweep = events.filter((e) => e.phase === "sweep");
  assert.deepEqual(
    mark.map((e) => `${e.done}/${e.total} ${e.unit}`),
    ["0/2 files", "1/2 files", "2/2 files"],
    "the two recorded locks",
  );
  const swept = Object.values(r.removed).reduce((n, t) => n + t.files, 0) + Object.values(r.kept).reduce((n, t) => n + t.files, 0);
  assert.ok(swept > 0, "control: the store has files");
  assert.equal(sweep.length, swept + 1, "a first event, then one a file");
  assert.deepEqual(
    sweep.map((e) => e.done),
    Array.from({ length: swept + 1 }, (_, i) => i),
  );
  assert.ok(sweep.every((e) => e.total === swept && e.unit === "files"));
  assert.equal(events.indexOf(sweep[0]!), mark.length, "mark, then sweep");
});
