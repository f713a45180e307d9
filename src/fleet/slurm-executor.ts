/**
 * The Slurm executor (issue 34): a campaign's tasks as one job array, with
 * Slurm's own commands and nothing home-made in between (no cairn daemon on
 * the nodes). `sbatch --parsable --array` submits them (one array task per
 * cairn task, resources per task, `--requeue`), `squeue` follows the array
 * (there is no `sacct` without slurmdbd, and `sbatch --wait` polls slowly),
 * `scontrol show job` gives the words of a task that ended without a
 * result, `sinfo` the state of the nodes when nothing can start.
 *
 * What the executor decides, and nothing more:
 *  - a task's attempt is over when Slurm lists it in an ended state; the
 *    task's own `published()` says whether it left a result;
 *  - an attempt that ended without a result is started again, in one new
 *    array per round, until the plan's retry limit is used up; Slurm's own
 *    requeues (a node failed, `scontrol requeue`) count as attempts too, and
 *    a task Slurm requeues past the limit is cancelled;
 *  - a task someone cancelled (`scancel`) is not started again: a person or
 *    a policy decided;
 *  - when nothing of the campaign runs and Slurm says the pending tasks
 *    cannot start (every node of their partition down or drained, or a
 *    pending reason only a configuration change clears) for `slurm.stuck-ms`,
 *    they are cancelled and reported with the nodes' states and reasons.
 * Every failure is given in Slurm's words (job state, reason, exit code, the
 * last line of the task's output) and names the task. An interrupted
 * campaign cancels its arrays (`scancel`) through the one interrupt handler.
 */
import { spawnSync } from "node:child_process";
import { closeSync, fstatSync } from "node:fs";
import { join } from "node:path";
import { CairnError, openForRead, readFullyAt } from "../core/index.ts";
import { onInterrupt } from "../vm/index.ts";
import type { Executor, ExecutorPlan, TaskEnd, TaskLaunch } from "./executor.ts";
import {
  ENDED_STATES,
  NEVER_STARTS_REASONS,
  nodeUsable,
  oneLine,
  parseNodes,
  parseQueue,
  parseScontrolRecords,
  SINFO_FORMAT,
  SLURM_LIMITS,
  SQUEUE_FORMAT,
  slurm,
  slurmLimits,
  type QueueRow,
  type SlurmLimits,
} from "./slurm-commands.ts";
import { submitArray, type Submission } from "./slurm-submit.ts";

export interface SlurmExecutorOptions {
  /** The environment of Slurm's commands (SLURM_CONF, SBATCH_PARTITION, …) and of the CAIRN_SLURM_* limits; default process.env. */
  readonly env?: NodeJS.ProcessEnv;
  readonly limits?: Partial<SlurmLimits>;
}

export function slurmExecutor(options: SlurmExecutorOptions = {}): Executor {
  return { name: "slurm", run: (plan) => runOnSlurm(plan, options) };
}

/** One task's progress across its attempts. */
interface TaskState {
  readonly launch: TaskLaunch;
  /** Attempts that started and ended (Slurm's requeues included). */
  attempts: number;
  end?: TaskEnd;
  /** Where its current attempt runs: the submission and its array index. */
  at?: { readonly sub: Submission; readonly index: number; seenRestarts: Set<number>; lastRow?: QueueRow };
}

/** The most bytes of a task's output read for its last line. */
const OUTPUT_TAIL_BYTES = 4096;
/** With many live tasks the poll interval grows: 10,000 tasks are looked at once a second, 100,000 every 10 s. */
const POLL_TASKS_PER_MS = 10;
/** sinfo is asked at most this often while nothing runs (a pending task may wait hours for its turn). */
const NODE_CHECK_MS = 2000;

async function runOnSlurm(plan: ExecutorPlan, options: SlurmExecutorOptions): Promise<readonly TaskEnd[]> {
  const env = options.env ?? process.env;
  const limits = slurmLimits(options.limits, env);
  checkPlan(plan);
  const tasks: TaskState[] = plan.tasks.map((launch) => ({ launch, attempts: 0 }));
  if (tasks.length === 0) return [];
  const subs: Submission[] = [];
  const unregister = onInterrupt(() => {
    if (subs.length > 0)
      spawnSync(
        "scancel",
        subs.map((s) => s.jobId),
        { env, stdio: "ignore", timeout: limits.commandMs },
      );
  });
  try {
    const maxArray = await maxArraySize(env, limits);
    for (let i = 0; i < tasks.length; i += maxArray) {
      await submit(tasks.slice(i, i + maxArray), plan, env, limits, subs);
    }
    await follow(tasks, subs, plan, env, limits);
  } finally {
    unregister();
  }
  return tasks.map((t) => t.end ?? { task: t.launch.id, attempts: t.attempts, published: t.launch.published() });
}

