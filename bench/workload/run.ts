/**
 * The whole workload pipeline on the assemble bench's generated layouts
 * (~200 MB of large files; 20,000 small files), in one run, interleaved,
 * over the compiled dist/ the CLI runs (bench/assemble/compiled.ts):
 *
 *   assemble     cairn assembleWorkload: bounded read, digest checks,
 *                staging, layer application, every file written to the
 *                content pack, identities, derived entry, lock
 *   verify       openVerifiedWorkload: every raw object re-read, the OCI
 *                graph reparsed from the store, each layer read once
 *                (stored digest, gunzip, DiffID, contents), the tree
 *                rebuilt, identities compared, the stored pack and derived
 *                entry checked
 *   verify-memo  the same lock verified again under the memo a full verify
 *                wrote (src/workload/verify-memo.ts): every raw object
 *                hashed (the layers on the inflate thread, beside the
 *                rest), the derived entry read back and checked, the pack
 *                checked by its index (its file stat is the memo's, so its
 *                body is not hashed again); no derivation (the build
 *                digest it needs once per process is timed apart, first)
 *   verify-lock-memo  the same under verifyWorkloadLock (what `cairn
 *                workload verify` runs): the derived entry hashed, not read
 *                back, the pack checked by its stat and index; the layers
 *                hashed on the main thread
 *   (fresh processes) the CLI's memo verify, and a fresh node hashing the
 *                raw closure: node's start, module loading and code not yet
 *                optimised included on both sides
 *   raw-sha256   sha256 of every object of the raw closure as stored:
 *                issue 15 item 4's floor for verify (floors.ts)
 *   rules-floor  what re-deriving must do at least: gunzip + sha256 of the
 *                stored blob + sha256 of the tar stream + sha256 of each
 *                content, in one read (floors.ts)
 *   gunzip       the inflate alone (floors.ts): the serial part; with it,
 *                the two-core estimate max(gunzip wall, rules-floor CPU / 2),
 *                an estimate of the least a re-deriving verify can take on
 *                two cores (floors.ts says why it is not exact)
 *
 * Prints medians of wall and CPU (user+system of this process: gunzip's
 * thread-pool time included) and of the main thread's own CPU time
 * (/proc/thread-self/schedstat: what cairn's per-member code costs, apart
 * from gunzip on the thread pool, and steadier than wall on a loaded host),
 * and verify's ratios to both floors, wall to wall, CPU to CPU and main to
 * main, measured in the same run; and the load average before and after,
 * since the figures depend on it.
 *
 *   npm run build && node --import tsx bench/workload/run.ts [N] [large|small]
 *
 * (the second argument runs one layout only, the default both)
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeOciLayout } from "../../tests/workload/fixtures/oci-writer.ts";
import { dir, file, type TarMember } from "../../tests/workload/fixtures/tar-writer.ts";
import { workload } from "../assemble/compiled.ts";
import { content } from "../assemble/layouts.ts";
import { CONFIG, load, median, program, type Sample, smallLayout, timed, writeSpec } from "./common.ts";
import { gunzipOnly, rawSha256, rulesFloor, twoCoreEstimate } from "./floors.ts";

const N = Number(process.argv[2] ?? 3);
const ONLY = process.argv[3];

function large(): TarMember[] {
  const m: TarMember[] = [...program(), dir("data")];
  for (let i = 0; i < 8; i++) m.push(file(`data/blob-${i}.bin`, content(25 * 1024 * 1024, 1000 + i), { mode: 0o644, mtime: 1_700_000_000 }));
  return m;
}

const CAIRN = fileURLToPath(new URL("../../bin/cairn.js", import.meta.url));
/** A fresh node hashing each file named on its command line in 1 MiB reads (the floor's work, in its own process). */
const CLI_SHA256 = `const fs=require("fs"),c=require("crypto");const b=Buffer.allocUnsafe(1<<20);for(const p of process.argv.slice(1)){const h=c.createHash("sha256"),fd=fs.openSync(p,"r");for(let n;(n=fs.readSync(fd,b,0,b.length,null))>0;)h.update(b.subarray(0,n));fs.closeSync(fd);h.digest()}`;
const wallOf = (fn: () => void): number => {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
};

