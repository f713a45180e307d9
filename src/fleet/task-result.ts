/**
 * A task's published result (`tasks/<task>/result.json`) and its receipt
 * (`tasks/<task>/receipt.dsse.json`): an in-toto Statement v1 in DSSE,
 * signed with the campaign's key by the task command, whose subject is the
 * result file's sha256. The result in turn binds the run it speaks of: the
 * sha256 of the run's receipt statement (vm/run-receipt.ts
 * `receiptStatement`, recomputed from the run directory's own files), so a
 * run directory edited after the task is caught by `campaign verify`.
 *
 * Verdicts (docs/fleet.md):
 *   recorded            record: the run was recorded (its status says how it ended)
 *   matched             replay: the replay equals the record, which passed
 *   failed-as-recorded  replay: the replay equals the record, which failed
 *   mismatched          replay or verify: differs at `field`
 *   verified            verify: the run directory agrees with itself and its receipt
 *   unverified          verify: it agrees with itself but carries no receipt by the key
 * `infrastructure` is never published by a task: it is what the campaign
 * says of a task whose every attempt ended without a result.
 */
import { join } from "node:path";
import {
  CAMPAIGN_LIMITS,
  CairnError,
  declareIdentity,
  identityDigest,
  Checker,
  isJsonObject,
  parseEnvelope,
  parseJsonBytes,
  readFileBounded,
  sha256,
  signEnvelope,
  verifyEnvelope,
  writeFileAtomic,
  type JsonObject,
  type Sha256Digest,
  type SigningKey,
  type VerifyingKey,
} from "../core/index.ts";
import { IN_TOTO_PAYLOAD_TYPE, IN_TOTO_STATEMENT_TYPE, receiptStatement } from "../vm/index.ts";
import { RESULTS, taskDir } from "./results-dir.ts";

export const RESULT_SCHEMA = "cairn.campaign-result/1";
export const TASK_PREDICATE_TYPE = "https://cairn.dev/campaign-task/v1";

export const VERDICTS = ["recorded", "matched", "failed-as-recorded", "mismatched", "verified", "unverified"] as const;
export type Verdict = (typeof VERDICTS)[number];

export interface TaskResult {
  readonly schema: typeof RESULT_SCHEMA;
  readonly task: string;
  readonly plan: Sha256Digest;
  readonly mode: "record" | "replay" | "verify" | "branch";
  readonly verdict: Verdict;
  /** mismatched: the JSON pointer (or file) of the first difference; null otherwise. */
  readonly field: string | null;
  /** What happened, in words (the run's facts, or the mismatch's message). */
  readonly detail: string;
  /** The run's recorded status (null when the run could not be read). */
  readonly status: string | null;
  readonly identities: {
    readonly run_id: string | null;
    readonly workload: Sha256Digest | null;
    readonly vm: Sha256Digest | null;
    readonly outcome: Sha256Digest | null;
  };
  /** The run directory: under the results directory (`runs/<id>`, record) or as the plan names it (replay, verify). */
  readonly run: string;
  /** replay: the replay directory inside the run directory (`replays/<n>`), when one was written and matched. */
  readonly replay: string | null;
  readonly duration_ms: number;
  /** Guest instructions the run executes (from its replay log; null when the log is not one cairn frames exactly). */
  readonly guest_instructions: number | null;
  /** sha256 of JCS of the run's receipt statement, recomputed from its files when the task ended; null when the run could not be read. */
  readonly run_statement: Sha256Digest | null;
}

/** What a result binds its run by: the sha256 of JCS of the run's receipt statement (an integrity digest, not a name). */
export const RUN_STATEMENT_DIGEST = declareIdentity({
  name: "run statement digest",
  tag: "cairn.run-statement/1",
  algorithm: "sha256",
  framing: "jcs",
  role: "integrity",
  definedIn: "src/fleet/task-result.ts",
});

/** The digest a result binds its run by. */
export function runStatementDigest(runDir: string): Sha256Digest {
  return identityDigest(RUN_STATEMENT_DIGEST, receiptStatement(runDir));
}

export function encodeResult(r: TaskResult): Buffer {
  return Buffer.from(`${JSON.stringify(r, null, 2)}\n`, "utf8");
}