function checkPlan(plan: ExecutorPlan): void {
  const r = plan.resources;
  for (const [k, v] of [
    ["cpus", r.cpus],
    ["memoryMiB", r.memoryMiB],
    ["timeMinutes", r.timeMinutes],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 1)
      throw new CairnError("USAGE", `resources.${k} must be a whole number ≥ 1 for Slurm, not ${String(v)}`, { path: `/resources/${k}` });
  }
  if (!Number.isSafeInteger(plan.retries) || plan.retries < 0) throw new CairnError("USAGE", `retries must be a whole number ≥ 0, not ${String(plan.retries)}`);
}

/** Slurm's MaxArraySize (array indices run 0..MaxArraySize-1); a larger campaign is several arrays. */
async function maxArraySize(env: NodeJS.ProcessEnv, limits: SlurmLimits): Promise<number> {
  const res = await slurm("scontrol", ["show", "config"], env, limits.commandMs);
  if (!res.ok) throw unreachable(`scontrol show config: ${res.words}`);
  const m = /^MaxArraySize\s*=\s*([0-9]+)/m.exec(res.stdout);
  const n = m === null ? 1001 : Number(m[1]);
  return n > 0 ? n : 1001;
}

function unreachable(words: string): CairnError {
  return new CairnError("SLURM_UNREACHABLE", `Slurm's controller cannot be asked about the campaign: ${words}`, {
    hint: `check the controller (scontrol ping) and SLURM_CONF; the tasks already submitted keep running and a rerun of the campaign skips those that published; "${SLURM_LIMITS.unreachableMs.name}" bounds how long cairn waits`,
  });
}

