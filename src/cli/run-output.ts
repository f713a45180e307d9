/**
 * What `cairn run` prints of the run it recorded: the summary (its --json
 * document, docs/schemas/cairn.cli.run.1.schema.json) and the same as text.
 * The checkpoints the record took are listed as run.json records them (name,
 * the event each follows, the guest instruction count it was taken at); a
 * checkpoint declared but not taken is not listed (the record said so on
 * stderr).
 *
 * A branch (`cairn branch`) is printed the same way, plus the run and
 * checkpoint it started from (run.json `branch`); a run from boot has none.
 */
import { afterText, type RecordResult } from "../vm/index.ts";

export interface RunOutputExtras {
  readonly receipt?: string;
  readonly environment?: { readonly environment_id: string; readonly lockfile_sha256: string; readonly run_env?: readonly string[] };
}

type Recorded = Pick<RecordResult, "runDir" | "manifest" | "evaluation" | "replayCommand" | "durations">;

/** The --json summary of a recorded run (without its schema tag). */
export function runOutputModel(r: Recorded, extras: RunOutputExtras = {}) {
  const failed = r.evaluation.assertions.filter((a) => !a.ok).length;
  const taken = r.manifest.checkpoints?.taken ?? [];
  return {
    run_dir: r.runDir,
    run_id: r.manifest.run_id,
    status: r.manifest.status,
    outcome: r.manifest.outcome,
    vm: r.manifest.vm_digest,
    workload: r.manifest.workload.workload,
    assertions: { total: r.evaluation.assertions.length, failed },
    // what each invocation did, so a run without assertions still says it (status completed or program-failed)
    exits: r.evaluation.events.flatMap((e) => (e.event === "exit" ? [{ invocation: e.invocation, kind: e.kind, code: e.code }] : [])),
    replay_command: r.replayCommand,
    qemu_ms: Math.round(r.durations.qemuMs),
    ...(r.manifest.branch !== undefined
      ? {
          branch: {
            parent: r.manifest.branch.parent.run_id,
            checkpoint: { name: r.manifest.branch.checkpoint.name, icount: r.manifest.branch.checkpoint.icount },
          },
        }
      : {}),
    ...(taken.length > 0 ? { checkpoints: taken.map((c) => ({ name: c.name, after: c.after, icount: c.icount })) } : {}),
    ...(extras.receipt !== undefined ? { receipt: extras.receipt } : {}),
    ...(extras.environment !== undefined ? { environment: extras.environment } : {}),
  };
}

/** The text summary: one line per fact, the checkpoints one per line in the order taken. */
export function runOutputText(r: Recorded, extras: RunOutputExtras = {}): string {
  const s = runOutputModel(r, extras);
  const env = extras.environment;
  return [
    `run      ${s.run_id}  ${s.status}`,
    `dir      ${s.run_dir}`,
    ...(env !== undefined ? [`env      ${env.environment_id} (lockfile ${env.lockfile_sha256})`] : []),
    ...(env?.run_env !== undefined && env.run_env.length > 0 ? [`set      ${env.run_env.join(", ")} (over the lockfile's env; in the launch identity)`] : []),
    ...(s.branch !== undefined
      ? [`branch   of ${s.branch.parent} at checkpoint ${s.branch.checkpoint.name} (instruction ${s.branch.checkpoint.icount.toLocaleString("en-US")})`]
      : []),
    `workload ${s.workload}`,
    `vm       ${s.vm}`,
    `outcome  ${s.outcome}`,
    s.assertions.total === 0
      ? "asserts  none checked (the spec declares no run.expect)"
      : `asserts  ${s.assertions.total - s.assertions.failed}/${s.assertions.total} passed`,
    `exits    ${s.exits.map((x) => `${x.invocation}: ${x.kind === "exited" ? `exit ${x.code}` : `signal ${x.code}`}`).join(", ") || "none"}`,
    ...(s.checkpoints ?? []).map(
      (c, i) => `${i === 0 ? "ckpt    " : "        "} ${c.name}  after ${afterText(c.after)}, at instruction ${c.icount.toLocaleString("en-US")}`,
    ),
    ...(s.receipt !== undefined ? [`receipt  ${s.receipt}`] : []),
    `recorded in ${(r.durations.qemuMs / 1000).toFixed(1)} s; replay with:`,
    `  ${s.replay_command}`,
  ].join("\n");
}
