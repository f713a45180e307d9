// The Slurm executor (issue 34, items 2 and 5) on a throwaway single-host
// cluster started by the test (tests/fleet/slurm-cluster.ts). The tasks are
// small node scripts that publish a file, so no VM is needed: what is under
// test is the executor's use of sbatch/squeue/scontrol, its retries and its
// reports. Each test waits on events (a task's attempt file appearing, a
// job's state), never on the clock; every negative test has its control.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { slurmExecutor } from "../../src/fleet/slurm-executor.ts";
import type { ExecutorEvent, ExecutorPlan, TaskEnd } from "../../src/fleet/executor.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { slurmMissing, startSlurmCluster, type SlurmCluster } from "./slurm-cluster.ts";

const missing = slurmMissing();
const skip = needs(missing);
let cluster: SlurmCluster;
let root: string;

before(async () => {
  if (skip !== false) return;
  cluster = await startSlurmCluster();
  root = mkdtempSync(join(tmpdir(), "cairn-slurm-exec-"));
});

after(async () => {
  if (skip !== false) return;
  await cluster.stop();
  rmSync(root, { recursive: true, force: true });
});

/**
 * A task: node TASK MODE DIR ID [NOTE]. Each attempt first records itself as
 * attempts/ID.N (holding its pid), then by MODE: "publish" writes
 * results/ID (atomically, holding NOTE); "block-first" blocks on its first
 * attempt (the test kills, requeues or cancels it) and publishes on later
 * ones; "block" always blocks; "publish-block" publishes, then blocks; "fail" exits 1
 * without a result.
 */
const TASK = `
const fs = require("node:fs"), path = require("node:path");
const [mode, dir, id, note] = process.argv.slice(2);
const tries = fs.readdirSync(path.join(dir, "attempts")).filter((n) => n.startsWith(id + ".")).length + 1;
fs.writeFileSync(path.join(dir, "attempts", id + "." + tries), String(process.pid));
const publish = () => {
  const tmp = path.join(dir, "results", "." + id + ".tmp");
  fs.writeFileSync(tmp, note ?? "");
  fs.renameSync(tmp, path.join(dir, "results", id));
};
if (mode === "publish" || (mode === "block-first" && tries > 1)) publish();
else if (mode === "publish-block") { publish(); setInterval(() => {}, 1 << 30); }
else if (mode === "fail") { console.error("task " + id + " failed on purpose"); process.exit(1); }
else setInterval(() => {}, 1 << 30);
`;

interface Campaign {
  readonly dir: string;
  readonly events: ExecutorEvent[];
  plan(tasks: readonly { id: string; mode: string; note?: string }[], more?: Partial<ExecutorPlan>): ExecutorPlan;
  /** The pid of attempt `n` of task `id`, once that attempt has started (an event: its file appears). */
  attempt(id: string, n: number): Promise<number>;
  published(id: string): string | undefined;
}

function campaign(name: string): Campaign {
  const dir = join(root, name);
  mkdirSync(join(dir, "attempts"), { recursive: true });
  mkdirSync(join(dir, "results"), { recursive: true });
  const script = join(dir, "task.cjs");
  writeFileSync(script, TASK);
  const events: ExecutorEvent[] = [];
  return {
    dir,
    events,
    plan: (tasks, more = {}) => ({
      campaignDir: dir,
      tasks: tasks.map((t) => ({
        id: t.id,
        argv: [process.execPath, script, t.mode, dir, t.id, ...(t.note !== undefined ? [t.note] : [])],
        published: () => existsSync(join(dir, "results", t.id)),
      })),
      resources: { cpus: 1, memoryMiB: 100, timeMinutes: 10 },
      retries: 1,
      onEvent: (e) => events.push(e),
      ...more,
    }),
    attempt: async (id, n) => {
      const f = join(dir, "attempts", `${id}.${n}`);
      await cluster.until(`attempt ${n} of ${id}`, () => existsSync(f) && readFileSync(f, "utf8") !== "");
      return Number(readFileSync(f, "utf8"));
    },
    published: (id) => (existsSync(join(dir, "results", id)) ? readFileSync(join(dir, "results", id), "utf8") : undefined),
  };
}

