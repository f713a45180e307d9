/**
 * Branch measurements (issue 35, "Measure (bench)"): the time to reach a
 * point N steps into a run, and run on from it, four ways in one process,
 * interleaved:
 *
 * - **record**: a fresh record from boot of the same spec without
 *   checkpoints (the peer: what a user does today to try another tail);
 * - **record + checkpoint**: the same with the checkpoint taken (its cost);
 * - **replay**: the replay from boot of that record;
 * - **branch**: `recordBranch` from the checkpoint with the parent's own
 *   remaining steps (so every mode ends at the same point, and the branch's
 *   outcome is the parent's: checked);
 * - **branch replay**: the replay of that branch.
 *
 * The workload is the probe on a disk root (every real image is one): boot,
 * `sleep MS` of guest work, then the checkpoint, then one more command.
 *
 *   node --import tsx bench/branch/bench.ts [--reps=N] [--sleep=MS]
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { recordBranch } from "../../src/vm/branch.ts";
import { recordRun, replayRun } from "../../src/vm/index.ts";
import { probePath } from "../../tests/vm/fixtures/programs.ts";
import { testKit } from "../../tests/vm/fixtures/kit.ts";

const reps = Number(process.argv.find((a) => a.startsWith("--reps="))?.slice("--reps=".length) ?? "2");
const sleepMs = Number(process.argv.find((a) => a.startsWith("--sleep="))?.slice("--sleep=".length) ?? "3000");

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const kit = await testKit();
const root = mkdtempSync(join(tmpdir(), "cairn-bench-branch-"));
copyFileSync(probePath("static"), join(root, "probe"));
const steps = [
  { action: "start" },
  { action: "write-stdin", data: `sleep ${sleepMs}\n`, after: { output: "stdout", contains: "ready" } },
  { action: "write-stdin", data: "echo mid\n", after: { output: "stdout", contains: "slept" } },
  { action: "close-stdin", after: { output: "stdout", contains: "echo mid" } },
];
const spec = (checkpoints: boolean) => ({
  schema: "cairn.workload/1",
  source: { binary: { path: "probe", user: "1000:1000" } },
  run: { root: "disk", steps, ...(checkpoints ? { checkpoints: [{ name: "n", after: { step: 2 } }] } : {}) },
});
writeFileSync(join(root, "plain.json"), JSON.stringify(spec(false)));
writeFileSync(join(root, "ck.json"), JSON.stringify(spec(true)));
writeFileSync(join(root, "tail.yaml"), 'steps:\n  - action: close-stdin\n    after: {output: stdout, contains: "echo mid"}\n');
const storeDir = join(root, "store");
const runsDir = join(root, "runs");
const common = { storeDir, runsDir, kit, cairnVersion: "bench" };

type Mode = "record" | "record + checkpoint" | "replay" | "branch" | "branch replay";
const wall = new Map<Mode, number[]>();
const qemu = new Map<Mode, number[]>();
const note = (m: Mode, w: number, q: number): void => {
  wall.set(m, [...(wall.get(m) ?? []), w]);
  qemu.set(m, [...(qemu.get(m) ?? []), q]);
};
let startBytes = 0;
let pauseSaid = "";
try {
  for (let i = 0; i < reps; i++) {
    let t = performance.now();
    const plain = await recordRun({ ...common, input: join(root, "plain.json") });
    note("record", performance.now() - t, plain.durations.qemuMs);
    t = performance.now();
    const lines: string[] = [];
    const parent = await recordRun({ ...common, input: join(root, "ck.json"), log: (l) => lines.push(l) });
    note("record + checkpoint", performance.now() - t, parent.durations.qemuMs);
    pauseSaid = lines.filter((l) => l.startsWith("checkpoint")).join("; ");
    if (parent.manifest.checkpoints?.taken.length !== 1) throw new Error(`the checkpoint was not taken: ${pauseSaid}`);
    t = performance.now();
    const rep = await replayRun({ runDir: parent.runDir, storeDir, kit });
    note("replay", performance.now() - t, rep.qemuMs);
    t = performance.now();
    const b = await recordBranch({ ...common, runDir: parent.runDir, checkpoint: "n", scenario: join(root, "tail.yaml") });
    note("branch", performance.now() - t, b.durations.qemuMs);
    if (b.manifest.outcome !== parent.manifest.outcome) throw new Error("the branch with the parent's own tail did not give the parent's outcome");
    startBytes = b.manifest.branch!.start.size;
    t = performance.now();
    const br = await replayRun({ runDir: b.runDir, storeDir, kit });
    note("branch replay", performance.now() - t, br.qemuMs);
    rmSync(plain.runDir, { recursive: true, force: true });
    rmSync(parent.runDir, { recursive: true, force: true });
    rmSync(b.runDir, { recursive: true, force: true });
    process.stderr.write(`rep ${i + 1}/${reps} done\n`);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
const rec = median(wall.get("record")!);
const rep = median(wall.get("replay")!);
console.log(`probe on a disk root, sleep ${sleepMs} ms of guest work before the checkpoint; ${reps} interleaved repetitions, medians`);
console.log("| mode | wall s | QEMU s | wall ÷ fresh record | wall ÷ replay from boot |");
console.log("|---|---|---|---|---|");
for (const m of ["record", "record + checkpoint", "replay", "branch", "branch replay"] as const) {
  const w = median(wall.get(m)!);
  console.log(`| ${m} | ${(w / 1000).toFixed(1)} | ${(median(qemu.get(m)!) / 1000).toFixed(1)} | ${(w / rec).toFixed(2)} | ${(w / rep).toFixed(2)} |`);
}
console.log(`branch start snapshot: ${startBytes} bytes; last record's checkpoint: ${pauseSaid}`);
