/**
 * The runs a record (or branch) campaign produced, for a replay or verify campaign that
 * names it (`runs: [{campaign: DIR}]`): every task of its plan that
 * published a `recorded` result, in plan order. Tasks without a result yet
 * are left out (and said so by the caller's plan: it names fewer tasks).
 */
import { CairnError } from "../core/index.ts";
import { readPlan } from "./plan-file.ts";
import { openResults, publishedTasks } from "./results-dir.ts";
import { readResult, resultRunDir } from "./task-result.ts";

export function readPublishedRuns(campaignDir: string, at: string): string[] {
  openResults(campaignDir, false);
  const plan = readPlan(campaignDir);
  if (plan === undefined || (plan.mode !== "record" && plan.mode !== "branch"))
    throw new CairnError("CAMPAIGN_INVALID", `${campaignDir} is not the results directory of a record or branch campaign`, { path: at });
  const done = publishedTasks(campaignDir);
  const out: string[] = [];
  for (const t of plan.tasks) {
    if (!done.has(t.id)) continue;
    const { result } = readResult(campaignDir, t.id);
    if (result.verdict === "recorded") out.push(resultRunDir(campaignDir, result));
  }
  return out;
}