/** The Slurm job (ARRAYID_INDEX) the executor said task `id` started as. */
async function jobOf(c: Campaign, id: string): Promise<string> {
  await cluster.until(`a start event for ${id}`, () => c.events.some((e) => e.kind === "started" && e.task === id));
  const e = c.events.find((e) => e.kind === "started" && e.task === id)!;
  const m = /Slurm job ([0-9]+_[0-9]+)/.exec(e.detail ?? "");
  assert.ok(m !== null, `start event names the Slurm job: ${e.detail}`);
  return m[1]!;
}

function endOf(ends: readonly TaskEnd[], id: string): TaskEnd {
  const e = ends.find((x) => x.task === id);
  assert.ok(e !== undefined, `an end for ${id}`);
  return e;
}

const exec = () => slurmExecutor({ env: cluster.env, limits: { pollMs: 100 } });

test("N tasks run as one job array and publish; each argv reaches its task byte for byte", { skip, timeout: 300_000 }, async () => {
  const c = campaign("four");
  const hostile = `it's "$HOME" \`id\` \\ ;\n* ${"é"}`;
  const tasks = [0, 1, 2, 3].map((i) => ({ id: `task-${i}`, mode: "publish", note: i === 2 ? hostile : `note ${i}` }));
  const ends = await exec().run(c.plan(tasks));
  for (const t of tasks) {
    const e = endOf(ends, t.id);
    assert.equal(e.published, true, `${t.id}: ${e.failure}`);
    assert.equal(e.attempts, 1);
    assert.equal(c.published(t.id), t.note);
  }
  const arrays = new Set(c.events.filter((e) => e.kind === "started").map((e) => /Slurm job ([0-9]+)_/.exec(e.detail ?? "")?.[1]));
  assert.equal(arrays.size, 1, "one job array for all the tasks");
  assert.equal(readdirSync(join(c.dir, "executor", "slurm")).length, 1);
});

test("a task whose process is killed is started again up to the retry limit; past it, the failure is in Slurm's words", {
  skip,
  timeout: 300_000,
}, async () => {
  // Control: one retry allowed, the second attempt publishes.
  const ok = campaign("killed-retried");
  const run = exec().run(ok.plan([{ id: "k", mode: "block-first" }], { retries: 1 }));
  process.kill(await ok.attempt("k", 1), "SIGKILL");
  const end = endOf(await run, "k");
  assert.equal(end.published, true, end.failure);
  assert.equal(end.attempts, 2);
  assert.ok(ok.events.some((e) => e.kind === "retried" && e.task === "k" && /JobState=FAILED/.test(e.detail ?? "")));

  // No retry allowed: the killed attempt is the last, reported with Slurm's state and exit code.
  const no = campaign("killed-limit");
  const run2 = exec().run(no.plan([{ id: "k", mode: "block-first" }], { retries: 0 }));
  process.kill(await no.attempt("k", 1), "SIGKILL");
  const end2 = endOf(await run2, "k");
  assert.equal(end2.published, false);
  assert.equal(end2.attempts, 1);
  assert.match(end2.failure ?? "", /JobState=FAILED .*ExitCode=0:9/);
  assert.match(end2.failure ?? "", /retry limit 0/);
  assert.equal(existsSync(join(no.dir, "attempts", "k.2")), false, "never started again");
});

test("a task that exits without a result is retried, then reported with its exit code and last output line", { skip, timeout: 300_000 }, async () => {
  const c = campaign("fails");
  const ends = await exec().run(
    c.plan(
      [
        { id: "f", mode: "fail" },
        { id: "p", mode: "publish" },
      ],
      { retries: 1 },
    ),
  );
  const f = endOf(ends, "f");
  assert.equal(f.published, false);
  assert.equal(f.attempts, 2);
  assert.match(f.failure ?? "", /JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0/);
  assert.match(f.failure ?? "", /task f failed on purpose/);
  assert.equal(endOf(ends, "p").published, true, "control: the other task of the array published");
});

