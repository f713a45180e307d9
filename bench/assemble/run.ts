/**
 * Layer assembly, side by side with its peer and with Node's own floor, on
 * the same generated layouts in one run (issue 4, part 12):
 *
 *   cairn     readOciSource (bounded read of the documents; layers opened,
 *             not staged) + applyLayers (each layer read once on the
 *             inflate thread: sha256 of the stored blob, its copy into
 *             staging, gunzip, DiffID; the strict tar gate and the
 *             in-memory tree on the main thread) with every file's bytes
 *             written into cairn's content store as assemble writes them,
 *             then the layer copies adopted into the store (fsync, rename):
 *             the OCI side of assemble. Timed from the compiled dist/ the CLI runs
 *             (compiled.ts; `npm run build` first).
 *   umoci     `umoci raw unpack` of the same layout into a fresh directory
 *             (it also verifies digests and writes every file).
 *   cairn, loose objects   the same, with each distinct content in its own
 *             store file (the store format before content packs), for
 *             comparison in the same run.
 *   cairn, no writes   the same with a sink that hashes file bytes, and no
 *             layer copy: nothing written (the floor writes nothing either).
 *   floor     Node's createGunzip + sha256 of the same compressed bytes:
 *             the least any verifying reader of a gzip layer must do.
 *   floor with three hashes   the floor with the hashing cairn's rules
 *             require (stored blob, DiffID, file bytes).
 *   gunzip alone   the inflate and nothing else: one gzip stream inflates
 *             on one core, so it is the serial part no reader can split.
 *             With it, the two-core estimate max(gunzip alone wall, CPU of the
 *             floor with three hashes and writes / 2): an estimate of the
 *             least wall time that work can take on two cores (measured
 *             with Node's stream gunzip, which a reader inflating on its
 *             own thread can beat a little).
 *   floor with three hashes and writes   that floor, also writing what
 *             the store must keep: a copy of the stored blob and the
 *             uncompressed bytes, each into one file, both fsynced (cairn
 *             keeps the raw layer durable and the file bytes in one pack).
 *             The floors above write nothing; this one shows what is the
 *             kernel's cost of writing and what is cairn's own.
 *
 * Each run times every variant once, in an order rotated from run to run.
 * Prints medians of N runs (wall time, and CPU time: user+system of this
 * process, zlib's worker threads included, or of the umoci child) and the
 * ratios cairn/umoci and cairn/floor. CPU time is the steadier figure on a
 * shared machine; wall time is what a user waits.
 *
 *   node --import tsx bench/assemble/run.ts [N] [--keep] [--only large|small] [--reuse DIR]
 *
 * `--reuse DIR` keeps the generated layouts in DIR and takes them from there
 * on the next run; `--only` runs one layout.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, createReadStream, existsSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { Transform, Writable } from "node:stream";
import { createGunzip } from "node:zlib";
import type { ContentSink } from "../../src/tree/entries.ts";
import { oci, STRICT_POLICY, store as storeArea, tree } from "./compiled.ts";
import { blobPath, type WrittenImage } from "../../tests/workload/fixtures/oci-writer.ts";
import { writeLargeLayout, writeSmallLayout } from "./layouts.ts";
import { gunzipOnly, twoCoreEstimate } from "../workload/floors.ts";

const { PackWriter, Store } = storeArea;
const { applyLayers, HASH_ONLY_SINK, wholeFileSink } = tree;
const { readOciSource } = oci;
type Store = InstanceType<typeof Store>;

const N = Number(process.argv[2] ?? 3);
const flag = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};
const reuse = flag("--reuse");
if (reuse !== undefined) mkdirSync(reuse, { recursive: true });
const only = flag("--only");
const work = mkdtempSync(join(tmpdir(), "cairn-bench-assemble-"));
const rootless = process.getuid?.() === 0 ? [] : ["--rootless"];

/** Hashes file bytes as a store would, writes nothing: isolates decoding from file-creation cost. */
const hashSink: ContentSink = HASH_ONLY_SINK;

type Staged = Awaited<ReturnType<typeof readOciSource>>;

/** The raw layers into the store, durable, as `cairn workload assemble` adopts them after deriving (fsync, rename). */
function adoptLayers(store: Store, src: Staged): void {
  for (const l of src.layers) store.adopt("objects", l.path, l.digest, l.size);
}

