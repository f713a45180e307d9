/**
 * The local executor: each task's command as a child process of this one,
 * up to `jobs` at once. A launch that ends without a published result (the
 * process was killed, failed, or crashed) is started again up to the
 * plan's retry limit; the failure is said in the process's own words (its
 * exit code or signal and the last line it wrote to stderr).
 *
 * The default number of jobs is what QEMU can use without oversubscribing:
 * each task is one single-threaded TCG guest plus cairn's own process, so
 * `availableParallelism() - 1` (cairn and the OS keep one core), at least 1.
 *
 * A task over `resources.time-minutes` is ended as an interrupt would end
 * it (SIGTERM, so it stops its QEMU and removes its staging; its process
 * group killed TASK_END_WAIT_MS later) and the attempt's failure names the
 * limit; like any attempt without a result it is retried, then reported.
 *
 * An interrupt (SIGINT, SIGTERM) ends the children first: each runs in its
 * own process group, which is killed and waited for (vm/interrupt.ts), so a
 * QEMU a task started does not outlive the campaign.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { availableParallelism } from "node:os";
import { killGroup, killGroupAndWait, onInterrupt, processAlive } from "../vm/index.ts";
import type { Executor, ExecutorPlan, TaskEnd, TaskLaunch } from "./executor.ts";

/** The default `--jobs`: the cores QEMU can use without oversubscribing. */
export function defaultJobs(cores = availableParallelism()): number {
  return Math.max(1, cores - 1);
}

/** How long an interrupted task is given to end its QEMU and remove its staging before its group is killed. */
const TASK_END_WAIT_MS = 15_000;

/** SIGTERM to a task (its handler cleans up, vm/interrupt.ts), waited for, then its process group killed. */
function terminateAndWait(pid: number): void {
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + TASK_END_WAIT_MS;
  while (processAlive(pid) && Date.now() < deadline) Atomics.wait(sleeper, 0, 0, 20);
  killGroupAndWait(pid);
}

/** stderr kept per attempt, for the failure's words (the tail). */
const STDERR_TAIL_BYTES = 4096;

function attempt(launch: TaskLaunch, timeMinutes: number, env: NodeJS.ProcessEnv | undefined): Promise<string> {
  return new Promise((resolve) => {
    const [cmd, ...args] = launch.argv;
    let child: ChildProcess;
    try {
      child = spawn(cmd!, args, { stdio: ["ignore", "ignore", "pipe"], detached: true, ...(env !== undefined ? { env } : {}) });
    } catch (e) {
      resolve(`could not start: ${(e as Error).message}`);
      return;
    }
    const pid = child.pid;
    // interrupted: the task ends its QEMU and removes its staging itself (its own handler), then its group is killed
    const forget = onInterrupt(() => {
      if (pid !== undefined) terminateAndWait(pid);
    });
    // over the task's time: ended as an interrupt ends it, asynchronously (other tasks go on meanwhile)
    let over = false;
    let grace: NodeJS.Timeout | undefined;
    const endGroup = (): void => void (pid !== undefined && killGroup(pid));
    const limit = setTimeout(() => {
      over = true;
      try {
        if (pid !== undefined) process.kill(pid, "SIGTERM");
      } catch {
        // gone
      }
      grace = setTimeout(endGroup, TASK_END_WAIT_MS);
    }, timeMinutes * 60_000);
    const settle = (): void => {
      clearTimeout(limit);
      clearTimeout(grace);
      if (over) endGroup(); // what the task started and left behind
      forget();
    };
    let tail = Buffer.alloc(0);
    child.stderr?.on("data", (b: Buffer) => {
      tail = Buffer.concat([tail, b]);
      if (tail.length > STDERR_TAIL_BYTES) tail = tail.subarray(tail.length - STDERR_TAIL_BYTES);
    });
    child.on("error", (e) => {
      settle();
      resolve(`could not start: ${e.message}`);
    });
    child.on("close", (code, signal) => {
      settle();
      const last = tail.toString("utf8").trim().split("\n").at(-1) ?? "";
      const limitSaid = over ? `over resources.time-minutes (${timeMinutes} min), ended: ` : "";
      resolve(`${limitSaid}${signal !== null ? `killed by ${signal}` : `exited ${code}`}${last !== "" ? `: ${last}` : ""}`);
    });
  });
}

export const localExecutor: Executor = {
  name: "local",
  async run(plan: ExecutorPlan): Promise<readonly TaskEnd[]> {
    const jobs = Math.max(1, plan.jobs ?? defaultJobs());
    const queue = [...plan.tasks];
    const ends: TaskEnd[] = [];
    const worker = async () => {
      for (let launch = queue.shift(); launch !== undefined; launch = queue.shift()) {
        let attempts = 0;
        let failure: string | undefined;
        while (attempts <= plan.retries) {
          attempts++;
          plan.onEvent?.({ kind: "started", task: launch.id });
          const how = await attempt(launch, plan.resources.timeMinutes, plan.env);
          if (launch.published()) {
            failure = undefined;
            plan.onEvent?.({ kind: "ended", task: launch.id, detail: how });
            break;
          }
          failure = how;
          plan.onEvent?.({ kind: attempts <= plan.retries ? "retried" : "ended", task: launch.id, detail: how });
        }
        ends.push({ task: launch.id, attempts, published: failure === undefined, ...(failure !== undefined ? { failure } : {}) });
      }
    };
    await Promise.all(Array.from({ length: Math.min(jobs, plan.tasks.length) }, worker));
    const order = new Map(plan.tasks.map((t, i) => [t.id, i]));
    return ends.sort((a, b) => order.get(a.task)! - order.get(b.task)!);
  },
};