async function submit(batch: TaskState[], plan: ExecutorPlan, env: NodeJS.ProcessEnv, limits: SlurmLimits, subs: Submission[]): Promise<void> {
  const sub = await submitArray({
    campaignDir: plan.campaignDir,
    tasks: batch.map((t) => ({ id: t.launch.id, argv: t.launch.argv })),
    resources: plan.resources,
    ...(plan.jobs !== undefined ? { throttle: plan.jobs } : {}),
    // sbatch exports its environment to the job (Slurm's default, --export=ALL): the tasks' environment over Slurm's own
    env: plan.env !== undefined ? { ...env, ...plan.env } : env,
    commandMs: limits.commandMs,
  });
  subs.push(sub);
  batch.forEach((t, index) => {
    t.at = { sub, index, seenRestarts: new Set() };
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function follow(tasks: TaskState[], subs: Submission[], plan: ExecutorPlan, env: NodeJS.ProcessEnv, limits: SlurmLimits): Promise<void> {
  let failingSince: number | undefined;
  let stuckSince: number | undefined;
  let nodesCheckedAt = Number.NEGATIVE_INFINITY;
  let nodeWords: string | undefined;
  for (;;) {
    const live = tasks.filter((t) => t.end === undefined && t.at !== undefined);
    if (live.length === 0) return;
    // One squeue lists every live task: a large campaign is looked at less often, so the
    // controller answers at most about POLL_TASKS_PER_MS task records per millisecond of interval.
    await sleep(Math.max(limits.pollMs, Math.ceil(live.length / POLL_TASKS_PER_MS)));
    const ids = [...new Set(live.map((t) => t.at!.sub.jobId))];
    const res = await slurm("squeue", ["-h", "-r", "-t", "all", "-j", ids.join(","), "-O", SQUEUE_FORMAT], env, limits.commandMs);
    if (!res.ok && !/Invalid job id/i.test(res.words)) {
      failingSince ??= Date.now();
      if (Date.now() - failingSince >= limits.unreachableMs) throw unreachable(`squeue: ${res.words}`);
      continue;
    }
    failingSince = undefined;
    const rows = new Map<string, QueueRow>();
    for (const row of res.ok ? parseQueue(res.stdout) : []) rows.set(`${row.jobId}_${row.index}`, row);

    const retry: TaskState[] = [];
    const pending: { task: TaskState; row: QueueRow }[] = [];
    let running = 0;
    for (const t of live) {
      const at = t.at!;
      const name = `${at.sub.jobId}_${at.index}`;
      const row = rows.get(name);
      if (row === undefined) {
        // Slurm no longer lists it (its record outlived MinJobAge before we looked): ended, words unknown.
        await ended(t, at.lastRow === undefined ? undefined : { ...at.lastRow, state: "ENDED" }, plan, env, limits, retry);
        continue;
      }
      at.lastRow = row;
      if (row.state === "RUNNING" || row.state === "COMPLETING") {
        running++;
        if (!at.seenRestarts.has(row.restarts)) {
          at.seenRestarts.add(row.restarts);
          plan.onEvent?.({ kind: "started", task: t.launch.id, detail: `Slurm job ${name} on ${row.nodes}` });
        }
      }
      if (ENDED_STATES.has(row.state)) {
        await ended(t, row, plan, env, limits, retry);
        continue;
      }
      // Slurm requeued a task that had already published (its node failed after the result was
      // renamed into place): the result stands, and the rerun would only run it twice.
      if (row.restarts > 0 && row.state !== "RUNNING" && row.state !== "COMPLETING" && t.launch.published()) {
        await slurm("scancel", [name], env, limits.commandMs);
        finish(t, t.attempts + row.restarts, undefined, plan);
        continue;
      }
      // Slurm requeued it (a node failed, scontrol requeue): each restart is an attempt.
      if (t.attempts + row.restarts > plan.retries && row.restarts > 0) {
        await slurm("scancel", [name], env, limits.commandMs);
        const words = await lastOutputLine(at.sub, at.index);
        finish(
          t,
          t.attempts + row.restarts,
          `Slurm requeued job ${name} (${row.state}, Reason=${row.reason}${words}) and the retry limit (${plan.retries}) is used up; cancelled`,
          plan,
        );
        continue;
      }
      if (row.state !== "RUNNING" && row.state !== "COMPLETING") pending.push({ task: t, row });
    }
    if (retry.length > 0) await resubmit(retry, plan, env, limits, subs);

    // Nothing runs and something waits: can Slurm start it at all?
    if (running > 0 || pending.length === 0) {
      stuckSince = undefined;
      continue;
    }
    const never = pending.find((p) => NEVER_STARTS_REASONS.has(p.row.reason));
    if (never === undefined && Date.now() - nodesCheckedAt >= NODE_CHECK_MS) {
      nodesCheckedAt = Date.now();
      nodeWords = await noUsableNode(pending[0]!.row.partition, env, limits);
    }
    const stuck = never !== undefined ? `Slurm says it cannot start (Reason=${never.row.reason})` : nodeWords;
    if (stuck === undefined) {
      stuckSince = undefined;
      continue;
    }
    stuckSince ??= Date.now();
    if (Date.now() - stuckSince < limits.stuckMs) continue;
    await slurm(
      "scancel",
      pending.map((p) => `${p.task.at!.sub.jobId}_${p.task.at!.index}`),
      env,
      limits.commandMs,
    );
    for (const p of pending) {
      finish(
        p.task,
        p.task.attempts + p.row.restarts,
        `Slurm job ${p.task.at!.sub.jobId}_${p.task.at!.index} could not start: ${stuck}; it was ${p.row.state} (Reason=${p.row.reason}) for ${SLURM_LIMITS.stuckMs.name}=${limits.stuckMs}; cancelled`,
        plan,
      );
    }
    stuckSince = undefined;
  }
}

/** When no node of `partition` can start a job: the nodes' states and reasons, in sinfo's words; else undefined. */
async function noUsableNode(partition: string, env: NodeJS.ProcessEnv, limits: SlurmLimits): Promise<string | undefined> {
  if (partition === "") return undefined;
  const res = await slurm("sinfo", ["-h", "-N", "-p", partition, "-o", SINFO_FORMAT], env, limits.commandMs);
  if (!res.ok) return undefined; // a question about nodes failing is no evidence that they are down
  const nodes = parseNodes(res.stdout);
  if (nodes.length === 0) return `partition ${partition} has no nodes`;
  if (nodes.some(nodeUsable)) return undefined;
  const shown = nodes.slice(0, 5).map((n) => `node ${n.node} is ${n.state}${n.reason !== "" && n.reason !== "none" ? ` (Reason=${n.reason})` : ""}`);
  return `no node of partition ${partition} can run it: ${shown.join(", ")}${nodes.length > 5 ? `, and ${nodes.length - 5} more` : ""}`;
}

/** An attempt is over: published, to be retried, or failed in Slurm's words. */
async function ended(
  t: TaskState,
  row: QueueRow | undefined,
  plan: ExecutorPlan,
  env: NodeJS.ProcessEnv,
  limits: SlurmLimits,
  retry: TaskState[],
): Promise<void> {
  const at = t.at!;
  const ran = row === undefined ? at.seenRestarts.size > 0 : row.state !== "CANCELLED" || at.seenRestarts.size > 0 || row.nodes !== "";
  t.attempts += (row?.restarts ?? 0) + (ran ? 1 : 0);
  if (t.launch.published()) {
    finish(t, t.attempts, undefined, plan);
    return;
  }
  const name = `${at.sub.jobId}_${at.index}`;
  const words = `Slurm job ${name}: ${await jobWords(name, row, env, limits)}${await lastOutputLine(at.sub, at.index)}`;
  if (row?.state === "CANCELLED") {
    finish(t, t.attempts, `${words}; cancelled, not started again`, plan);
    return;
  }
  if (t.attempts <= plan.retries) {
    plan.onEvent?.({ kind: "retried", task: t.launch.id, detail: `${words}; no result, attempt ${t.attempts + 1} of at most ${plan.retries + 1}` });
    at.seenRestarts = new Set();
    retry.push(t);
    return;
  }
  finish(t, t.attempts, `${words}; no result after ${t.attempts} attempt(s), retry limit ${plan.retries}`, plan);
}

/** The job's state, reason and exit code from `scontrol show job`, else from squeue's row. */
async function jobWords(name: string, row: QueueRow | undefined, env: NodeJS.ProcessEnv, limits: SlurmLimits): Promise<string> {
  const res = await slurm("scontrol", ["show", "job", "-o", name], env, limits.commandMs);
  const rec = res.ok ? parseScontrolRecords(res.stdout)[0] : undefined;
  if (rec !== undefined) {
    const f = (k: string): string => rec.get(k) ?? "?";
    return `JobState=${f("JobState")} Reason=${f("Reason")} ExitCode=${f("ExitCode")} Restarts=${f("Restarts")} NodeList=${f("NodeList")}`;
  }
  if (row === undefined || row.state === "ENDED") return "ended; Slurm no longer holds its record (MinJobAge)";
  return `JobState=${row.state} Reason=${row.reason}`;
}

/** The last line the task (or slurmstepd, e.g. "*** JOB 8 ON n1 CANCELLED … DUE TO NODE FAILURE ***") wrote to its output. */
async function lastOutputLine(sub: Submission, index: number): Promise<string> {
  const path = join(sub.dir, `${index}.out`);
  let fd: number;
  try {
    fd = openForRead(path);
  } catch {
    return "";
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return "";
    const n = Math.min(st.size, OUTPUT_TAIL_BYTES);
    const buf = Buffer.alloc(n);
    const got = readFullyAt(fd, buf, st.size - n);
    const lines = buf
      .subarray(0, got)
      .toString("utf8")
      .split("\n")
      .map((l) => oneLine(l, 300))
      .filter((l) => l !== "");
    const last = lines[lines.length - 1];
    return last === undefined ? "" : `; its output ends: ${last}`;
  } catch {
    return "";
  } finally {
    closeSync(fd);
  }
}

function finish(t: TaskState, attempts: number, failure: string | undefined, plan: ExecutorPlan): void {
  t.attempts = attempts;
  const published = failure === undefined;
  t.end = { task: t.launch.id, attempts, published, ...(failure !== undefined ? { failure } : {}) };
  plan.onEvent?.({ kind: "ended", task: t.launch.id, ...(failure !== undefined ? { detail: failure } : { detail: "published" }) });
}

/** Starts the tasks of one retry round as one new array; if Slurm refuses it, each task fails with sbatch's words. */
async function resubmit(batch: TaskState[], plan: ExecutorPlan, env: NodeJS.ProcessEnv, limits: SlurmLimits, subs: Submission[]): Promise<void> {
  try {
    await submit(batch, plan, env, limits, subs);
  } catch (e) {
    if (!(e instanceof CairnError) || e.code !== "SLURM_REFUSED") throw e;
    for (const t of batch) finish(t, t.attempts, e.message, plan);
  }
}
