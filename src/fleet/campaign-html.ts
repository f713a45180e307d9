/**
 * `campaign report --html FILE`: one static page, no script, no style or
 * font from elsewhere (a Content-Security-Policy of `default-src 'none'`
 * says so to the browser too), every value escaped: a task's detail is
 * the guest's facts and a mismatch's message, which a hostile workload
 * shapes. The escaping, the policy and the page shell are core/html-page.ts's,
 * shared with every other page cairn writes.
 */
import { escapeHtml as esc, htmlPage, shortDigest as short } from "../core/index.ts";
import type { Plan } from "./plan-file.ts";
import type { Progress } from "./campaign-status.ts";

export function htmlReport(plan: Plan, progress: Progress): string {
  const rows = progress.tasks
    .map(
      (t) =>
        `<tr class="${esc(t.verdict)}"><td title="${esc(t.task)}"><code>${esc(t.task.slice(0, 12))}</code></td><td>${esc(t.origin.point === null ? "" : JSON.stringify(t.origin.point))}${t.origin.repeat > 0 ? ` #${t.origin.repeat}` : ""}</td><td>${esc(t.state)}</td><td>${esc(t.verdict)}${t.field !== null ? ` at <code>${esc(t.field)}</code>` : ""}</td><td>${esc(t.status)}</td><td><code title="${esc(t.identities?.workload)}">${esc(short(t.identities?.workload))}</code></td><td><code title="${esc(t.identities?.vm)}">${esc(short(t.identities?.vm))}</code></td><td>${t.duration_ms !== null ? esc((t.duration_ms / 1000).toFixed(1)) : ""}</td><td>${esc(t.guest_instructions)}</td><td>${esc(t.detail ?? t.failure)}</td></tr>`,
    )
    .join("\n");
  const totals = Object.entries(progress.verdicts)
    .map(([k, v]) => `${esc(k)} ${v}`)
    .join(", ");
  return htmlPage({
    title: `cairn campaign ${short(plan.plan)}`,
    css: "tr.mismatched,tr.infrastructure,tr.invalid{background:#fdd}tr.matched,tr.recorded,tr.verified{background:#efe}",
    body: `<h1>cairn campaign (${esc(plan.mode)})</h1>
<p>plan <code>${esc(plan.plan)}</code>; ${plan.tasks.length} task(s): ${esc(totals)}.</p>
<table><thead><tr><th>task</th><th>matrix point</th><th>state</th><th>verdict</th><th>run status</th><th>workload</th><th>VM</th><th>seconds</th><th>guest instructions</th><th>detail</th></tr></thead>
<tbody>
${rows}
</tbody></table>`,
  });
}
