/**
 * Campaign bench (issue 34, "Measure"): a campaign of N replays (default 16)
 * of the bundled hello example, run by the local executor with 1 and 2 jobs
 * and by the Slurm executor on a throwaway single-host cluster of this
 * host's CPUs (each task asks for 1 CPU, so 2 run at once on 2 cores),
 * against a bare `cairn replay` of the same run.
 *
 *   node --import tsx bench/fleet/campaign.ts [--tasks=16] [--only=bare,local1,local2,slurm]
 *   node --import tsx bench/fleet/campaign.ts --setup=DIR            # prepare DIR only (record the run, write replay.yaml)
 *   node --import tsx bench/fleet/campaign.ts --one=MODE --setup=DIR # one campaign (or bare replay) in a fresh results directory,
 *                                                                    # for a whole-process timer; slurm needs SLURM_CONF set
 *
 * Figures: wall time of each campaign (the whole `cairn campaign run`,
 * expansion and receipt included), the time per task at its concurrency
 * (wall × concurrent / N), the overhead per task against a bare replay,
 * scaling (local 1 job / local 2 jobs; goal ≥ 1.8) and what Slurm adds per
 * task over the local executor at the same concurrency (goal < 1 s). The
 * machine is shared: each figure is printed with the load average before
 * and after it.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { generateSigningKey, writeKeyPair } from "../../src/core/index.ts";
import { PROJECT_ROOT } from "../../tests/helpers/vectors.ts";
import { TEST_KIT_DIR, testKit } from "../../tests/vm/fixtures/kit.ts";

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const TASKS = Number(arg("tasks") ?? "16");
const ONLY = (arg("only") ?? "bare,local1,local2,slurm").split(",");
const CAIRN = join(PROJECT_ROOT, "bin", "cairn.js");

function cairn(args: string[], env: NodeJS.ProcessEnv): string {
  return execFileSync(process.execPath, [CAIRN, ...args], { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
}

interface Setup {
  readonly dir: string;
  readonly run: string;
  readonly key: string;
  readonly env: NodeJS.ProcessEnv;
}

async function setup(dir: string): Promise<Setup> {
  await testKit();
  const env = { ...process.env, CAIRN_HOME: join(dir, "home"), CAIRN_KIT: TEST_KIT_DIR };
  const key = join(dir, "k.key");
  if (!existsSync(key)) {
    execFileSync("gcc", ["-static", "-no-pie", "-O2", "-o", join(dir, "hello"), join(PROJECT_ROOT, "examples", "workload", "hello.c")]);
    copyFileSync(join(PROJECT_ROOT, "examples", "workload", "hello.yaml"), join(dir, "hello.yaml"));
    writeKeyPair(join(dir, "k"), generateSigningKey());
    cairn(["run", join(dir, "hello.yaml"), "--runs", join(dir, "runs"), "--json"], env);
  }
  const run = join(dir, "runs", readdirSync(join(dir, "runs"))[0]!);
  writeFileSync(
    join(dir, "replay.yaml"),
    `schema: cairn.campaign/1\nmode: replay\nruns: [{run: ${JSON.stringify(run)}}]\nrepeat: ${TASKS}\nresources: {cpus: 1, memory-mib: 1024, time-minutes: 30}\nretries: 0\n`,
  );
  return { dir, run, key, env };
}

/** One measured thing, in a fresh results directory; returns seconds. */
function one(s: Setup, mode: string): number {
  const out = mkdtempSync(join(s.dir, `out-${mode}-`));
  rmSync(out, { recursive: true });
  const t0 = process.hrtime.bigint();
  if (mode === "bare") cairn(["replay", s.run, "--json"], s.env);
  else {
    const how = mode === "slurm" ? ["--executor", "slurm"] : ["--executor", "local", "--jobs", mode === "local1" ? "1" : "2"];
    const r = JSON.parse(cairn(["campaign", "run", join(s.dir, "replay.yaml"), ...how, "--out", out, "--key", s.key, "--json"], s.env)) as {
      verdicts: Record<string, number>;
    };
    if (r.verdicts.matched !== TASKS) throw new Error(`${mode}: ${JSON.stringify(r.verdicts)}, not ${TASKS} matched`);
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  rmSync(out, { recursive: true, force: true });
  return secs;
}

const load = (): string => loadavg()[0]!.toFixed(1);

async function main(): Promise<void> {
  const setupDir = arg("setup");
  const oneMode = arg("one");
  if (setupDir !== undefined) {
    mkdirSync(setupDir, { recursive: true });
    const s = await setup(setupDir);
    if (oneMode !== undefined) one(s, oneMode);
    return;
  }
  const s = await setup(mkdtempSync(join(tmpdir(), "cairn-bench-fleet-")));
  const rows: { what: string; secs: number; concurrent: number; loadBefore: string; loadAfter: string }[] = [];
  const measure = (what: string, concurrent: number, envExtra: NodeJS.ProcessEnv = {}) => {
    const before = load();
    const secs = one({ ...s, env: { ...s.env, ...envExtra } }, what);
    rows.push({ what, secs, concurrent, loadBefore: before, loadAfter: load() });
    console.error(`${what}: ${secs.toFixed(1)} s (load ${before} -> ${load()})`);
  };
  if (ONLY.includes("bare")) {
    measure("bare", 1);
    measure("bare", 1);
    measure("bare", 1);
  }
  if (ONLY.includes("local1")) measure("local1", 1);
  if (ONLY.includes("local2")) measure("local2", 2);
  if (ONLY.includes("slurm")) {
    const dir = mkdtempSync("/tmp/cairn-slurm-bench-");
    const line = execFileSync("bash", [join(PROJECT_ROOT, "scripts", "slurm-cluster.sh"), "start", dir], { encoding: "utf8" });
    const conf = /SLURM_CONF=(\S+)/.exec(line)?.[1];
    try {
      measure("slurm", 2, { SLURM_CONF: conf });
    } finally {
      spawnSync("bash", [join(PROJECT_ROOT, "scripts", "slurm-cluster.sh"), "stop", dir], { stdio: "inherit" });
    }
  }
  const bare = rows.filter((r) => r.what === "bare").map((r) => r.secs);
  const bareMedian = bare.length > 0 ? [...bare].sort((a, b) => a - b)[Math.floor(bare.length / 2)]! : Number.NaN;
  console.log(`campaign of ${TASKS} replays of examples/workload/hello.yaml; bare replay median ${bareMedian.toFixed(2)} s`);
  console.log("| what | wall s | concurrent | s per task at that concurrency | overhead per task vs bare replay | load 1-min before → after |");
  console.log("|---|---|---|---|---|---|");
  for (const r of rows) {
    const perTask = r.what === "bare" ? r.secs : (r.secs * r.concurrent) / TASKS;
    console.log(
      `| ${r.what} | ${r.secs.toFixed(1)} | ${r.concurrent} | ${perTask.toFixed(2)} | ${(perTask - bareMedian).toFixed(2)} | ${r.loadBefore} → ${r.loadAfter} |`,
    );
  }
  const wall = (w: string) => rows.find((r) => r.what === w)?.secs;
  const l1 = wall("local1");
  const l2 = wall("local2");
  const sl = wall("slurm");
  if (l1 !== undefined && l2 !== undefined) console.log(`scaling, local 1 job / 2 jobs: ${(l1 / l2).toFixed(2)}× (goal ≥ 1.8×)`);
  if (sl !== undefined && l2 !== undefined) console.log(`Slurm over local at 2 at once: ${(((sl - l2) * 2) / TASKS).toFixed(2)} s per task (goal < 1 s)`);
  rmSync(s.dir, { recursive: true, force: true });
}

await main();
