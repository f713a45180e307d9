/**
 * `cairn campaign task DIR TASK`: runs one task of the plan kept in DIR
 * and publishes `DIR/tasks/<task>/` by one rename once its result and
 * receipt are in it. It is the only writer of a result; an executor only
 * starts this command (executor.ts).
 *
 *   record  the same library `cairn run` uses (`recordRun`), the matrix
 *           point's spec given as bytes read as if they were the spec file;
 *           a lock task as `cairn run LOCKFILE` does (`recordLockfileRun`),
 *           under the policy the plan keeps; the run goes to DIR/runs and
 *           its receipt is signed there
 *   replay  the same library `cairn replay` uses (`replayRun`), in place;
 *           a bundle (a file or `oci://…`) is first imported on this node
 *           (`localRun`, as `cairn replay BUNDLE` does) into DIR/runs
 *   verify  no VM: the run directory's own checks (`checkRunDir`) and its
 *           receipt by the campaign's key
 *   branch  the same library `cairn explore` uses (`recordBranch`), from the
 *           parent the plan names, at its checkpoint, with the variation's
 *           tail; the parent must still be the run.json the name covers;
 *           the branch goes to DIR/runs and its receipt is signed there
 *
 * What is a finding and what is not: a replay that differs from its record
 * (REPLAY_MISMATCH, VM_MISMATCH, WORKLOAD_MISMATCH: the first field is
 * named) is a result, `mismatched`. A record whose guest ended in an
 * infrastructure failure, and every error that is not a finding (QEMU
 * would not start, the kit is missing, the disk is full, the process was
 * killed), publishes nothing: the command exits non-zero, its staging is
 * removed (or, if it was killed, by the next `campaign run`), and the
 * executor retries it up to the plan's retry limit; then the campaign
 * reports it as `infrastructure` in the executor's words.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { CairnError, isCairnError, keyIdOf, sha256, readFileBounded, type SigningKey } from "../core/index.ts";
import type { VerifyOptions } from "../workload/index.ts";
import type { RemoteOptions } from "../oci/index.ts";
import {
  checkRunDir,
  describeOutcome,
  localRun,
  guestInstructions,
  readRunManifest,
  recordBranch,
  recordLockfileRun,
  recordRun,
  replayKit,
  replayRun,
  signReceipt,
  type Kit,
} from "../vm/index.ts";
import type { PlannedTask } from "./plan-file.ts";
import { readPlan, tailBytes, type Plan } from "./plan-file.ts";
import { openResults, publishedTasks, RESULTS, stageTask } from "./results-dir.ts";
import { lockExportOptions } from "./lock-entry.ts";
import { runStatementDigest, writeResult, type TaskResult } from "./task-result.ts";

export interface TaskRunOptions {
  readonly storeDir: string;
  /** The guest kit's directory (replay reads the objects a run names from it). */
  readonly kitDir: string;
  /** How to get the kit for a record (set up when absent, as `cairn run` does). */
  readonly kit: () => Promise<Kit>;
  readonly key: SigningKey;
  readonly cairnVersion: string;
  readonly timeoutMs?: number;
  readonly verify?: VerifyOptions;
  readonly log?: (line: string) => void;
  readonly now?: () => number;
  /** How to reach the registry a `bundle: oci://…` task pulls from (transport flags; credentials from the environment's files). */
  readonly remote?: RemoteOptions;
  /** The environment a lock task's `oci://` registries read their credentials from (by their files' names); default none. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The time a lock task's lockfile is verified at; default now. */
  readonly date?: () => Date;
}

export interface TaskRunResult {
  /** Published by this command (false: it was already published, by an earlier attempt or another process). */
  readonly published: boolean;
  readonly result?: TaskResult;
}

const FINDINGS = new Set(["REPLAY_MISMATCH", "VM_MISMATCH", "WORKLOAD_MISMATCH"]);

function instructions(runDir: string): number | null {
  try {
    return guestInstructions(readFileSync(join(runDir, "replay.log"))) ?? null;
  } catch {
    return null;
  }
}

export function findTask(plan: Plan, id: string): PlannedTask {
  const t = plan.tasks.find((x) => x.id === id);
  if (t === undefined)
    throw new CairnError("CAMPAIGN_INVALID", `the campaign's plan has no task ${id}`, { path: id, hint: "`cairn campaign status DIR` lists the tasks" });
  return t;
}