console.log(`load average before: ${load()}; N=${N}`);
const STEPS = ["assemble", "verify", "verify-memo", "verify-lock-memo", "raw-sha256", "rules-floor", "gunzip"] as const;
const keys = mkdtempSync(join(tmpdir(), "cairn-bench-keys-"));
const buildStart = performance.now();
workload.cairnBuild();
console.log(`build digest of the running cairn (once per process, before the first memo): ${(performance.now() - buildStart).toFixed(1)} ms`);
for (const [name, members] of [
  ["large", large()],
  ["small", smallLayout()],
] as const) {
  if (ONLY !== undefined && name !== ONLY) continue;
  const base = mkdtempSync(join(tmpdir(), `cairn-bench-wl-${name}-`));
  const image = writeOciLayout(join(base, "image"), { layers: [{ entries: members }], config: CONFIG });
  const spec = join(base, "spec.json");
  writeSpec(spec, image.manifestDigest);
  const t: Record<(typeof STEPS)[number], Sample[]> = {
    assemble: [],
    verify: [],
    "verify-memo": [],
    "verify-lock-memo": [],
    "raw-sha256": [],
    "rules-floor": [],
    gunzip: [],
  };
  const cli: Record<"cli-verify-memo" | "cli-raw-sha256", number[]> = { "cli-verify-memo": [], "cli-raw-sha256": [] };
  for (let i = 0; i < N; i++) {
    const store = join(base, `store-${i}`);
    const lock = join(base, `lock-${i}.json`);
    t.assemble.push(await timed(() => workload.assembleWorkload({ specPath: spec, storeDir: store, lockOut: lock, cairnVersion: "bench" })));
    // the floors read the very store files verify reads (the lock's raw closure), after assembly wrote them
    const raw = (JSON.parse(readFileSync(lock, "utf8")) as { raw: { role: string; digest: string }[] }).raw.map((r) => ({
      role: r.role,
      path: join(store, "objects", "sha256", r.digest.slice("sha256:".length)),
    }));
    const layers = raw.filter((r) => r.role === "layer").map((r) => r.path);
    t.verify.push(
      await timed(async () => {
        const w = await workload.openVerifiedWorkload(lock, store);
        if (w.repaired.length > 0) throw new Error("verify repaired the fresh store: the bench would time a rebuild");
      }),
    );
    await workload.openVerifiedWorkload(lock, store, { memoKeyDir: keys, full: true }); // writes the memo, not timed
    t["verify-memo"].push(
      await timed(async () => {
        const w = await workload.openVerifiedWorkload(lock, store, { memoKeyDir: keys });
        if (w.derivation.how !== "memo") throw new Error(`verify did not use the memo: ${JSON.stringify(w.derivation)}`);
      }),
    );
    t["verify-lock-memo"].push(
      await timed(async () => {
        const w = await workload.verifyWorkloadLock(lock, store, { memoKeyDir: keys });
        if (w.derivation.how !== "memo") throw new Error(`verify did not use the memo: ${JSON.stringify(w.derivation)}`);
      }),
    );
    // the same two in fresh processes: what one `cairn workload verify` (or a replay's preflight) costs,
    // node's start, module loading and code not yet optimised included, beside a fresh node hashing the closure
    cli["cli-verify-memo"].push(
      wallOf(() => {
        const r = spawnSync(process.execPath, [CAIRN, "workload", "verify", lock, "--store", store, "--keys", keys, "--json"], { encoding: "utf8" });
        if (r.status !== 0 || !r.stdout.includes('"derivation": "memo"')) throw new Error(`cli verify did not use the memo: ${r.stdout}${r.stderr}`);
      }),
    );
    cli["cli-raw-sha256"].push(
      wallOf(() => {
        const r = spawnSync(process.execPath, ["-e", CLI_SHA256, ...raw.map((x) => x.path)], { encoding: "utf8" });
        if (r.status !== 0) throw new Error(r.stderr);
      }),
    );
    t["raw-sha256"].push(await timed(() => rawSha256(raw.map((r) => r.path))));
    t["rules-floor"].push(await timed(() => rulesFloor(layers)));
    t.gunzip.push(await timed(() => gunzipOnly(layers)));
    rmSync(store, { recursive: true, force: true });
  }
  const mb = image.layers[0]!.tar.length / 1e6;
  console.log(`${name}: ${(image.layers[0]!.size / 1e6).toFixed(1)} MB gzip → ${mb.toFixed(1)} MB tar; median of ${N} (ms)`);
  for (const k of STEPS)
    console.log(
      `  ${k.padEnd(16)} wall ${median(t[k], "wall").toFixed(0).padStart(6)}  cpu ${median(t[k], "cpu").toFixed(0).padStart(6)}  main ${median(t[k], "main").toFixed(0).padStart(6)}`,
    );
  for (const [step, floor] of [
    ["verify", "raw-sha256"],
    ["verify", "rules-floor"],
    ["verify-memo", "raw-sha256"],
    ["verify-lock-memo", "raw-sha256"],
  ] as const) {
    const r = (k: keyof Sample): string => (median(t[step], k) / median(t[floor], k)).toFixed(2);
    console.log(
      `  ${step.padEnd(16)} / ${floor.padEnd(11)} wall ${r("wall")}x  cpu ${r("cpu")}x  main ${r("main")}x${floor === "raw-sha256" ? "  (issue 15 goal: at most 1.3x)" : ""}`,
    );
  }
  const mid = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `  fresh processes: cli verify-memo wall ${mid(cli["cli-verify-memo"]).toFixed(0)}, node sha256 of the closure wall ${mid(cli["cli-raw-sha256"]).toFixed(0)} = ${(mid(cli["cli-verify-memo"]) / mid(cli["cli-raw-sha256"])).toFixed(2)}x`,
  );
  const bound = twoCoreEstimate(median(t.gunzip, "wall"), median(t["rules-floor"], "cpu"));
  const raw = median(t["raw-sha256"], "wall");
  console.log(
    `  two-core estimate max(gunzip wall, rules-floor cpu / 2) ${bound.toFixed(0)} ms = ${(bound / raw).toFixed(2)}x raw-sha256; verify / bound wall ${(median(t.verify, "wall") / bound).toFixed(2)}x`,
  );
  rmSync(base, { recursive: true, force: true });
}
rmSync(keys, { recursive: true, force: true });
console.log(`load average after: ${load()}`);