test("a task Slurm requeues (scontrol requeue) counts an attempt; requeued past the limit, it is cancelled and reported", {
  skip,
  timeout: 300_000,
}, async () => {
  // Control: one retry allowed, Slurm's requeue is that retry and the second run publishes.
  const ok = campaign("requeued");
  const run = exec().run(ok.plan([{ id: "r", mode: "block-first" }], { retries: 1 }));
  await ok.attempt("r", 1);
  cluster.cmd("scontrol", ["requeue", await jobOf(ok, "r")]);
  const end = endOf(await run, "r");
  assert.equal(end.published, true, end.failure);
  assert.equal(end.attempts, 2);
  assert.equal(readdirSync(join(ok.dir, "executor", "slurm")).length, 1, "Slurm restarted it in its own array: no resubmission");

  const no = campaign("requeued-limit");
  const run2 = exec().run(no.plan([{ id: "r", mode: "block-first" }], { retries: 0 }));
  await no.attempt("r", 1);
  const job = await jobOf(no, "r");
  cluster.cmd("scontrol", ["requeue", job]);
  const end2 = endOf(await run2, "r");
  assert.equal(end2.published, false);
  assert.match(end2.failure ?? "", new RegExp(`Slurm requeued job ${job} .*retry limit \\(0\\) is used up`));
  await cluster.until("the over-limit task to leave the queue", () => /CANCELLED/.test(cluster.cmd("scontrol", ["show", "job", "-o", job])));
  assert.equal(existsSync(join(no.dir, "attempts", "r.2")), false, "never started again");
});

test("a cancelled task (scancel) is reported in Slurm's words naming it, and not started again", { skip, timeout: 300_000 }, async () => {
  const c = campaign("cancelled");
  const run = exec().run(
    c.plan(
      [
        { id: "victim", mode: "block-first" },
        { id: "bystander", mode: "publish" },
      ],
      { retries: 2 },
    ),
  );
  await c.attempt("victim", 1);
  const job = await jobOf(c, "victim");
  cluster.cmd("scancel", [job]);
  const ends = await run;
  const v = endOf(ends, "victim");
  assert.equal(v.published, false);
  assert.equal(v.attempts, 1);
  assert.match(v.failure ?? "", new RegExp(`Slurm job ${job}: JobState=CANCELLED`));
  assert.match(v.failure ?? "", /not started again/);
  assert.equal(existsSync(join(c.dir, "attempts", "victim.2")), false);
  assert.equal(endOf(ends, "bystander").published, true, "control: the task nobody cancelled published");
});

test("a submission Slurm refuses is SLURM_REFUSED with sbatch's words and the tasks named", { skip, timeout: 300_000 }, async () => {
  const c = campaign("refused");
  const tasks = [{ id: "too-big", mode: "publish" }];
  const e = await assertCodeAsync(() => exec().run(c.plan(tasks, { resources: { cpus: 1, memoryMiB: 64 * 1024 * 1024, timeMinutes: 10 } })), "SLURM_REFUSED");
  assert.match(e.message, /Memory specification can not be satisfied|Requested node configuration is not available/);
  assert.match(e.message, /too-big/);
  assert.equal(c.published("too-big"), undefined);
  // Control: the same task with memory the node has.
  const ends = await exec().run(c.plan(tasks));
  assert.equal(endOf(ends, "too-big").published, true);
});

