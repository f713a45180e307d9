/**
 * Progress and results of a campaign, read from its results directory only
 * (`campaign status`, `campaign report`, the campaign receipt): a task is
 *
 *   done     it published a result (tasks/<task>/result.json)
 *   running  its staging directory exists and the process writing it is alive
 *   failed   its last launch ended without a result (failures/<task>.json)
 *   pending  none of these
 *
 * A result that does not read back is `invalid` and counted as failed,
 * never as done.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { CAMPAIGN_LIMITS, Checker, isCairnError, parseJsonBytes, readFileBounded, writeFileAtomic, type JsonModel, type Sha256Digest } from "../core/index.ts";
import { processAlive } from "../vm/index.ts";
import type { Plan } from "./plan-file.ts";
import { parseTaskStaging, publishedTasks, RESULTS, stagingHost } from "./results-dir.ts";
import { readResult, taskReceiptDigest } from "./task-result.ts";

export type TaskState = "done" | "running" | "failed" | "pending";

export interface TaskLine {
  readonly task: string;
  readonly state: TaskState;
  /** The published verdict, or `infrastructure` (every launch ended without a result), `invalid` (a result that does not read), `pending`. */
  readonly verdict: string;
  readonly field: string | null;
  readonly status: string | null;
  readonly detail: string | null;
  readonly origin: { readonly run: number; readonly point: readonly JsonModel[] | null; readonly repeat: number };
  readonly identities: { readonly run_id: string | null; readonly workload: string | null; readonly vm: string | null; readonly outcome: string | null } | null;
  readonly run: string | null;
  readonly duration_ms: number | null;
  readonly guest_instructions: number | null;
  /** sha256 of the task's receipt file; null without a result. */
  readonly receipt: Sha256Digest | null;
  /** How the last launch ended when it published nothing, in the executor's words. */
  readonly failure: string | null;
  readonly attempts: number | null;
}

export interface Progress {
  readonly counts: Record<TaskState, number>;
  readonly verdicts: Record<string, number>;
  readonly tasks: readonly TaskLine[];
}

export interface FailureNote {
  readonly task: string;
  readonly executor: string;
  readonly attempts: number;
  readonly failure: string;
}

export function writeFailureNote(dir: string, note: FailureNote): void {
  writeFileAtomic(join(dir, RESULTS.failures, `${note.task}.json`), `${JSON.stringify(note, null, 2)}\n`, { mode: 0o600 });
}

function readFailureNote(dir: string, id: string): FailureNote | undefined {
  const file = join(dir, RESULTS.failures, `${id}.json`);
  if (!existsSync(file)) return undefined;
  try {
    const m = parseJsonBytes(readFileBounded(file, CAMPAIGN_LIMITS["campaign.result-bytes"], "campaign.result-bytes", { notRegular: "ROOT_UNSAFE" }), {
      source: file,
    });
    const c = new Checker("CAMPAIGN_INVALID");
    const o = c.object(m, "", ["task", "executor", "attempts", "failure"]);
    const note =
      o === undefined
        ? undefined
        : {
            task: c.requiredString(o, "task", ""),
            executor: c.requiredString(o, "executor", ""),
            attempts: c.integer(o.attempts, "/attempts", { min: 0 }),
            failure: c.requiredString(o, "failure", ""),
          };
    if (!c.ok || note === undefined || note.task !== id) return { task: id, executor: "?", attempts: 0, failure: `${file} does not read as a failure note` };
    return note as FailureNote;
  } catch (e) {
    if (isCairnError(e)) return { task: id, executor: "?", attempts: 0, failure: `${e.code}: ${e.message}` };
    throw e;
  }
}

/** Tasks whose staging directory's writer is alive (on this host). */
export function runningTasks(dir: string): Set<string> {
  const out = new Set<string>();
  let names: string[] = [];
  try {
    names = readdirSync(join(dir, RESULTS.tasks));
  } catch {}
  for (const n of names) {
    const s = parseTaskStaging(n);
    if (s !== undefined && s.host === stagingHost() && processAlive(s.pid)) out.add(s.task);
  }
  return out;
}

export function campaignProgress(dir: string, plan: Plan): Progress {
  const done = publishedTasks(dir);
  const running = runningTasks(dir);
  const counts: Record<TaskState, number> = { done: 0, running: 0, failed: 0, pending: 0 };
  const verdicts: Record<string, number> = {};
  const tasks: TaskLine[] = plan.tasks.map((t) => {
    const empty = {
      task: t.id,
      origin: t.origin,
      field: null,
      status: null,
      detail: null,
      identities: null,
      run: null,
      duration_ms: null,
      guest_instructions: null,
      receipt: null,
      attempts: null,
    };
    if (done.has(t.id)) {
      try {
        const { result } = readResult(dir, t.id);
        return {
          ...empty,
          state: "done" as const,
          verdict: result.verdict,
          field: result.field,
          status: result.status,
          detail: result.detail,
          identities: result.identities,
          run: result.run,
          duration_ms: result.duration_ms,
          guest_instructions: result.guest_instructions,
          receipt: taskReceiptDigest(dir, t.id),
          failure: null,
        };
      } catch (e) {
        if (!isCairnError(e)) throw e;
        return { ...empty, state: "failed" as const, verdict: "invalid", failure: `${e.code}: ${e.message}` };
      }
    }
    if (running.has(t.id)) return { ...empty, state: "running" as const, verdict: "pending", failure: null };
    const note = readFailureNote(dir, t.id);
    if (note !== undefined) return { ...empty, state: "failed" as const, verdict: "infrastructure", failure: note.failure, attempts: note.attempts };
    return { ...empty, state: "pending" as const, verdict: "pending", failure: null };
  });
  for (const t of tasks) {
    counts[t.state]++;
    verdicts[t.verdict] = (verdicts[t.verdict] ?? 0) + 1;
  }
  return { counts, verdicts, tasks };
}