/**
 * File bytes into cairn's content store, exactly as `cairn workload assemble`
 * stores them (one content pack), and each layer read once as assembly reads
 * it: opened unstaged, re-hashed and copied into staging by the inflate
 * thread's one read, the copy adopted at the end.
 */
function storeSink(root: string): {
  sink: ContentSink;
  staging: string;
  copies: (src: Staged) => Staged["layers"];
  finish: (src: Staged) => Promise<void>;
} {
  const store = new Store(root);
  const pack = new PackWriter(store);
  const staging = join(store.stagingDir, "oci");
  const copy = (l: Staged["layers"][number]): string => join(staging, `layer-${l.index}.copy`);
  const fds: number[] = [];
  return {
    sink: { begin: (size) => pack.begin(size) },
    staging,
    copies: (src) =>
      src.layers.map((l) => {
        const fd = openSync(copy(l), "wx", 0o600);
        fds.push(fd);
        return { ...l, copyFd: fd };
      }),
    finish: async (src) => {
      pack.finish();
      for (const fd of fds.splice(0)) closeSync(fd);
      for (const l of src.layers) store.adopt("objects", copy(l), l.digest, l.size);
      await src.close();
      store.close();
    },
  };
}

/** The previous format, kept for comparison: one loose store object per distinct content. */
function looseSink(root: string): { sink: ContentSink; staging: string; finish: (src: Staged) => void } {
  const store = new Store(root);
  return {
    sink: wholeFileSink((_a, data) => store.put("objects", data!, { durable: false })),
    staging: join(store.stagingDir, "oci"),
    finish: (src) => {
      adoptLayers(store, src);
      store.close();
    },
  };
}

interface Sample {
  wall: number;
  cpu: number;
  /** User CPU alone: system time (page cache, write-back, reclaim) is what varies most on a shared host. */
  user: number;
}

/** User and system CPU of waited-for children (fields 16 and 17 of /proc/self/stat), in ms. */
function childCpu(): { user: number; system: number } {
  const fields = readFileSync("/proc/self/stat", "utf8")
    .replace(/^.*\) /, "")
    .split(" ");
  return { user: (Number(fields[13]) * 1000) / 100, system: (Number(fields[14]) * 1000) / 100 }; // USER_HZ is 100 on Linux
}

async function timed(fn: () => Promise<unknown> | unknown, child = false): Promise<Sample> {
  const c0 = childCpu();
  const u0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await fn();
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  if (child) {
    const c = childCpu();
    return { wall, cpu: c.user - c0.user + c.system - c0.system, user: c.user - c0.user };
  }
  const u = process.cpuUsage(u0);
  return { wall, cpu: (u.user + u.system) / 1000, user: u.user / 1000 };
}

const median = (xs: Sample[], k: keyof Sample): number => xs.map((x) => x[k]).sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function floor(blob: string): Promise<void> {
  const h = createHash("sha256");
  await pipeline(
    createReadStream(blob, { highWaterMark: 1 << 20 }),
    createGunzip({ chunkSize: 1 << 20 }),
    new Writable({
      write(c: Buffer, _e, cb) {
        h.update(c);
        cb();
      },
    }),
  );
  h.digest();
}

/**
 * The same floor with the hashing cairn's rules require: sha256 of the stored
 * blob (verify before decompressing), of the uncompressed stream (DiffID) and
 * of the file bytes (content addresses; approximated by a second pass over
 * the stream). It shows cairn's cost beyond the verification work itself.
 */
async function verifyingFloor(blob: string): Promise<void> {
  const stored = createHash("sha256");
  const diff = createHash("sha256");
  const content = createHash("sha256");
  const counted = new Transform({
    transform(c: Buffer, _e, cb) {
      stored.update(c);
      cb(null, c);
    },
  });
  await pipeline(
    createReadStream(blob, { highWaterMark: 1 << 20 }),
    counted,
    createGunzip({ chunkSize: 1 << 20 }),
    new Writable({
      write(c: Buffer, _e, cb) {
        diff.update(c);
        content.update(c);
        cb();
      },
    }),
  );
  stored.digest();
  diff.digest();
  content.digest();
}