test("a node set down mid-task is reported with its state and the administrator's reason", { skip, timeout: 300_000 }, async () => {
  const c = campaign("node-down");
  const run = slurmExecutor({ env: cluster.env, limits: { pollMs: 100, stuckMs: 0 } }).run(c.plan([{ id: "stranded", mode: "block" }], { retries: 2 }));
  await c.attempt("stranded", 1);
  cluster.cmd("scontrol", ["update", "nodename=localhost", "state=down", "reason=cairn-test-maintenance"]);
  try {
    const end = endOf(await run, "stranded");
    assert.equal(end.published, false);
    assert.match(end.failure ?? "", /node localhost is down.*Reason=cairn-test-maintenance/);
    assert.match(end.failure ?? "", /could not start/);
  } finally {
    cluster.cmd("scontrol", ["update", "nodename=localhost", "state=resume"]);
  }
  // Control: with the node back, the same campaign's task runs (it blocks: cancel it once it started).
  await cluster.until("the node to be idle again", () => cluster.cmd("sinfo", ["-h", "-n", "localhost", "-o", "%T"]).trim() === "idle");
  const again = campaign("node-up");
  const run2 = exec().run(again.plan([{ id: "stranded", mode: "block-first" }], { retries: 1 }));
  process.kill(await again.attempt("stranded", 1), "SIGKILL");
  assert.equal(endOf(await run2, "stranded").published, true);
});

test("a symlink planted at the campaign's executor/ directory is refused (ROOT_UNSAFE), and nothing is written through it", {
  skip,
  timeout: 300_000,
}, async () => {
  const c = campaign("planted");
  const elsewhere = mkdtempSync(join(tmpdir(), "cairn-slurm-elsewhere-"));
  symlinkSync(elsewhere, join(c.dir, "executor"));
  await assertCodeAsync(() => exec().run(c.plan([{ id: "p", mode: "publish" }])), "ROOT_UNSAFE");
  assert.deepEqual(readdirSync(elsewhere), []);
  rmSync(elsewhere, { recursive: true });
  assert.equal(existsSync(join(c.dir, "attempts", "p.1")), false, "nothing was submitted");
  // Control: the same campaign with its own executor/ directory runs.
  rmSync(join(c.dir, "executor"));
  assert.equal(endOf(await exec().run(c.plan([{ id: "p", mode: "publish" }])), "p").published, true);
});

