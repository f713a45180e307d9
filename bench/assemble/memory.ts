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
 * that reports its own peak RSS (`process.resourceUsage().maxRSS`):
 *   assemble   `cairn workload assemble` of the spec (read, stage, apply, pack, derive, lock)
 *   verify     `cairn workload verify` of the lock it wrote (openVerifiedWorkload)
 *   image      verify, then tree manifest + erofs root disk + cpio initramfs of the tree
 *   umoci      `umoci raw unpack` of the same layout, under /usr/bin/time -v (its maximum resident set)
 * Bytes per entry is the least-squares slope of peak RSS over tree entries
 * across the three many-file sizes; the base is its intercept (the peak at
 * zero entries). Goals: slope ≤ 600 B/entry, ≤ 300 MB at 200,000 entries.
 *
 *   nice node --import tsx bench/assemble/memory.ts [--sizes 20000,80000,200000] [--keep]
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
const SIZES = (arg("--sizes") ?? "20000,80000,200000").split(",").map(Number);
const work = mkdtempSync(join(tmpdir(), "cairn-bench-memory-"));
const child = join(import.meta.dirname, "memory-child.mjs");
const MB = 1e6;
const STEPS = ["assemble", "verify", "image"] as const;

interface Row {
  name: string;
  entries: number;
  rss: Record<(typeof STEPS)[number] | "umoci", number>;
}

function runChild(args: string[]): { maxRssBytes: number; entries: number } {
  const out = execFileSync(process.execPath, [child, ...args], { encoding: "utf8", maxBuffer: 1 << 20, stdio: ["ignore", "pipe", "inherit"] });
  return JSON.parse(out.trim().split("\n").pop()!) as { maxRssBytes: number; entries: number };
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
  const i = runChild(["image", lock, store]);
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
const rows: Row[] = [];
try {
  for (const n of SIZES) {
    rows.push(await measure(`files-${n}`, (d) => writeManyFilesLayout(d, { count: n, bytes: (i) => Buffer.from(`file ${i}\n`) })));
  }
  const large = await measure("large-8x25MiB", (d) => writeManyFilesLayout(d, { count: 8, dirs: 1, bytes: (i) => content(25 * 1024 * 1024, 1000 + i) }));
  const cols = ["assemble", "verify", "image", "umoci"] as const;
  console.log(`\n  ${"layout".padEnd(16)} ${"entries".padStart(8)}  ${cols.map((c) => c.padStart(9)).join(" ")}   assemble/umoci  verify/umoci  image/umoci`);
  for (const r of [...rows, large]) {
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
    console.log(
      `  large-file base: assemble ${(large.rss.assemble / MB).toFixed(0)} MB vs umoci ${(large.rss.umoci / MB).toFixed(0)} MB (${(large.rss.assemble / large.rss.umoci).toFixed(1)}x)`,
    );
  }
} finally {
  if (!process.argv.includes("--keep")) rmSync(work, { recursive: true, force: true });
}