/** verifyingFloor, also writing the stored blob's copy and the uncompressed bytes to files under `dir` and fsyncing both. */
async function writingFloor(blob: string, dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const stored = createHash("sha256");
  const diff = createHash("sha256");
  const content = createHash("sha256");
  const copy = openSync(join(dir, "layer"), "wx", 0o600);
  const unpacked = openSync(join(dir, "pack"), "wx", 0o600);
  const written = (fd: number, c: Buffer): void => {
    for (let at = 0; at < c.length; ) at += writeSync(fd, c, at);
  };
  try {
    await pipeline(
      createReadStream(blob, { highWaterMark: 1 << 20 }),
      new Transform({
        transform(c: Buffer, _e, cb) {
          stored.update(c);
          written(copy, c);
          cb(null, c);
        },
      }),
      createGunzip({ chunkSize: 1 << 20 }),
      new Writable({
        write(c: Buffer, _e, cb) {
          diff.update(c);
          content.update(c);
          written(unpacked, c);
          cb();
        },
      }),
    );
    fsyncSync(copy);
    fsyncSync(unpacked);
  } finally {
    closeSync(copy);
    closeSync(unpacked);
  }
  stored.digest();
  diff.digest();
  content.digest();
}

interface LayoutFacts {
  manifestDigest: string;
  layers: { digest: string; size: number; expanded: number }[];
}

/** Writes the layout, or with `--reuse DIR` takes the one a previous run left there (the generator takes a minute per layout). */
function layoutFor(name: string, write: (dir: string) => WrittenImage): { layout: string; img: LayoutFacts } {
  const layout = join(reuse ?? work, name);
  const facts = join(reuse ?? work, `${name}.json`);
  if (reuse !== undefined && existsSync(facts)) return { layout, img: JSON.parse(readFileSync(facts, "utf8")) as LayoutFacts };
  const w = write(layout);
  const img = { manifestDigest: w.manifestDigest, layers: w.layers.map((l) => ({ digest: l.digest, size: l.size, expanded: l.tar.length })) };
  writeFileSync(facts, JSON.stringify(img));
  return { layout, img };
}

