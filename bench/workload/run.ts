/**
 * The whole workload pipeline on the assemble bench's generated layouts
 * (~200 MB of large files; 20,000 small files), in one run, interleaved:
 *
 *   assemble   cairn assembleWorkload: bounded read, digest checks, staging,
 *              layer application, every file written to the content store,
 *              identities, derived entry, lock
 *   verify     openVerifiedWorkload: every raw object re-read, the OCI graph
 *              reparsed from the store, layers re-applied, identities compared
 *   floor      Node's createGunzip + sha256 of the same layer blob
 *   raw-sha256 sha256 of every blob of the layout (the raw closure's bytes,
 *              as stored): issue 15 item 4's floor for verify
 *
 * Prints medians, the ratios to the floor, and verify over raw-sha256.
 *
 *   node --import tsx bench/workload/run.ts [N]
 */
import { createHash } from "node:crypto";
import { createReadStream, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { assembleWorkload, openVerifiedWorkload } from "../../src/workload/index.ts";
import { writeOciLayout } from "../../tests/workload/fixtures/oci-writer.ts";
import { dir, file, type TarMember } from "../../tests/workload/fixtures/tar-writer.ts";
import { content } from "../assemble/layouts.ts";

const N = Number(process.argv[2] ?? 3);
const config = { Entrypoint: ["/bin/app"], User: "1000:1000" };
// assemble checks that the program exists in the image; these bytes are never run.
const program = (): TarMember[] => [dir("bin"), file("bin/app", "placeholder program", { mode: 0o755 })];

function large(): TarMember[] {
  const m: TarMember[] = [...program(), dir("data")];
  for (let i = 0; i < 8; i++) m.push(file(`data/blob-${i}.bin`, content(25 * 1024 * 1024, 1000 + i), { mode: 0o644, mtime: 1_700_000_000 }));
  return m;
}

function small(): TarMember[] {
  const m: TarMember[] = [...program(), dir("usr"), dir("usr/share")];
  for (let d = 0; d < 200; d++) m.push(dir(`usr/share/d${d}`, { mtime: 1_700_000_000 }));
  for (let i = 0; i < 20_000; i++)
    m.push(file(`usr/share/d${i % 200}/f${i}.txt`, content(512 + ((i * 7919) % 7680), i), { mode: 0o644, mtime: 1_700_000_000 }));
  return m;
}

async function floor(blob: string): Promise<void> {
  const h = createHash("sha256");
  await pipeline(
    createReadStream(blob),
    createGunzip(),
    new Writable({
      write: (c: Buffer, _e, cb) => {
        h.update(c);
        cb();
      },
    }),
  );
  h.digest();
}

/** sha256 of every blob in the layout, streamed (what re-reading the raw closure costs at least). */
async function rawSha256(blobsDir: string): Promise<void> {
  for (const name of readdirSync(blobsDir)) {
    const h = createHash("sha256");
    await pipeline(
      createReadStream(join(blobsDir, name), { highWaterMark: 1 << 20 }),
      new Writable({
        write: (c: Buffer, _e, cb) => {
          h.update(c);
          cb();
        },
      }),
    );
    h.digest();
  }
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

for (const [name, members] of [
  ["large", large()],
  ["small", small()],
] as const) {
  const base = mkdtempSync(join(tmpdir(), `cairn-bench-wl-${name}-`));
  const image = writeOciLayout(join(base, "image"), { layers: [{ entries: members }], config });
  const spec = join(base, "spec.json");
  writeFileSync(spec, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: "./image", manifest: image.manifestDigest } } }));
  const blob = join(base, "image", "blobs", "sha256", image.layers[0]!.digest.slice(7));
  const t = { assemble: [] as number[], verify: [] as number[], floor: [] as number[], "raw-sha256": [] as number[] };
  for (let i = 0; i < N; i++) {
    const store = join(base, `store-${i}`);
    const lock = join(base, `lock-${i}.json`);
    t.floor.push(await timed(() => floor(blob)));
    t["raw-sha256"].push(await timed(() => rawSha256(join(base, "image", "blobs", "sha256"))));
    t.assemble.push(await timed(() => assembleWorkload({ specPath: spec, storeDir: store, lockOut: lock, cairnVersion: "bench" })));
    t.verify.push(await timed(() => openVerifiedWorkload(lock, store)));
    rmSync(store, { recursive: true, force: true });
  }
  const mb = image.layers[0]!.tar.length / 1e6;
  console.log(`${name}: ${(image.layers[0]!.size / 1e6).toFixed(1)} MB gzip → ${mb.toFixed(1)} MB tar; median of ${N}`);
  for (const k of ["assemble", "verify", "floor", "raw-sha256"] as const) {
    console.log(
      `  ${k.padEnd(9)} ${median(t[k]).toFixed(0).padStart(7)} ms  ${(mb / (median(t[k]) / 1000)).toFixed(0).padStart(4)} MB/s  ${(median(t[k]) / median(t.floor)).toFixed(2)}x floor`,
    );
  }
  console.log(`  verify / raw-sha256: ${(median(t.verify) / median(t["raw-sha256"])).toFixed(2)}x (issue 15 goal: at most 1.3x)`);
  rmSync(base, { recursive: true, force: true });
}
