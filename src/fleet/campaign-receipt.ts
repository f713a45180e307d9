/**
 * The campaign receipt (`DIR/campaign-receipt.dsse.json`): an in-toto
 * Statement v1 in DSSE, signed with the campaign's key when `campaign run`
 * ends, whose subjects are every published task's receipt (by sha256) and
 * whose predicate lists every task of the plan with its verdict, in plan
 * order: a task with no result is `infrastructure` (its failure in the
 * executor's words) or `pending`, never a pass.
 *
 * `campaign verify DIR --pub KEY` checks it offline: the signature; that the
 * statement equals the one recomputed from DIR now (the first differing
 * field is named); and for each published task, that its receipt is signed
 * by KEY over its result.json, that the result's run statement is the one
 * recomputed from the run directory's files, that a record's run receipt
 * verifies, and that a matched replay's files bear out its result. Each
 * task that fails one of these is reported as such and is not counted.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  CAMPAIGN_LIMITS,
  CairnError,
  isCairnError,
  isJsonObject,
  parseEnvelope,
  parseJsonBytes,
  readFileBounded,
  signEnvelope,
  verifyEnvelope,
  writeFileAtomic,
  type JsonObject,
  type SigningKey,
  type VerifyingKey,
} from "../core/index.ts";
import { checkRunDir, firstDifference, IN_TOTO_PAYLOAD_TYPE, IN_TOTO_STATEMENT_TYPE, readRunManifest, replayFilesAgree } from "../vm/index.ts";
import type { Plan } from "./plan-file.ts";
import { RESULTS } from "./results-dir.ts";
import { campaignProgress, type TaskLine } from "./campaign-status.ts";
import { checkTaskReceipt, readResult, resultRunDir, runStatementDigest } from "./task-result.ts";

export const CAMPAIGN_PREDICATE_TYPE = "https://cairn.dev/campaign/v1";

/** The statement of `dir`'s campaign, every value read from the results directory now. */
export function campaignStatement(dir: string, plan: Plan): Record<string, unknown> {
  const progress = campaignProgress(dir, plan);
  const published = progress.tasks.filter((t): t is TaskLine & { receipt: string } => t.receipt !== null);
  return {
    _type: IN_TOTO_STATEMENT_TYPE,
    subject: published.map((t) => ({ name: `task/${t.task}`, digest: { sha256: t.receipt.slice(7) } })),
    predicateType: CAMPAIGN_PREDICATE_TYPE,
    predicate: {
      plan: plan.plan,
      mode: plan.mode,
      campaign_file: { sha256: plan.file.sha256 },
      complete: progress.counts.pending === 0 && progress.counts.failed === 0,
      totals: progress.verdicts,
      tasks: progress.tasks.map((t) => ({ task: t.task, verdict: t.verdict, field: t.field, status: t.status, receipt: t.receipt, failure: t.failure })),
    },
  };
}

export function signCampaignReceipt(dir: string, plan: Plan, key: SigningKey): string {
  const statement = campaignStatement(dir, plan);
  const envelope = signEnvelope(IN_TOTO_PAYLOAD_TYPE, Buffer.from(JSON.stringify(statement), "utf8"), [key]);
  const file = join(dir, RESULTS.receipt);
  writeFileAtomic(file, `${JSON.stringify(envelope, null, 2)}\n`, { mode: 0o644 });
  return file;
}

export interface CampaignVerification {
  readonly keyId: string;
  readonly tasks: number;
  /** Tasks whose result verifies against its receipt and its run. */
  readonly verified: number;
  /** Each problem found, with the task it concerns (null: the campaign receipt itself). */
  readonly problems: readonly { readonly task: string | null; readonly problem: string }[];
  readonly statement: JsonObject;
}

/** Checks one published task; returns its problem, or undefined. */
function checkTask(dir: string, id: string, plan: Plan, keys: readonly VerifyingKey[]): string | undefined {
  try {
    const { result, bytes } = readResult(dir, id);
    const receipt = checkTaskReceipt(dir, id, bytes, keys);
    if (receipt !== undefined) return `task receipt: ${receipt}`;
    if (result.plan !== plan.plan) return "the result belongs to another plan";
    const runDir = resultRunDir(dir, result);
    if (result.run_statement === null) return result.verdict === "mismatched" ? undefined : "the result binds no run statement";
    if (runStatementDigest(runDir) !== result.run_statement) return `the run directory ${runDir} changed since the task's result was signed`;
    const m = readRunManifest(runDir);
    if (result.mode === "record" || result.mode === "branch") {
      const check = checkRunDir(runDir, m, keys);
      if (check.check !== "signed") return `the run's receipt: ${check.check}${check.problem !== null ? ` at ${check.problem}` : ""}`;
    }
    if ((result.verdict === "matched" || result.verdict === "failed-as-recorded") && result.replay !== null) {
      const replayDir = join(runDir, result.replay);
      const file = join(replayDir, "result.json");
      const rr = existsSync(file) ? parseJsonBytes(readFileBounded(file, CAMPAIGN_LIMITS["campaign.result-bytes"], "campaign.result-bytes")) : null;
      if (!isJsonObject(rr) || !replayFilesAgree(replayDir, m, rr)) return `the replay directory ${replayDir} does not bear out "${result.verdict}"`;
    }
    return undefined;
  } catch (e) {
    if (isCairnError(e)) return `${e.code}: ${e.message}`;
    throw e;
  }
}

export function verifyCampaign(dir: string, plan: Plan, keys: readonly VerifyingKey[]): CampaignVerification {
  const file = join(dir, RESULTS.receipt);
  if (!existsSync(file))
    throw new CairnError("SIGNATURE_MISSING", `${dir} has no ${RESULTS.receipt}`, { path: file, hint: "`cairn campaign run` signs it when it ends" });
  const bytes = readFileBounded(file, CAMPAIGN_LIMITS["campaign.plan-bytes"], "campaign.plan-bytes", { notRegular: "ROOT_UNSAFE" });
  const { payload, keyId } = verifyEnvelope(parseEnvelope(parseJsonBytes(bytes, { source: file })), IN_TOTO_PAYLOAD_TYPE, keys);
  const statement = parseJsonBytes(payload, { source: `${file} payload` });
  if (!isJsonObject(statement) || statement.predicateType !== CAMPAIGN_PREDICATE_TYPE)
    throw new CairnError("RECEIPT_INVALID", `${file} is not a cairn campaign statement`, { path: "/predicateType" });
  const problems: { task: string | null; problem: string }[] = [];
  const diff = firstDifference(campaignStatement(dir, plan), JSON.parse(payload.toString("utf8")) as unknown);
  if (diff !== undefined) problems.push({ task: null, problem: `the campaign receipt differs from the results directory at ${diff}` });
  const progress = campaignProgress(dir, plan);
  let verified = 0;
  for (const t of progress.tasks) {
    if (t.receipt === null) continue;
    const p = checkTask(dir, t.task, plan, keys);
    if (p === undefined) verified++;
    else problems.push({ task: t.task, problem: p });
  }
  return { keyId, tasks: plan.tasks.length, verified, problems, statement };
}