export async function runTask(dir: string, id: string, opts: TaskRunOptions): Promise<TaskRunResult> {
  const log = opts.log ?? (() => {});
  const clock = opts.now ?? (() => performance.now());
  openResults(dir, false);
  const plan = readPlan(dir);
  if (plan === undefined) throw new CairnError("CAMPAIGN_INVALID", `${dir} holds no campaign plan`, { path: join(dir, RESULTS.plan) });
  const task = findTask(plan, id);
  if (publishedTasks(dir).has(id)) return { published: false };
  const staging = stageTask(dir, id);
  try {
    const t0 = clock();
    const base = { schema: "cairn.campaign-result/1" as const, task: id, plan: plan.plan, mode: plan.mode };
    let result: TaskResult;
    if ("parent" in task.input) {
      result = await branchTask(dir, task, opts, base, () => Math.round(clock() - t0));
    } else if ("spec" in task.input || "lock" in task.input) {
      if (task.identity.mode !== "record") throw new CairnError("CAMPAIGN_INVALID", "a spec or lock task must be a record task", { path: id });
      const planned = task.identity.workload;
      const record = {
        storeDir: opts.storeDir,
        runsDir: join(dir, RESULTS.runs),
        kit: opts.kit,
        cairnVersion: opts.cairnVersion,
        ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
        ...(opts.verify !== undefined ? { verify: opts.verify } : {}),
        log,
      };
      const input = task.input;
      const r =
        "spec" in input
          ? await recordRun({ ...record, input: input.spec, specBytes: Buffer.from(`${JSON.stringify(input.variant)}\n`, "utf8") })
          : // as `cairn run LOCKFILE` does: verified and exported again here, under the plan's policy, then recorded
            await recordLockfileRun({
              ...record,
              origin: input.lock,
              export: await lockExportOptions(input.lock, input.policy, {
                env: opts.env ?? {},
                ...(opts.remote !== undefined ? { remote: opts.remote } : {}),
                storeDir: opts.storeDir,
                now: (opts.date ?? (() => new Date()))(),
              }),
            });
      const source = "spec" in input ? input.spec : input.lock;
      const w = r.manifest.workload;
      if (
        r.manifest.status === "infrastructure-failure" ||
        w.workload !== planned.workload ||
        w.launch !== planned.launch ||
        w.fs !== planned.fs ||
        w.source !== planned.source
      ) {
        rmSync(r.runDir, { recursive: true, force: true }); // ours, in DIR/runs; never counted
        if (r.manifest.status === "infrastructure-failure")
          throw new CairnError(
            "RUN_INFRASTRUCTURE",
            `the record ended in an infrastructure failure: ${r.unfinished?.message ?? describeOutcome(r.evaluation)}`,
            { path: id },
          );
        throw new CairnError(
          "CAMPAIGN_MISMATCH",
          `${"spec" in input ? "the spec" : "the lockfile"} assembles to another workload than the plan's task names (its files changed since the plan was made)`,
          {
            path: source,
            hint: "run the campaign into a new --out directory",
          },
        );
      }
      signReceipt(r.runDir, [opts.key]);
      result = {
        ...base,
        verdict: "recorded",
        field: null,
        detail: describeOutcome(r.evaluation),
        status: r.manifest.status,
        identities: { run_id: r.manifest.run_id, workload: w.workload, vm: r.manifest.vm_digest, outcome: r.manifest.outcome },
        run: relative(dir, r.runDir),
        replay: null,
        duration_ms: Math.round(clock() - t0),
        guest_instructions: instructions(r.runDir),
        run_statement: runStatementDigest(r.runDir),
      };
    } else {
      if (task.identity.mode === "record") throw new CairnError("CAMPAIGN_INVALID", "a run task must be a replay or verify task", { path: id });
      // a bundle is imported on this node: its members this node's store and kit lack are fetched (verified) and cached there,
      // its run directory goes under DIR/runs (shared, so the report and `campaign verify` read it)
      const runDir =
        "run" in task.input
          ? task.input.run
          : (
              await localRun(task.input.bundle, {
                storeDir: opts.storeDir,
                kitDir: opts.kitDir,
                runsDir: join(dir, RESULTS.runs),
                // a verify needs no QEMU; a replay refuses another QEMU itself, as a finding at /vm/qemu (as for a run directory)
                anyQemu: true,
                ...(opts.remote !== undefined ? { remote: opts.remote } : {}),
                log,
              })
            ).runDir;
      const m = readRunManifest(runDir);
      const ids = { run_id: m.run_id, workload: m.workload.workload, vm: m.vm_digest, outcome: m.outcome };
      const common = { ...base, status: m.status, identities: ids, run: runDir };
      const recordNow = sha256(readFileBounded(join(runDir, "run.json"), 1024 * 1024, "run.manifest-bytes"));
      const finding = (field: string, detail: string): TaskResult => ({
        ...common,
        verdict: "mismatched",
        field,
        detail,
        replay: null,
        duration_ms: Math.round(clock() - t0),
        guest_instructions: instructions(runDir),
        run_statement: statementOrNull(runDir),
      });
      if (recordNow !== task.identity.record)
        result = finding("/record", "run.json is not the one the task's name covers (it changed since the plan was made)");
      else if (task.identity.mode === "verify") {
        const check = checkRunDir(runDir, m, [{ publicKey: opts.key.publicKey, keyId: keyIdOf(opts.key.publicKey) }]);
        result =
          check.check === "signed" || check.check === "unverified"
            ? {
                ...common,
                verdict: check.check === "signed" ? "verified" : "unverified",
                field: null,
                detail:
                  check.check === "signed"
                    ? "the run directory agrees with itself and with its receipt"
                    : `no receipt by the campaign's key (${check.problem ?? "none"})`,
                replay: null,
                duration_ms: Math.round(clock() - t0),
                guest_instructions: instructions(runDir),
                run_statement: runStatementDigest(runDir),
              }
            : finding(check.problem ?? "/", `the run directory is ${check.check} at ${check.problem ?? "/"}`);
      } else {
        try {
          const r = await replayRun({
            runDir,
            storeDir: opts.storeDir,
            kit: replayKit(opts.kitDir, runDir),
            ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
            ...(opts.verify !== undefined ? { verify: opts.verify } : {}),
            log,
          });
          result = {
            ...common,
            verdict: r.verdict.recorded_failed ? "failed-as-recorded" : "matched",
            field: null,
            detail: r.verdict.recorded ?? "",
            replay: relative(runDir, r.replayDir),
            duration_ms: Math.round(clock() - t0),
            guest_instructions: instructions(runDir),
            run_statement: runStatementDigest(runDir),
          };
        } catch (e) {
          if (!isCairnError(e) || !FINDINGS.has(e.code)) throw e;
          result = finding(e.path ?? "/", `${e.code}: ${e.message}`);
        }
      }
    }
    writeResult(staging.dir, result, opts.key);
    const published = staging.publish();
    log(
      `task ${id.slice(0, 12)} ${result.verdict}${result.field !== null ? ` at ${result.field}` : ""}${published ? "" : " (another attempt published it first)"}`,
    );
    return { published, result };
  } catch (e) {
    staging.discard();
    throw e;
  }
}