test("interrupting the campaign (SIGINT) cancels its job array through the one interrupt handler", { skip, timeout: 300_000 }, async () => {
  const c = campaign("interrupted");
  const child = join(c.dir, "child.mts");
  writeFileSync(
    child,
    `import { slurmExecutor } from ${JSON.stringify(join(PROJECT_ROOT, "src", "fleet", "slurm-executor.ts"))};
const [dir, script] = process.argv.slice(2);
await slurmExecutor({ limits: { pollMs: 100 } }).run({
  campaignDir: dir,
  tasks: [{ id: "i", argv: [process.execPath, script, "block", dir, "i"], published: () => false }],
  resources: { cpus: 1, memoryMiB: 100, timeMinutes: 10 },
  retries: 0,
  onEvent: (e) => console.log(JSON.stringify(e)),
});
`,
  );
  const proc = spawn(process.execPath, ["--import", "tsx", child, c.dir, join(c.dir, "task.cjs")], { env: cluster.env, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  proc.stdout.on("data", (b: Buffer) => {
    out += b.toString();
  });
  const exit = new Promise<NodeJS.Signals | null>((r) => proc.once("exit", (_code, signal) => r(signal)));
  let ended = false;
  void exit.then(() => {
    ended = true;
  });
  await cluster.until("the start event (or the child's early end)", () => ended || /Slurm job [0-9]+_0/.test(out));
  assert.equal(ended, false, `the child ended early: ${out}`);
  await c.attempt("i", 1);
  const job = /Slurm job ([0-9]+_0)/.exec(out)![1]!;
  assert.match(cluster.cmd("scontrol", ["show", "job", "-o", job]), /JobState=RUNNING/, "control: running before the interrupt");
  proc.kill("SIGINT");
  assert.equal(await exit, "SIGINT", "the process ends by the signal");
  await cluster.until("the array to be cancelled", () => /JobState=CANCELLED/.test(cluster.cmd("scontrol", ["show", "job", "-o", job])));
});

test("a controller that stops answering ends the run as SLURM_UNREACHABLE after slurm.unreachable-ms", { skip, timeout: 300_000 }, async () => {
  const own = await startSlurmCluster();
  try {
    const c = campaign("unreachable");
    const run = slurmExecutor({ env: own.env, limits: { pollMs: 100, unreachableMs: 500 } }).run(c.plan([{ id: "u", mode: "block" }]));
    await c.attempt("u", 1);
    own.cmd("scontrol", ["shutdown"]);
    const e = await assertCodeAsync(() => run, "SLURM_UNREACHABLE");
    assert.match(e.message, /squeue/);
  } finally {
    await own.stop();
  }
});

test("a campaign larger than Slurm's MaxArraySize is split into arrays of that size, every task run once", { skip, timeout: 300_000 }, async () => {
  const own = await startSlurmCluster();
  try {
    const conf = join(own.dir, "slurm.conf");
    writeFileSync(conf, `${readFileSync(conf, "utf8")}MaxArraySize=2\n`);
    own.cmd("scontrol", ["reconfigure"]);
    await own.until("MaxArraySize=2", () => /^MaxArraySize\s*=\s*2$/m.test(own.cmd("scontrol", ["show", "config"])));
    const c = campaign("split");
    const tasks = [0, 1, 2, 3, 4].map((i) => ({ id: `s${i}`, mode: "publish" }));
    const ends = await slurmExecutor({ env: own.env, limits: { pollMs: 100 } }).run(c.plan(tasks));
    for (const t of tasks) assert.equal(endOf(ends, t.id).published, true);
    assert.equal(readdirSync(join(c.dir, "executor", "slurm")).length, 3, "arrays of 2, 2 and 1");
    for (const t of tasks) assert.equal(existsSync(join(c.dir, "attempts", `${t.id}.2`)), false, `${t.id} ran once`);
  } finally {
    await own.stop();
  }
});

test("a task Slurm requeues after it published keeps its result, and its rerun is cancelled before it starts", { skip, timeout: 300_000 }, async () => {
  const c = campaign("published-requeued");
  const run = exec().run(c.plan([{ id: "pr", mode: "publish-block", note: "first" }], { retries: 1 }));
  await c.attempt("pr", 1);
  await cluster.until("the result", () => c.published("pr") === "first");
  const job = await jobOf(c, "pr");
  cluster.cmd("scontrol", ["requeue", job]);
  let ends: readonly TaskEnd[] | undefined;
  void run.then((e) => {
    ends = e;
  });
  // without the rule the rerun starts (attempt 2, which would block forever): fail at once then
  await cluster.until("the run's end, or a second attempt", () => ends !== undefined || existsSync(join(c.dir, "attempts", "pr.2")));
  assert.ok(ends !== undefined, "the task started a second time");
  const end = endOf(ends, "pr");
  assert.equal(end.published, true, end.failure);
  await cluster.until("the rerun to be cancelled", () => /JobState=CANCELLED/.test(cluster.cmd("scontrol", ["show", "job", "-o", job])));
  assert.equal(existsSync(join(c.dir, "attempts", "pr.2")), false, "the task did not run twice");
});

test("a campaign directory whose name holds Slurm's filename symbols (%a, %j, %%) gets each task's output in its own file", {
  skip,
  timeout: 300_000,
}, async () => {
  const c = campaign("odd-%a-%j-%%-name");
  const ends = await exec().run(c.plan([{ id: "f", mode: "fail" }], { retries: 0 }));
  const f = endOf(ends, "f");
  assert.equal(f.published, false);
  assert.match(f.failure ?? "", /task f failed on purpose/, "the last output line was read from the task's own output file");
  const [array] = readdirSync(join(c.dir, "executor", "slurm"));
  assert.ok(existsSync(join(c.dir, "executor", "slurm", array!, "0.out")));
});

test("a campaign directory whose path holds a backslash is refused (PATH_UNSAFE) before anything is written", { skip, timeout: 300_000 }, async () => {
  const c = campaign("back\\slash");
  await assertCodeAsync(() => exec().run(c.plan([{ id: "b", mode: "publish" }])), "PATH_UNSAFE");
  assert.equal(existsSync(join(c.dir, "executor")), false);
  assert.equal(existsSync(join(c.dir, "attempts", "b.1")), false);
});
