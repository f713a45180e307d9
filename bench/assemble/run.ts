/**
 * Layer assembly, side by side with its peer and with Node's own floor, on
 * the same generated layouts in one run (issue 4, part 12):
 *
 *   cairn     readOciSource (bounded read, sha256 verify, private staging copy)
 *             + applyLayers (gunzip, strict tar gate, tar-stream, DiffID,
 *             in-memory tree) with every file's bytes written to a
 *             content-addressed directory: the whole OCI side of assemble.
 *   umoci     `umoci raw unpack` of the same layout into a fresh directory
 *             (it also verifies digests and writes every file).
 *   floor     Node's createGunzip + sha256 of the same compressed bytes:
 *             the least any verifying reader of a gzip layer must do.
 *
 * Prints medians of N runs and the ratios cairn/umoci and cairn/floor.
 *
 *   node --import tsx bench/assemble/run.ts [N] [--keep DIR]
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { Writable } from "node:stream";
import { createGunzip } from "node:zlib";
import { sha256, type Sha256Digest } from "../../src/core/index.ts";
import { applyLayers } from "../../src/workload/layers/index.ts";
import { readOciSource } from "../../src/workload/oci/index.ts";
import { STRICT_POLICY } from "../../src/workload/policy.ts";
import type { ContentSink } from "../../src/workload/tree.ts";
import { blobPath } from "../../tests/workload/fixtures/oci-writer.ts";
import { writeLargeLayout, writeSmallLayout } from "./layouts.ts";

const N = Number(process.argv[2] ?? 3);
const work = mkdtempSync(join(tmpdir(), "cairn-bench-assemble-"));
const rootless = process.getuid?.() === 0 ? [] : ["--rootless"];

/** Content-addressed file output, like a store's object directory. */
function dirSink(root: string): ContentSink {
  mkdirSync(root, { recursive: true, mode: 0o700 });
  return {
    async put(data) {
      const d = sha256(data);
      try {
        await writeFile(join(root, d.slice(7)), data, { flag: "wx", mode: 0o600 });
      } catch (e) {
        if ((e as { code?: string }).code !== "EEXIST") throw e;
      }
      return { sha256: d as Sha256Digest, size: data.length };
    },
  };
}

async function timed(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function floor(blob: string): Promise<void> {
  const h = createHash("sha256");
  await pipeline(createReadStream(blob, { highWaterMark: 1 << 20 }), createGunzip({ chunkSize: 1 << 17 }), new Writable({ write(c: Buffer, _e, cb) { h.update(c); cb(); } }));
  h.digest();
}

async function bench(name: string, write: (dir: string) => { manifestDigest: string; layers: { digest: string; size: number; tar: Buffer }[] }): Promise<void> {
  const layout = join(work, name);
  const img = write(layout);
  const expanded = img.layers.reduce((n, l) => n + l.tar.length, 0);
  const compressed = img.layers.reduce((n, l) => n + l.size, 0);
  const blob = blobPath(layout, img.layers[0]!.digest);
  for (const l of img.layers) l.tar = Buffer.alloc(0); // let the generator's copy go
  const times = { cairn: [] as number[], apply: [] as number[], umoci: [] as number[], floor: [] as number[] };
  let files = 0;
  for (let i = 0; i < N; i++) {
    const out = join(work, `${name}-run${i}`);
    times.floor.push(await timed(() => floor(blob)));
    times.cairn.push(
      await timed(async () => {
        const src = await readOciSource({ layoutDir: layout, manifestDigest: img.manifestDigest, stagingDir: join(out, "staging") });
        const t = process.hrtime.bigint();
        const r = await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: dirSink(join(out, "objects")) });
        times.apply.push(Number(process.hrtime.bigint() - t) / 1e6);
        files = r.stats.files;
      }),
    );
    times.umoci.push(await timed(() => execFileSync("umoci", ["raw", "unpack", ...rootless, "--image", `${layout}:latest`, join(out, "umoci")], { stdio: "ignore" })));
    rmSync(out, { recursive: true, force: true });
  }
  const c = median(times.cairn);
  const a = median(times.apply);
  const u = median(times.umoci);
  const f = median(times.floor);
  const mb = expanded / 1e6;
  console.log(`\n${name}: ${files} files, ${(compressed / 1e6).toFixed(1)} MB gzip → ${mb.toFixed(1)} MB tar; median of ${N}`);
  console.log(`  cairn read+stage+apply+write   ${c.toFixed(0).padStart(7)} ms  ${(mb / (c / 1000)).toFixed(0).padStart(5)} MB/s`);
  console.log(`    of which applyLayers         ${a.toFixed(0).padStart(7)} ms  ${(mb / (a / 1000)).toFixed(0).padStart(5)} MB/s`);
  console.log(`  umoci raw unpack               ${u.toFixed(0).padStart(7)} ms  ${(mb / (u / 1000)).toFixed(0).padStart(5)} MB/s`);
  console.log(`  floor: node gunzip+sha256      ${f.toFixed(0).padStart(7)} ms  ${(mb / (f / 1000)).toFixed(0).padStart(5)} MB/s`);
  console.log(`  ratio cairn/umoci ${(c / u).toFixed(2)}x (goal < 1)   cairn/floor ${(c / f).toFixed(2)}x, applyLayers/floor ${(a / f).toFixed(2)}x (goal ≤ 1.5)`);
}

try {
  execFileSync("umoci", ["--version"], { stdio: "ignore" });
} catch {
  console.error("umoci is not installed: run scripts/setup-host.sh (or apt-get install umoci)");
  process.exit(3);
}
console.log(`node ${process.version}, umoci ${execFileSync("umoci", ["--version"]).toString().trim()}, ${rootless.length ? "rootless" : "as root"}`);
try {
  await bench("large", (d) => writeLargeLayout(d));
  await bench("small", (d) => writeSmallLayout(d));
} finally {
  if (!process.argv.includes("--keep")) rmSync(work, { recursive: true, force: true });
}
