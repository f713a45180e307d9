/**
 * Peak memory of assembly, verification and the guest image build, per tree
 * size, with umoci's beside it (issue 15, item 3). RSS depends on the
 * machine's load far less than time does (though V8's concurrent marking
 * lets the heap grow further on a busy machine: compare runs at like load).
 *
 * Inputs (generated, streamed: tests/workload/fixtures/many-files-layout.ts):
 * single-layer gzip layouts of 20,000, 80,000 and 200,000 files of a few
 * distinct bytes each (every file its own content: the worst case for the
 * content index), and a large-file layout (8 files, 200 MiB in all).
 *
 * Each step runs in a fresh child process (bench/assemble/memory-child.mjs, over dist/: `npm run build` first)
 * that reports its own peak RSS (VmHWM: getrusage's maxRSS would count this process's resident set at fork too):
 *   assemble   `cairn workload assemble` of the spec (read, stage, apply, pack, derive, lock)
 *   verify     `cairn workload verify` of the lock it wrote (openVerifiedWorkload)
 *   image      verify, then tree manifest + erofs root disk + cpio initramfs of the tree
 *   umoci      `umoci raw unpack` of the same layout, under /usr/bin/time -v (its maximum resident set)
 *   idle       (once) the modules loaded and nothing done: the part of every figure that is node and cairn's code
 * Bytes per entry is the least-squares slope of peak RSS over tree entries
 * across the three many-file sizes; the base is its intercept (the peak at
 * zero entries). Goals: slope ≤ 600 B/entry, ≤ 300 MB at 200,000 entries.
 *
 *   nice node --import tsx bench/assemble/memory.ts [--sizes 20000,80000,200000] [--large 25] [--keep]
 *
 * `--sizes none` measures no many-file layout; `--large 25,50` measures a
 * large-file layout of 8 files per size given (MiB per file): a streamed step's
 * peak must not follow the file size.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeManyFilesLayout } from "../../tests/workload/fixtures/many-files-layout.ts";
import { content } from "./layouts.ts";

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};
const list = (v: string): number[] => (v === "none" ? [] : v.split(",").map(Number));
const SIZES = list(arg("--sizes") ?? "20000,80000,200000");
const LARGE_MIB = list(arg("--large") ?? "25");
const work = mkdtempSync(join(tmpdir(), "cairn-bench-memory-"));
/** `--child` names another copy of memory-child.mjs (beside another dist/: a build of the base commit, for before/after). */
const child = arg("--child") ?? join(import.meta.dirname, "memory-child.mjs");
const MB = 1e6;
const STEPS = ["assemble", "verify", "image"] as const;

interface Row {
  name: string;
  entries: number;
  rss: Record<(typeof STEPS)[number] | "umoci", number>;
}

interface ChildReport {
  maxRssBytes: number;
  inherited: number;
  entries: number;
  atPeak: { rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number };
}

function runChild(args: string[]): ChildReport {
  const out = execFileSync(process.execPath, [child, ...args], { encoding: "utf8", maxBuffer: 1 << 20, stdio: ["ignore", "pipe", "inherit"] });
  const r = JSON.parse(out.trim().split("\n").pop()!) as ChildReport;
  const p = r.atPeak;
  const mb = (n: number) => (n / MB).toFixed(0);
  console.error(
    `    ${args[0]}: peak ${mb(r.maxRssBytes)} MB (getrusage, with the parent's at fork: ${mb(r.inherited)}); at the sampled peak rss ${mb(p.rss)}, heap ${mb(p.heapUsed)}/${mb(p.heapTotal)}, external ${mb(p.external)} (arrayBuffers ${mb(p.arrayBuffers)})`,
  );
  return r;
}

/** umoci's peak RSS, as /usr/bin/time -v reports it ("Maximum resident set size", KiB). */
function umociPeak(layout: string, out: string): number {
  const rootless = process.getuid?.() === 0 ? [] : ["--rootless"];
  const r = spawnSync("/usr/bin/time", ["-v", "umoci", "raw", "unpack", ...rootless, "--image", `${layout}:latest`, out], { encoding: "utf8" });
  const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr);
  if (r.status !== 0 || m === null) throw new Error(`umoci raw unpack failed: ${r.stderr}`);
  return Number(m[1]) * 1024;
}