async function bench(name: string, write: (dir: string) => WrittenImage): Promise<void> {
  const { layout, img } = layoutFor(name, write);
  const expanded = img.layers.reduce((n, l) => n + l.expanded, 0);
  const compressed = img.layers.reduce((n, l) => n + l.size, 0);
  const blob = blobPath(layout, img.layers[0]!.digest);
  const times = {
    cairn: [] as Sample[],
    loose: [] as Sample[],
    decode: [] as Sample[],
    umoci: [] as Sample[],
    floor: [] as Sample[],
    gunzip: [] as Sample[],
    vfloor: [] as Sample[],
    wfloor: [] as Sample[],
  };
  let files = 0;
  for (let i = 0; i < N; i++) {
    const out = join(work, `${name}-run${i}`);
    mkdirSync(out, { recursive: true }); // umoci needs the parent of its target, and may run first in the rotation
    const variants: Array<[keyof typeof times, () => Promise<Sample>]> = [
      ["floor", () => timed(() => floor(blob))],
      ["gunzip", () => timed(() => gunzipOnly([blob]))],
      ["vfloor", () => timed(() => verifyingFloor(blob))],
      ["wfloor", () => timed(() => writingFloor(blob, join(out, "wfloor")))],
      [
        "cairn",
        () =>
          timed(async () => {
            const store = storeSink(join(out, "store"));
            const src = await readOciSource({ layoutDir: layout, manifestDigest: img.manifestDigest, stagingDir: store.staging, stageLayers: false });
            const r = await applyLayers({ layers: store.copies(src), policy: STRICT_POLICY, sink: store.sink, recheckStored: true });
            await store.finish(src);
            files = r.stats.files;
          }),
      ],
      [
        "loose",
        () =>
          timed(async () => {
            const store = looseSink(join(out, "store3"));
            const src = await readOciSource({ layoutDir: layout, manifestDigest: img.manifestDigest, stagingDir: store.staging });
            await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: store.sink });
            store.finish(src);
          }),
      ],
      [
        "decode",
        () =>
          timed(async () => {
            // read as assembly reads it (once, unstaged, re-hashed), but no copy and no pack: nothing written
            const src = await readOciSource({ layoutDir: layout, manifestDigest: img.manifestDigest, stagingDir: join(out, "staging2"), stageLayers: false });
            await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: hashSink, recheckStored: true });
            await src.close();
          }),
      ],
      [
        "umoci",
        () => timed(() => execFileSync("umoci", ["raw", "unpack", ...rootless, "--image", `${layout}:latest`, join(out, "umoci")], { stdio: "ignore" }), true),
      ],
    ];
    // Rotate the order each run, and write back what the previous variant left dirty before the next starts
    // (untimed): umoci and the loose store leave 20,000 files in the page cache, whose writeback would
    // otherwise land in whichever sample comes next. Each variant still pays its own fsyncs.
    for (let k = 0; k < variants.length; k++) {
      const [key, run] = variants[(i + k) % variants.length]!;
      execFileSync("sync");
      times[key].push(await run());
    }
    rmSync(out, { recursive: true, force: true });
  }
  const mb = expanded / 1e6;
  const row = (label: string, xs: Sample[]): void => {
    const w = median(xs, "wall");
    const c = median(xs, "cpu");
    console.log(
      `  ${label.padEnd(34)} wall ${w.toFixed(0).padStart(6)} ms (${(mb / (w / 1000)).toFixed(0).padStart(4)} MB/s)   cpu ${c.toFixed(0).padStart(6)} ms (user ${median(xs, "user").toFixed(0).padStart(5)})`,
    );
  };
  console.log(`\n${name}: ${files} files, ${(compressed / 1e6).toFixed(1)} MB gzip → ${mb.toFixed(1)} MB tar; median of ${N}`);
  row("cairn read+verify+stage+apply+write", times.cairn);
  row("cairn, loose objects (old format)", times.loose);
  row("cairn, same but writing no files", times.decode);
  row("umoci raw unpack", times.umoci);
  row("floor: node gunzip+sha256", times.floor);
  row("floor with cairn's three hashes", times.vfloor);
  row("  the same, writing and fsyncing", times.wfloor);
  row("gunzip alone (the serial part)", times.gunzip);
  const r = (a: Sample[], b: Sample[], k: keyof Sample): string => (median(a, k) / median(b, k)).toFixed(2);
  console.log(
    `  cairn/umoci  wall ${r(times.cairn, times.umoci, "wall")}x  cpu ${r(times.cairn, times.umoci, "cpu")}x  user ${r(times.cairn, times.umoci, "user")}x   (issue 15 goal for the large layout: ≤ 0.5)`,
  );
  console.log(
    `  cairn/floor  wall ${r(times.cairn, times.floor, "wall")}x  cpu ${r(times.cairn, times.floor, "cpu")}x  user ${r(times.cairn, times.floor, "user")}x;  without file writes: wall ${r(times.decode, times.floor, "wall")}x  cpu ${r(times.decode, times.floor, "cpu")}x   (goal for the large layout: ≤ 1.5)`,
  );
  console.log(
    `  cairn/floor with three hashes  wall ${r(times.cairn, times.vfloor, "wall")}x  cpu ${r(times.cairn, times.vfloor, "cpu")}x  user ${r(times.cairn, times.vfloor, "user")}x   (goal for the 20,000-file layout: ≤ 1.5)`,
  );
  console.log(
    `  cairn without file writes / floor with three hashes: wall ${r(times.decode, times.vfloor, "wall")}x  cpu ${r(times.decode, times.vfloor, "cpu")}x`,
  );
  console.log(
    `  cairn / floor with three hashes and the same writes: wall ${r(times.cairn, times.wfloor, "wall")}x  cpu ${r(times.cairn, times.wfloor, "cpu")}x  user ${r(times.cairn, times.wfloor, "user")}x`,
  );
  const bound = twoCoreEstimate(median(times.gunzip, "wall"), median(times.wfloor, "cpu"));
  console.log(
    `  two-core estimate max(gunzip alone wall, writing floor cpu / 2) ${bound.toFixed(0)} ms: cairn / bound wall ${(median(times.cairn, "wall") / bound).toFixed(2)}x;  bound / umoci ${(bound / median(times.umoci, "wall")).toFixed(2)}x`,
  );
}

try {
  execFileSync("umoci", ["--version"], { stdio: "ignore" });
} catch {
  console.error("umoci is not installed: run scripts/setup-host.sh (or apt-get install umoci)");
  process.exit(3);
}
console.log(`node ${process.version}, umoci ${execFileSync("umoci", ["--version"]).toString().trim()}, ${rootless.length ? "rootless" : "as root"}`);
try {
  if (only === undefined || only === "large") await bench("large", (d) => writeLargeLayout(d));
  if (only === undefined || only === "small") await bench("small", (d) => writeSmallLayout(d));
} finally {
  if (!process.argv.includes("--keep")) rmSync(work, { recursive: true, force: true });
}
