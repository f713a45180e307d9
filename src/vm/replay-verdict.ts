/**
 * A replay's verdict is two separate facts, never one:
 *
 *   matches          the replay equals the record: events, assertions,
 *                    outcome digest and status, compared exactly
 *   recorded status  what the record was: "passed", or how it failed
 *
 * Before issue 31 the two were folded into one word and disagreed with
 * themselves: a faithful replay of an OOM-killed run said "did not match"
 * (matches false), while a faithful replay of a run that exited 3 said
 * "matches the record" and exited 0, so `cairn replay RUN && deploy`
 * deployed a failure. Now a faithful replay matches whatever the record
 * was, the output states the record's status beside it, and the CLI exits
 * non-zero when the recorded run failed unless the user says with
 * `--allow-failed` that reproducing a failure is the point.
 */
import { CairnError } from "../core/index.ts";
import { RUN_STATUS_ERRORS, type RunStatus } from "./checker.ts";
import type { Evaluation } from "./guest.ts";

export interface ReplayVerdict {
  readonly run_id: string;
  /** The replay equals the record (events, assertions, outcome, status). */
  readonly matches: boolean;
  /** The recorded run's status (run.json). */
  readonly recorded_status: RunStatus;
  /** Whether the recorded run failed: any status but "passed" (and "completed", a run without assertions whose programs exited 0). */
  readonly recorded_failed: boolean;
  /** What the recorded run did, in words ("exit 3", "the guest kernel reported oom-kill"), read from the matching replay; null when it did not match. */
  readonly recorded: string | null;
}

/** A failure is what `cairn run` fails with (checker.ts RUN_STATUS_ERRORS, one table): all but "passed" and "completed". */
export function isFailedStatus(status: RunStatus): boolean {
  return RUN_STATUS_ERRORS[status] !== null;
}

/** How many invocation facts `describeOutcome` names before it says "…". */
const MAX_FACTS = 4;

/**
 * What a run did, in words, from its evaluation: kernel reports, infrastructure
 * failures, launch failures, exits and failed assertions. For a matching
 * replay these are the record's facts too (its events and assertions are equal).
 */
export function describeOutcome(ev: Evaluation): string {
  const facts: string[] = [];
  for (const k of ev.kernel) facts.push(`the guest kernel reported ${k.reason}`);
  const invocations = new Set(ev.events.filter((e) => e.invocation > 0).map((e) => e.invocation));
  const who = (inv: number) => (invocations.size > 1 ? `invocation ${inv}: ` : "");
  for (const e of ev.events) {
    if (e.event === "infra-failure") facts.push(`infrastructure failure ${e.reason}`);
    else if (e.event === "launch-failure") facts.push(`${who(e.invocation)}launch failed at ${e.stage} (errno ${e.errno})`);
    else if (e.event === "exit") facts.push(`${who(e.invocation)}${e.kind === "signaled" ? `signal ${e.code}` : `exit ${e.code}`}`);
  }
  const failed = ev.assertions.filter((a) => !a.ok);
  if (failed.length > 0) facts.push(`${failed.length} of ${ev.assertions.length} assertions failed (${[...new Set(failed.map((a) => a.check))].join(", ")})`);
  if (facts.length === 0) return "no invocation finished";
  return facts.length > MAX_FACTS ? `${facts.slice(0, MAX_FACTS).join("; ")}; …` : facts.join("; ");
}

/** The one-line statement of both facts, e.g. "matches the record; the recorded run failed (assertions-failed): exit 3". */
export function verdictLine(v: ReplayVerdict): string {
  const record = !v.recorded_failed
    ? `the recorded run ${v.recorded_status}`
    : `the recorded run failed (${v.recorded_status})${v.recorded !== null ? `: ${v.recorded}` : ""}`;
  return `${v.matches ? "matches the record" : "does not match the record"}; ${record}`;
}

/**
 * RECORD_FAILED when a replay matched a record that failed (the CLI's
 * exit 1 unless `--allow-failed`); undefined when the record passed or the
 * replay did not match (that is REPLAY_MISMATCH, thrown by the replay).
 */
export function recordedFailure(v: ReplayVerdict, runDir: string): CairnError | undefined {
  if (!v.matches || !v.recorded_failed) return undefined;
  return new CairnError("RECORD_FAILED", `the replay ${verdictLine(v)}`, {
    path: runDir,
    hint: "the run is reproduced faithfully, failure included; pass --allow-failed when reproducing a failed run is the point",
  });
}