async function measure(name: string, write: (dir: string) => Promise<{ manifestDigest: string }>): Promise<Row> {
  const dir = join(work, name);
  const img = await write(join(dir, "image"));
  const specPath = join(dir, "spec.json");
  writeFileSync(
    specPath,
    JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: "./image", manifest: img.manifestDigest } }, limits: { entries: 1_000_000 } }),
  );
  const store = join(dir, "store");
  const lock = join(dir, "spec.lock.json");
  const a = runChild(["assemble", specPath, store, lock]);
  const v = runChild(["verify", lock, store]);
  const i = runChild(["image", lock, store, join(dir, "initramfs.img")]);
  const u = umociPeak(join(dir, "image"), join(dir, "umoci"));
  rmSync(dir, { recursive: true, force: true });
  const row = { name, entries: a.entries, rss: { assemble: a.maxRssBytes, verify: v.maxRssBytes, image: i.maxRssBytes, umoci: u } };
  console.error(`  measured ${name}: ${JSON.stringify(row)}`);
  return row;
}

/** Least-squares slope and intercept of y over x. */
function fit(xs: number[], ys: number[]): { slope: number; base: number } {
  const n = xs.length;
  const mx = xs.reduce((s, x) => s + x, 0) / n;
  const my = ys.reduce((s, y) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (let k = 0; k < n; k++) {
    num += (xs[k]! - mx) * (ys[k]! - my);
    den += (xs[k]! - mx) ** 2;
  }
  const slope = den === 0 ? 0 : num / den;
  return { slope, base: my - slope * mx };
}

console.log(`node ${process.version}, umoci ${execFileSync("umoci", ["--version"]).toString().trim()}; peak RSS in MB (10^6 bytes), each step a fresh process`);
const idle = runChild(["idle"]);
console.log(`idle (node with the modules loaded, nothing done): ${(idle.maxRssBytes / MB).toFixed(0)} MB`);
const rows: Row[] = [];
try {
  for (const n of SIZES) {
    rows.push(await measure(`files-${n}`, (d) => writeManyFilesLayout(d, { count: n, bytes: (i) => Buffer.from(`file ${i}\n`) })));
  }
  const larges: Row[] = [];
  for (const mib of LARGE_MIB) {
    larges.push(await measure(`large-8x${mib}MiB`, (d) => writeManyFilesLayout(d, { count: 8, dirs: 1, bytes: (i) => content(mib * 1024 * 1024, 1000 + i) })));
  }
  const cols = ["assemble", "verify", "image", "umoci"] as const;
  console.log(`\n  ${"layout".padEnd(16)} ${"entries".padStart(8)}  ${cols.map((c) => c.padStart(9)).join(" ")}   assemble/umoci  verify/umoci  image/umoci`);
  for (const r of [...rows, ...larges]) {
    const ratio = (k: (typeof STEPS)[number]) => `${(r.rss[k] / r.rss.umoci).toFixed(1)}x`.padStart(k === "assemble" ? 14 : 12);
    console.log(
      `  ${r.name.padEnd(16)} ${String(r.entries).padStart(8)}  ${cols.map((c) => (r.rss[c] / MB).toFixed(0).padStart(9)).join(" ")}   ${ratio("assemble")}  ${ratio("verify")} ${ratio("image")}`,
    );
  }
  if (rows.length >= 2) {
    console.log("\n  fit over the many-file sizes: bytes per entry above the base (goal ≤ 600), peak at 200,000 entries (goal ≤ 300 MB)");
    for (const c of cols) {
      const { slope, base } = fit(
        rows.map((r) => r.entries),
        rows.map((r) => r.rss[c]),
      );
      const at200k = base + slope * 200_000;
      const goals = c === "umoci" ? "(peer)" : `slope/600 ${(slope / 600).toFixed(2)}x   at 200k/300 MB ${(at200k / 300 / MB).toFixed(2)}x`;
      console.log(
        `  ${c.padEnd(9)} ${slope.toFixed(0).padStart(6)} B/entry  base ${(base / MB).toFixed(0).padStart(4)} MB  at 200k ${(at200k / MB).toFixed(0).padStart(4)} MB   ${goals}`,
      );
    }
  }
  for (const large of larges) {
    console.log(
      `  ${large.name} base: assemble ${(large.rss.assemble / MB).toFixed(0)} MB vs umoci ${(large.rss.umoci / MB).toFixed(0)} MB (${(large.rss.assemble / large.rss.umoci).toFixed(1)}x)`,
    );
  }
} finally {
  if (!process.argv.includes("--keep")) rmSync(work, { recursive: true, force: true });
}
