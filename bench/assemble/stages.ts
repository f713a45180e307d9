/**
 * Where assembly's time goes, stage by stage, on a layout `run.ts --reuse
 * DIR` left in DIR: each row adds one stage to the one before, so the
 * differences between rows are each stage's cost (issue 15 item 2: "measure,
 * don't guess"). Prints medians of N of wall, CPU (user+system), user CPU,
 * and the main thread's busy time (event-loop utilization: compare it with
 * wall to see whether the main thread or gunzip's thread is the bottleneck).
 *
 *   sha-stored      sha256 of the stored blob
 *   gunzip          Node's gunzip of it, output dropped
 *   gunzip+sha      the floor of run.ts
 *   gunzip+gate     the strict tar gate (headers, limits, DiffID sha256)
 *   read-layer      readLayer: the gate's framing and layer-reader's checks,
 *                   on the inflate thread (no sink)
 *   read-source     readOciSource alone, staging (read, sha256, private copy)
 *   apply-noop      readOciSource unstaged + applyLayers (each layer read
 *                   once on the inflate thread), a sink that drops bytes
 *   apply-hash      the same, file bytes hashed (content addresses)
 *   apply-pack      the same, file bytes into a content pack
 *
 *   node --import tsx bench/assemble/stages.ts DIR large|small [N] [stage,...]
 */
import { createHash } from "node:crypto";
import { createReadStream, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import type { ContentSink } from "../../src/tree/entries.ts";
import { blobPath } from "../../tests/workload/fixtures/oci-writer.ts";
import { oci, readLayer, STRICT_POLICY, store as storeArea, TarGate, tree } from "./compiled.ts";

const [dir, name = "large", n = "3", only] = process.argv.slice(2);
if (dir === undefined) {
  console.error("usage: stages.ts DIR large|small [N] [stage,...] (DIR as left by run.ts --reuse DIR)");
  process.exit(2);
}
const N = Number(n);
const layout = join(dir, name);
const facts = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8")) as { manifestDigest: string; layers: { digest: string }[] };
const blob = blobPath(layout, facts.layers[0]!.digest);
const work = mkdtempSync(join(tmpdir(), "cairn-bench-stages-"));
const DROP: ContentSink = { begin: () => ({ write: () => undefined, end: () => ({ sha256: "sha256:", size: 0 }) as never }) };
const budget = () => ({ expandedBytes: 0, entries: 0, compressedBytes: 0 });

async function gunzipInto(each: (c: Buffer) => void): Promise<void> {
  await pipeline(
    createReadStream(blob, { highWaterMark: 1 << 20 }),
    createGunzip({ chunkSize: 1 << 20 }),
    new Writable({
      write(c: Buffer, _e, cb) {
        each(c);
        cb();
      },
    }),
  );
}

let k = 0;
async function applied(sink: (root: string) => { sink: ContentSink; finish: () => void }): Promise<void> {
  const out = join(work, `run-${k++}`);
  mkdirSync(out);
  const s = sink(join(out, "store"));
  // as assembly reads layers: once, unstaged, re-hashed on the inflate thread (no copy: that is a write)
  const src = await oci.readOciSource({ layoutDir: layout, manifestDigest: facts.manifestDigest, stagingDir: join(out, "staging"), stageLayers: false });
  await tree.applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: s.sink, recheckStored: true });
  await src.close();
  s.finish();
  rmSync(out, { recursive: true, force: true });
}

const STAGES: Record<string, () => Promise<unknown>> = {
  "sha-stored": async () => {
    const h = createHash("sha256");
    await pipeline(
      createReadStream(blob, { highWaterMark: 1 << 20 }),
      new Writable({
        write(c: Buffer, _e, cb) {
          h.update(c);
          cb();
        },
      }),
    );
  },
  gunzip: () => gunzipInto(() => undefined),
  "gunzip+sha": () => {
    const h = createHash("sha256");
    return gunzipInto((c) => h.update(c));
  },
  "gunzip+gate": () => {
    const g = new TarGate(tree.DEFAULT_LIMITS, budget(), "/layers/0", () => undefined);
    return gunzipInto((c) => g.push(c));
  },
  "read-layer": () => readLayer({ path: blob, compression: "gzip", where: "/layers/0" }, tree.DEFAULT_LIMITS, budget(), () => undefined),
  "read-source": async () => {
    const out = join(work, `src-${k++}`);
    await oci.readOciSource({ layoutDir: layout, manifestDigest: facts.manifestDigest, stagingDir: out });
    rmSync(out, { recursive: true, force: true });
  },
  "apply-noop": () => applied(() => ({ sink: DROP, finish: () => undefined })),
  "apply-hash": () => applied(() => ({ sink: tree.HASH_ONLY_SINK, finish: () => undefined })),
  "apply-pack": () =>
    applied((root) => {
      const store = new storeArea.Store(root);
      const pack = new storeArea.PackWriter(store);
      return {
        sink: { begin: (size) => pack.begin(size) },
        finish: () => {
          pack.finish();
          store.close();
        },
      };
    }),
};

interface Sample {
  wall: number;
  cpu: number;
  user: number;
  main: number;
}
async function timed(fn: () => Promise<unknown>): Promise<Sample> {
  const e0 = performance.eventLoopUtilization();
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const u = process.cpuUsage(u0);
  return { wall, cpu: (u.user + u.system) / 1000, user: u.user / 1000, main: performance.eventLoopUtilization(e0).active };
}
const median = (xs: Sample[], key: keyof Sample): string =>
  xs
    .map((x) => x[key])
    .sort((a, b) => a - b)
    [Math.floor(xs.length / 2)]!.toFixed(0)
    .padStart(6);

const names = only === undefined ? Object.keys(STAGES) : only.split(",");
const samples = new Map<string, Sample[]>(names.map((s) => [s, []]));
try {
  for (let i = 0; i < N; i++) for (const s of names) samples.get(s)!.push(await timed(STAGES[s]!));
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(`${name}: median of ${N} (ms)`);
for (const [s, xs] of samples)
  console.log(`  ${s.padEnd(12)} wall ${median(xs, "wall")}  cpu ${median(xs, "cpu")}  user ${median(xs, "user")}  main busy ${median(xs, "main")}`);