/** Writes result.json and its signed receipt into a task's staging directory. */
export function writeResult(stagingDir: string, r: TaskResult, key: SigningKey): void {
  const bytes = encodeResult(r);
  writeFileAtomic(join(stagingDir, RESULTS.result), bytes, { mode: 0o644 });
  const statement = {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject: [{ name: `task/${r.task}`, digest: { sha256: sha256(bytes).slice(7) } }],
    predicateType: TASK_PREDICATE_TYPE,
    predicate: { task: r.task, plan: r.plan, verdict: r.verdict, field: r.field, run_statement: r.run_statement },
  };
  const envelope = signEnvelope(IN_TOTO_PAYLOAD_TYPE, Buffer.from(JSON.stringify(statement), "utf8"), [key]);
  writeFileAtomic(join(stagingDir, RESULTS.taskReceipt), `${JSON.stringify(envelope, null, 2)}\n`, { mode: 0o644 });
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** A published result, strictly read. */
export function readResult(dir: string, id: string): { result: TaskResult; bytes: Buffer } {
  const file = join(taskDir(dir, id), RESULTS.result);
  const bytes = readFileBounded(file, CAMPAIGN_LIMITS["campaign.result-bytes"], "campaign.result-bytes", { notRegular: "ROOT_UNSAFE" });
  const model = parseJsonBytes(bytes, { source: file });
  const c = new Checker("CAMPAIGN_INVALID");
  const keys = [
    "schema",
    "task",
    "plan",
    "mode",
    "verdict",
    "field",
    "detail",
    "status",
    "identities",
    "run",
    "replay",
    "duration_ms",
    "guest_instructions",
    "run_statement",
  ];
  const o = c.object(model, "", keys) ?? (Object.create(null) as JsonObject);
  for (const k of keys) c.required(o, k, "");
  if (o.schema !== RESULT_SCHEMA) c.add("/schema", `expected ${RESULT_SCHEMA}`);
  if (o.task !== id) c.add("/task", "is not the task directory's name");
  if (!VERDICTS.includes(o.verdict as Verdict)) c.add("/verdict", `expected one of ${VERDICTS.join(", ")}`);
  if (typeof o.plan !== "string" || !DIGEST.test(o.plan)) c.add("/plan", "expected a sha256 digest");
  const ids = c.object(o.identities, "/identities", ["run_id", "workload", "vm", "outcome"]);
  if (ids !== undefined)
    for (const k of ["workload", "vm", "outcome"])
      if (ids[k] !== null && !(typeof ids[k] === "string" && DIGEST.test(ids[k]))) c.add(`/identities/${k}`, "expected a sha256 digest or null");
  // record: a run directory under DIR/runs by its run id, nothing else (a forged "runs/../.." would name any directory)
  const ours = o.mode === "record" || o.mode === "branch";
  if (typeof o.run !== "string" || (ours && !/^runs\/[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$/.test(o.run)))
    c.add("/run", ours ? "expected runs/<run id>" : "expected a string");
  if (o.replay !== null && !(typeof o.replay === "string" && /^replays\/[1-9][0-9]*$/.test(o.replay))) c.add("/replay", "expected replays/<n> or null");
  c.integer(o.duration_ms, "/duration_ms", { min: 0 });
  if (o.guest_instructions !== null) c.integer(o.guest_instructions, "/guest_instructions", { min: 0 });
  if (o.run_statement !== null && !(typeof o.run_statement === "string" && DIGEST.test(o.run_statement)))
    c.add("/run_statement", "expected a sha256 digest or null");
  c.done(`invalid ${file}`, "a task result is written by `cairn campaign task` only");
  return { result: o as unknown as TaskResult, bytes };
}

/** The run directory a result names, absolute. */
export function resultRunDir(dir: string, r: TaskResult): string {
  return r.mode === "record" || r.mode === "branch" ? join(dir, r.run) : r.run;
}

/**
 * Checks a task's receipt: signed by one of `keys`, a statement of this
 * task whose subject is the result file's sha256. Returns the problem, or
 * undefined when it holds.
 */
export function checkTaskReceipt(dir: string, id: string, resultBytes: Buffer, keys: readonly VerifyingKey[]): string | undefined {
  const file = join(taskDir(dir, id), RESULTS.taskReceipt);
  try {
    const bytes = readFileBounded(file, CAMPAIGN_LIMITS["campaign.result-bytes"], "campaign.result-bytes", { notRegular: "ROOT_UNSAFE" });
    const { payload } = verifyEnvelope(parseEnvelope(parseJsonBytes(bytes, { source: file })), IN_TOTO_PAYLOAD_TYPE, keys);
    const s = parseJsonBytes(payload, { source: `${file} payload` });
    if (!isJsonObject(s) || s._type !== IN_TOTO_STATEMENT_TYPE || s.predicateType !== TASK_PREDICATE_TYPE) return "the receipt is not a cairn task statement";
    const subject = Array.isArray(s.subject) && s.subject.length === 1 && isJsonObject(s.subject[0]) ? s.subject[0] : undefined;
    const digest = subject !== undefined && isJsonObject(subject.digest) ? subject.digest.sha256 : undefined;
    if (subject?.name !== `task/${id}`) return "the receipt names another task";
    if (digest !== sha256(resultBytes).slice(7)) return "result.json is not the file the receipt signs (it was edited)";
    return undefined;
  } catch (e) {
    if (e instanceof CairnError) return `${e.code}: ${e.message}`;
    throw e;
  }
}

/** The sha256 of a task's receipt file (what the campaign receipt lists). */
export function taskReceiptDigest(dir: string, id: string): Sha256Digest {
  const file = join(taskDir(dir, id), RESULTS.taskReceipt);
  return sha256(readFileBounded(file, CAMPAIGN_LIMITS["campaign.result-bytes"], "campaign.result-bytes", { notRegular: "ROOT_UNSAFE" }));
}