/** A branch task: `recordBranch` of the plan's parent, checkpoint and tail into DIR/runs, its receipt signed there. */
async function branchTask(
  dir: string,
  task: PlannedTask,
  opts: TaskRunOptions,
  base: Pick<TaskResult, "schema" | "task" | "plan" | "mode">,
  elapsed: () => number,
): Promise<TaskResult> {
  const input = task.input as Extract<PlannedTask["input"], { parent: string }>;
  const identity = task.identity;
  if (identity.mode !== "branch") throw new CairnError("CAMPAIGN_INVALID", "a branch input must be a branch task", { path: task.id });
  const parentNow = sha256(readFileBounded(join(input.parent, "run.json"), 1024 * 1024, "run.manifest-bytes"));
  if (parentNow !== identity.record)
    throw new CairnError("CAMPAIGN_MISMATCH", "the parent's run.json is not the one the task's name covers (it changed since the plan was made)", {
      path: input.parent,
      hint: "run the campaign into a new --out directory",
    });
  const tails = mkdtempSync(join(tmpdir(), "cairn-branch-task-")); // 0700: a tail holds stdin data
  try {
    const tail = join(tails, "tail.json");
    writeFileSync(tail, tailBytes(input.tail), { mode: 0o600 });
    const r = await recordBranch({
      runDir: input.parent,
      checkpoint: input.at,
      scenario: tail,
      storeDir: opts.storeDir,
      runsDir: join(dir, RESULTS.runs),
      kit: opts.kit,
      cairnVersion: opts.cairnVersion,
      ...(input.served !== null ? { served: input.served } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.verify !== undefined ? { verify: opts.verify } : {}),
      ...(opts.log !== undefined ? { log: opts.log } : {}),
    });
    if (r.manifest.status === "infrastructure-failure") {
      rmSync(r.runDir, { recursive: true, force: true }); // ours, in DIR/runs; never counted
      throw new CairnError("RUN_INFRASTRUCTURE", `the branch ended in an infrastructure failure: ${r.unfinished?.message ?? describeOutcome(r.evaluation)}`, {
        path: task.id,
      });
    }
    signReceipt(r.runDir, [opts.key]);
    const m = r.manifest;
    return {
      ...base,
      verdict: "recorded",
      field: null,
      detail: describeOutcome(r.evaluation),
      status: m.status,
      identities: { run_id: m.run_id, workload: m.workload.workload, vm: m.vm_digest, outcome: m.outcome },
      run: relative(dir, r.runDir),
      replay: null,
      duration_ms: elapsed(),
      guest_instructions: instructions(r.runDir),
      run_statement: runStatementDigest(r.runDir),
    };
  } finally {
    rmSync(tails, { recursive: true, force: true });
  }
}

function statementOrNull(runDir: string) {
  try {
    return runStatementDigest(runDir);
  } catch (e) {
    if (isCairnError(e)) return null;
    throw e;
  }
}
