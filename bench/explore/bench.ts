/**
 * Exploration throughput (issue 35, "Measure (bench)": branches per minute
 * for 20 branches of the network example): `explore` of --branches
 * variations of examples/network/explore.yaml's tail from its checkpoint
 * `retrying` (network-up after the client's 1st ... Nth failed retry),
 * --jobs at once, then each branch replayed once; the parent's record from
 * boot and its replay are timed too, as the per-run cost a branch replaces.
 * The time to reach a step by branch, by replay and by fresh record is
 * bench/branch's.
 *
 *   node --import tsx bench/explore/bench.ts [--branches=20] [--jobs=2]
 *
 * Everything is made at bench time (the client built with gcc -static, the
 * example copied to a temp dir) and removed at the end.
 */
import { copyFileSync, cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { explore } from "../../src/fleet/index.ts";
import { recordRun, replayRun } from "../../src/vm/index.ts";
import { PROJECT_ROOT } from "../../tests/helpers/vectors.ts";
import { testKit } from "../../tests/vm/fixtures/kit.ts";
import { buildProgramFrom } from "../../tests/workload/fixtures/static-program.ts";

const arg = (k: string) => process.argv.find((a) => a.startsWith(`--${k}=`))?.slice(k.length + 3);
const branches = Number(arg("branches") ?? "20");
const jobs = Number(arg("jobs") ?? "2");

const s = (ms: number) => (ms / 1000).toFixed(1);

const EXAMPLES = join(PROJECT_ROOT, "examples", "network");
const dir = mkdtempSync(join(tmpdir(), "cairn-bench-branch-"));
for (const f of ["explore.yaml", "explore-vary.yaml"]) copyFileSync(join(EXAMPLES, f), join(dir, f));
cpSync(join(EXAMPLES, "site"), join(dir, "site"), { recursive: true });
copyFileSync(buildProgramFrom(join(EXAMPLES, "http-client.c"), "static"), join(dir, "http-client"));
const kit = await testKit();
const storeDir = join(dir, "store");
const runsDir = join(dir, "runs");
const served = join(dir, "site");
const tail = join(dir, "tail.yaml");
writeFileSync(
  tail,
  'steps:\n  - action: network-up\n    after: {output: stdout, contains: "fetch 2 attempt 3:"}\n  - action: close-stdin\n    after: {output: stdout, contains: "echo:"}\n',
);

/** A fresh record from boot: wall ms to the checkpoint (its log line) and to the end. */
async function freshRecord(): Promise<{ toCheckpoint: number; total: number; runDir: string; qemuMs: number }> {
  const t0 = performance.now();
  let toCheckpoint = Number.NaN;
  const r = await recordRun({
    input: join(dir, "explore.yaml"),
    storeDir,
    runsDir,
    kit,
    cairnVersion: "bench",
    log: (l) => {
      if (l.startsWith("checkpoint retrying taken")) toCheckpoint = performance.now() - t0;
    },
  });
  if (r.manifest.status !== "passed") throw new Error(`the parent record ${r.manifest.status}`);
  return { toCheckpoint, total: performance.now() - t0, runDir: r.runDir, qemuMs: r.durations.qemuMs };
}

async function caseExplore(): Promise<string> {
  const parent = await freshRecord();
  let t = performance.now();
  const rp = await replayRun({ runDir: parent.runDir, storeDir, kit });
  const parentReplay = performance.now() - t;
  if (!rp.verdict.matches) throw new Error("the parent's replay did not match");
  const vary = join(dir, "vary-bench.yaml");
  const values = Array.from({ length: branches }, (_, i) => JSON.stringify(`fetch 2 attempt ${i + 1}:`)).join(", ");
  writeFileSync(
    vary,
    `steps:\n  - action: network-up\n    after: {output: stdout, contains: "x"}\n  - action: close-stdin\n    after: {output: stdout, contains: "echo:"}\nvary:\n  - set: /steps/0/after/contains\n    values: [${values}]\n`,
  );
  const t0 = performance.now();
  const r = await explore({ runDir: parent.runDir, checkpoint: "retrying", vary, storeDir, runsDir, kit, cairnVersion: "bench", served, jobs });
  const wall = performance.now() - t0;
  let matched = 0;
  t = performance.now();
  for (const b of r.branches) if (b.run_dir !== null && (await replayRun({ runDir: b.run_dir, storeDir, kit })).verdict.matches) matched++;
  const replays = performance.now() - t;
  return [
    `### explore (${branches} branches, --jobs ${jobs})`,
    "",
    "| branches | recorded | differ from parent | explore wall s | branches per minute | replays matching | s per branch replay | parent record s (to the checkpoint) | parent replay s |",
    "|---|---|---|---|---|---|---|---|---|",
    `| ${r.counts.variations} | ${r.counts.recorded} | ${r.counts.differ} | ${s(wall)} | ${((r.counts.recorded * 60_000) / wall).toFixed(1)} | ${matched} of ${r.counts.recorded} | ${s(replays / Math.max(1, r.counts.recorded))} | ${s(parent.total)} (${s(parent.toCheckpoint)}) | ${s(parentReplay)} |`,
  ].join("\n");
}

try {
  console.log(await caseExplore());
} finally {
  rmSync(dir, { recursive: true, force: true });
}
