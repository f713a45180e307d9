/**
 * `cairn campaign run FILE`: read and check the campaign file, expand it
 * into a plan (every point checked before anything runs), keep the plan in
 * the results directory (or check it is the plan kept there), remove what
 * dead attempts left half-written, and hand the executor only the tasks
 * without a published result: a rerun resumes, skipping finished tasks by
 * name. When the executor is done, each task that published nothing gets
 * a failure note in the executor's words, and the campaign receipt is
 * signed over whatever the results directory holds.
 */
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { CairnError, type SigningKey } from "../core/index.ts";
import type { RemoteOptions } from "../oci/index.ts";
import { readCampaignFile } from "./campaign-file.ts";
import { lockCampaign } from "./campaign-lock.ts";
import { signCampaignReceipt } from "./campaign-receipt.ts";
import { campaignProgress, runningTasks, writeFailureNote, type Progress } from "./campaign-status.ts";
import type { Executor, ExecutorEvent, TaskEnd } from "./executor.ts";
import { expandCampaign } from "./expand.ts";
import { makePlan, readPlan, writePlan, type Plan } from "./plan-file.ts";
import { openResults, publishedTasks, removeDeadTaskStaging, RESULTS, taskDir } from "./results-dir.ts";

export interface CampaignRunOptions {
  readonly file: string;
  /** The results directory (created and marked, or one cairn made for this campaign). */
  readonly out: string;
  readonly executor: Executor;
  readonly jobs?: number;
  readonly storeDir: string;
  readonly cairnVersion: string;
  readonly key: SigningKey;
  /** The command line that runs task `id` of the campaign in `dir` (`cairn campaign task DIR ID ...`), absolute argv. */
  readonly taskArgv: (dir: string, id: string) => readonly string[];
  readonly log?: (line: string) => void;
  readonly onEvent?: (e: ExecutorEvent) => void;
  /** How to reach a registry a `bundle: oci://…` entry names, for the plan (its manifest and run.json). */
  readonly remote?: RemoteOptions;
  /** The environment task commands run with (registry credentials travel here, by file name, never on an argv); default the executor's. */
  readonly taskEnv?: NodeJS.ProcessEnv;
  /** The environment and time a `lock:` entry is verified with when the plan is made (expand.ts). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly now?: Date;
}

export interface CampaignRunResult {
  readonly plan: Plan;
  /** Tasks found finished and skipped. */
  readonly skipped: number;
  readonly ends: readonly TaskEnd[];
  readonly progress: Progress;
  readonly receipt: string;
}

export async function runCampaign(opts: CampaignRunOptions): Promise<CampaignRunResult> {
  const log = opts.log ?? (() => {});
  const file = readCampaignFile(opts.file);
  // every point is checked (and its workload assembled) before the results directory is touched
  const plan = makePlan(
    file,
    await expandCampaign(file, {
      storeDir: opts.storeDir,
      cairnVersion: opts.cairnVersion,
      ...(opts.remote !== undefined ? { remote: opts.remote } : {}),
      ...(opts.env !== undefined ? { env: opts.env } : {}),
      ...(opts.now !== undefined ? { now: opts.now } : {}),
    }),
  );
  log(
    `${plan.tasks.length} task(s)${plan.collapsed.length > 0 ? `, ${plan.collapsed.length} matrix point(s) collapsed into a task they equal` : ""}; plan ${plan.plan}`,
  );
  openResults(opts.out, true);
  // one `campaign run` at a time on DIR: released when this returns, throws or is interrupted
  const lock = lockCampaign(opts.out, log);
  try {
    return await runLocked(opts, plan, log);
  } finally {
    lock.release();
  }
}

async function runLocked(opts: CampaignRunOptions, plan: Plan, log: (line: string) => void): Promise<CampaignRunResult> {
  const kept = readPlan(opts.out);
  if (kept !== undefined && kept.plan !== plan.plan)
    throw new CairnError("CAMPAIGN_MISMATCH", `${opts.out} holds the results of another campaign plan (${kept.plan}), not this file's (${plan.plan})`, {
      path: opts.out,
      hint: "give --out a new directory, or the campaign file whose results it holds",
    });
  if (kept === undefined) writePlan(opts.out, plan);
  removeDeadTaskStaging(opts.out);
  const done = publishedTasks(opts.out);
  // a task an earlier `campaign run` started is still being written by a live process: not started twice
  const live = runningTasks(opts.out);
  const missing = plan.tasks.filter((t) => !done.has(t.id) && !live.has(t.id));
  if (done.size > 0) log(`${done.size} task(s) already finished, skipped; ${missing.length} to run`);
  if (live.size > 0) log(`${live.size} task(s) still running from an earlier campaign run, left to it; run again once they end`);
  const ends =
    missing.length === 0
      ? []
      : await opts.executor.run({
          campaignDir: opts.out,
          tasks: missing.map((t) => ({
            id: t.id,
            argv: opts.taskArgv(opts.out, t.id),
            published: () => existsSync(join(taskDir(opts.out, t.id), RESULTS.result)),
          })),
          resources: plan.resources,
          retries: plan.retries,
          ...(opts.jobs !== undefined ? { jobs: opts.jobs } : {}),
          ...(opts.onEvent !== undefined ? { onEvent: opts.onEvent } : {}),
          ...(opts.taskEnv !== undefined ? { env: opts.taskEnv } : {}),
        });
  for (const end of ends) {
    const note = join(opts.out, RESULTS.failures, `${end.task}.json`);
    if (end.published) rmSync(note, { force: true });
    else
      writeFailureNote(opts.out, { task: end.task, executor: opts.executor.name, attempts: end.attempts, failure: end.failure ?? "no result was published" });
  }
  const receipt = signCampaignReceipt(opts.out, plan, opts.key);
  return { plan, skipped: done.size, ends, progress: campaignProgress(opts.out, plan), receipt };
}
