/**
 * `cairn runs show RUN --html OUT`: one self-contained page of a run
 * (run-view.ts reads what it shows), built with the page kit
 * (core/html-page.ts: every value escaped, no script, nothing loaded).
 *
 * The timeline is plain SVG: one lane for the run (invocation 0) and one
 * per invocation, each event one mark (`.event`, `data-index` its position
 * in events.json) in the order the guest reported them, an invocation a bar
 * from its first event to its last. The axis is that order, not time (the
 * events carry none); the run's measures are stated beside it. A replay that
 * did not match marks the event where it first differs (`.differs`) and
 * names the field.
 */
import { digestCell, escapeHtml as esc, htmlPage, svg } from "../core/index.ts";
import { CHECK_MEANING } from "./run-summary.ts";
import type { IdentityShown, InvocationShown, ReplayPicture, RunView, StreamShown, TimelineItem } from "./run-view.ts";

const KIND_COLOR: Record<TimelineItem["kind"], string> = { step: "#2b6cb0", outcome: "#2f855a", fault: "#c53030", end: "#4a5568", other: "#b7791f" };
const VERDICT_WORDS: Record<ReplayPicture["verdict"], string> = {
  matched: "matched the record",
  differs: "did not match the record",
  "no-result": "left no result",
  contradicted: "claims a match its own files contradict",
};

const CSS = [
  ".banner{padding:.5em 1em;border-radius:4px;margin:.5em 0}",
  ".timeline{overflow-x:auto;border:1px solid #ddd;padding:4px;background:#fcfcfc}",
  ".legend span{display:inline-block;margin-right:1em}.legend i{display:inline-block;width:.8em;height:.8em;border-radius:50%;margin-right:.3em;vertical-align:middle}",
  "circle.differs{stroke:#c53030;stroke-width:3}tr.differs{background:#fdd;font-weight:bold}",
  ".events td:last-child code{word-break:break-all}.identities td:last-child{min-width:14em}.identities td:nth-child(2) code{word-break:break-all}",
  "details{margin:.3em 0}dt{font-family:ui-monospace,monospace;font-size:.9em}dd{margin:0 0 .3em 1.5em;color:#333}",
].join("");

const LANE_H = 40;
const LEFT = 110;

function timelineSvg(v: RunView, differs: ReadonlySet<number>): string {
  const n = v.items.length;
  const step = n === 0 ? 24 : Math.max(Math.min(60, 1400 / n), 0.05);
  const lanes = [0, ...v.invocations.map((i) => i.invocation)];
  const laneOf = new Map(lanes.map((inv, i) => [inv, i]));
  const width = Math.max(LEFT + Math.max(n, 1) * step + 30, 720);
  const height = lanes.length * LANE_H + 30;
  const x = (index: number) => LEFT + index * step + step / 2;
  const y = (inv: number) => 20 + (laneOf.get(inv) ?? 0) * LANE_H;
  const parts: string[] = [];
  for (const inv of lanes) {
    parts.push(svg.text(4, y(inv) + 4, inv === 0 ? "run" : `invocation ${inv}`));
    parts.push(svg.line(LEFT, y(inv), width - 10, y(inv), "#ddd"));
  }
  for (const inv of v.invocations)
    parts.push(
      svg.rect(x(inv.first) - step / 2, y(inv.invocation) - 8, (inv.last - inv.first + 1) * step, 16, {
        fill: "#e2e8f0",
        cls: "span",
        title: `invocation ${inv.invocation}: ${inv.ended}`,
        data: { invocation: inv.invocation },
      }),
    );
  for (const it of v.items)
    parts.push(
      svg.circle(x(it.index), y(it.invocation), Math.max(Math.min(step / 2 - 1, 6), 1.5), {
        fill: KIND_COLOR[it.kind],
        cls: `event ${it.kind}${differs.has(it.index) ? " differs" : ""}`,
        title: `event ${it.index}: ${it.label}`,
        data: { index: it.index, event: it.event },
      }),
      // the event's name under its mark when there is room for it
      ...(step >= 40 ? [svg.text(x(it.index), y(it.invocation) + (it.index % 2 === 0 ? 18 : 27), it.event, { anchor: "middle", size: 9, fill: "#444" })] : []),
    );
  parts.push(svg.text(LEFT, height - 6, `event order → (${n} events; no time axis: the guest's events carry no time)`, { fill: "#666" }));
  return svg.root(width, height, parts, `timeline of ${n} events`);
}

/**
 * The one strip drawn on a real axis: guest instructions, from 0 to the
 * run's count, with each checkpoint at the instruction count it was taken at
 * (both deterministic: a replay reaches them at the same counts).
 */
function instructionsSvg(v: RunView): string {
  const total = v.guest_instructions ?? Math.max(...v.checkpoints.map((c) => c.icount), 1);
  const w = 1000;
  const x = (i: number) => LEFT + (Math.min(i, total) / total) * (w - LEFT - 20);
  const parts = [
    svg.text(4, 24, "instructions"),
    svg.rect(LEFT, 14, w - LEFT - 20, 14, { fill: "#e2e8f0", title: `${total.toLocaleString("en-US")} guest instructions` }),
    ...v.checkpoints.flatMap((c, i) => [
      svg.rect(x(c.icount) - 1.5, 8, 3, 26, {
        fill: "#805ad5",
        cls: "checkpoint",
        title: `checkpoint ${c.name}: after ${c.after}, at instruction ${c.icount}`,
        data: { icount: c.icount, name: c.name },
      }),
      svg.text(x(c.icount), i % 2 === 0 ? 46 : 56, c.name, { anchor: "middle", size: 9, fill: "#553c9a" }),
    ]),
    svg.text(LEFT, 74, `guest instructions → 0 … ${total.toLocaleString("en-US")} (deterministic)`, { fill: "#666" }),
  ];
  return svg.root(w, 80, parts, "checkpoints by guest instruction count");
}

function streamCell(name: string, s: StreamShown, priv: boolean): string {
  const facts = `${name}: ${s.bytes ?? "?"} bytes ${digestCell(s.sha256)}`;
  if (!priv) return `<p>${facts} <span class="muted">(bytes are private; give --private to include an excerpt)</span></p>`;
  if (s.bytes === 0) return `<p>${facts}</p>`;
  if (s.excerpt === null) return `<p>${facts} <span class="muted">(no stream file in the run directory)</span></p>`;
  const left = s.bytes !== null && s.bytes > s.shown ? ` (first ${s.shown} of ${s.bytes} bytes)` : "";
  return `<p>${facts}${esc(left)}</p><pre class="excerpt">${esc(s.excerpt)}</pre>`;
}

function invocationSection(inv: InvocationShown, priv: boolean): string {
  return `<h3>invocation ${inv.invocation}</h3><p>${esc(inv.ended)}; events ${inv.first}–${inv.last}</p>${streamCell("stdout", inv.stdout, priv)}${streamCell("stderr", inv.stderr, priv)}`;
}

function identityRow(i: IdentityShown): string {
  const list = (xs: IdentityShown["covers"]) =>
    xs.length === 0 ? "<dd>nothing else is in the model</dd>" : xs.map(([f, why]) => `<dt>${esc(f)}</dt><dd>${esc(why)}</dd>`).join("");
  return `<tr class="identity"><td>${esc(i.name)}<br><code>${esc(i.tag)}</code></td><td><code>${esc(i.digest)}</code></td><td><details><summary>covers ${i.covers.length}</summary><dl>${list(i.covers)}</dl></details>${i.excludes.length > 0 ? `<details><summary>does not cover ${i.excludes.length}</summary><dl>${list(i.excludes)}</dl></details>` : ""}</td></tr>`;
}

function replaySection(r: ReplayPicture): string {
  const cls = r.verdict === "matched" ? "good" : "bad";
  const diff =
    r.difference === null
      ? ""
      : `<p class="replay-difference" data-pointer="${esc(r.difference.pointer)}">first difference at <code>${esc(r.difference.pointer)}</code>: recorded <code>${esc(r.difference.recorded)}</code>, replayed <code>${esc(r.difference.replayed)}</code>${r.difference.event !== null ? ` (event ${r.difference.event}, marked on the timeline)` : ""}</p>`;
  return `<div class="replay ${cls}" data-verdict="${esc(r.verdict)}"><p><b>replay ${r.n}</b> ${esc(VERDICT_WORDS[r.verdict])}${r.verdict === "matched" ? ": every event, assertion, the outcome and the status equal the record's" : ""}</p>${diff}${r.note !== null ? `<p class="muted">${esc(r.note)}</p>` : ""}</div>`;
}

const ms = (n: number | null) => (n === null ? "not recorded" : `${(n / 1000).toFixed(1)} s`);

export function runHtml(v: RunView): string {
  const s = v.summary;
  const differs = new Set(v.replays.flatMap((r) => (r.difference?.event != null ? [r.difference.event] : [])));
  const banner = s.check === "tampered" ? "bad" : s.status === "passed" || s.status === "completed" ? "good" : "bad";
  const faults = v.items.filter((i) => i.kind === "fault" || i.event === "input-rejected");
  const network =
    v.network === null
      ? "<p>no network facts recorded (a run without <code>run.network</code>)</p>"
      : `<table><thead><tr><th>port</th><th>responder</th><th>connections bound</th><th>guest connections refused</th></tr></thead><tbody>${v.network.responders
          .map((r) => `<tr><td>${r.port}</td><td>${esc(r.kind)}</td><td>${r.connections}</td><td>${r.refused}</td></tr>`)
          .join(
            "",
          )}</tbody></table><p class="muted">host facts of the record (network.json), not bound by the receipt; what the guest saw is in the replay log</p>`;
  const heading =
    v.replay === null
      ? `<h1>cairn run <code>${esc(s.run_id)}</code></h1>`
      : `<h1>cairn replay ${v.replay.n} of run <code>${esc(s.run_id)}</code></h1>
<p class="muted">the timeline, events, outputs and assertions below are the replay's (replays/${v.replay.n}); the status, check and identities are the record's; replayed status: <b>${esc(v.replay.status ?? "no result")}</b></p>`;
  const body = `${heading}
<div class="banner ${banner}"><b>${v.replay === null ? "status" : "recorded status"} ${esc(s.status)}</b>${s.check === "tampered" ? " (as run.json says; not to be believed)" : ""}; check <b>${esc(s.check)}</b>${s.problem !== null ? ` (${esc(s.problem)})` : ""}: ${esc(CHECK_MEANING[s.check])}</div>
<table class="facts"><tbody>
<tr><th>recorded</th><td>${esc(s.recorded_at)}</td></tr>
${s.branch === null ? "" : `<tr><th>branch</th><td id="branch">of run <code>${esc(s.branch.parent)}</code> at checkpoint <code>${esc(s.branch.checkpoint)}</code> (guest instruction ${esc(s.branch.icount.toLocaleString("en-US"))})</td></tr>\n`}<tr><th>workload</th><td>${esc(s.source_kind)} ${digestCell(s.workload)}</td></tr>
<tr><th>VM</th><td>${digestCell(s.vm_digest)} (${esc(s.root)} root, ${s.memory_mib} MiB)</td></tr>
<tr><th>guest instructions</th><td id="guest-instructions">${v.guest_instructions === null ? "not measured" : esc(v.guest_instructions.toLocaleString("en-US"))} <span class="muted">(deterministic: every replay executes exactly these)</span></td></tr>
<tr><th>host cost</th><td>${v.replay !== null ? "not recorded for a replay" : `${esc(ms(v.cost.wall_ms))} wall, ${esc(ms(v.cost.host_cpu_ms))} CPU <span class="muted">(the record on its host; not deterministic, never compared)</span>`}</td></tr>
<tr><th>outcome</th><td>${digestCell(s.outcome)}</td></tr>
</tbody></table>
<h2>Timeline</h2>
<p class="legend">${(["step", "outcome", "fault", "end"] as const).map((k) => `<span><i style="background:${KIND_COLOR[k]}"></i>${k}</span>`).join("")}</p>
<div class="timeline">${timelineSvg(v, differs)}</div>
${
  v.checkpoints.length === 0
    ? ""
    : `<h2>Checkpoints</h2>
<div class="timeline">${instructionsSvg(v)}</div>
<table class="checkpoints"><thead><tr><th>checkpoint</th><th>taken after</th><th>at guest instruction</th></tr></thead><tbody>${v.checkpoints.map((c) => `<tr><td>${esc(c.name)}</td><td>${esc(c.after)}</td><td>${esc(c.icount.toLocaleString("en-US"))}</td></tr>`).join("")}</tbody></table>`
}
<h2>Events</h2>
<table class="events"><thead><tr><th>#</th><th>invocation</th><th>kind</th><th>event</th><th>as recorded</th></tr></thead><tbody>
${v.items.map((i) => `<tr class="event-row${differs.has(i.index) ? " differs" : ""}" id="event-${i.index}"><td>${i.index}</td><td>${i.invocation}</td><td>${esc(i.kind)}</td><td>${esc(i.label)}</td><td><code>${esc(i.json)}</code></td></tr>`).join("\n")}
</tbody></table>
<h2>Invocations and outputs</h2>
${v.invocations.length === 0 ? "<p>no invocation</p>" : v.invocations.map((i) => invocationSection(i, v.private)).join("\n")}
<h2>Assertions</h2>
${v.assertions.length === 0 ? "<p>none</p>" : `<table><thead><tr><th>invocation</th><th>check</th><th>ok</th><th>expected</th><th>actual</th></tr></thead><tbody>${v.assertions.map((a) => `<tr class="${a.ok ? "good" : "bad"}"><td>${a.invocation}</td><td>${esc(a.check)}</td><td>${a.ok ? "yes" : "no"}</td><td><code>${esc(a.expected)}</code></td><td><code>${esc(a.actual)}</code></td></tr>`).join("")}</tbody></table>`}
<h2>Network and faults</h2>
${network}
${faults.length === 0 ? "<p>no fault events (launch failures, infrastructure failures, rejected input)</p>" : `<ul class="faults">${faults.map((f) => `<li>event ${f.index}: ${esc(f.label)}</li>`).join("")}</ul>`}
<h2>Identities</h2>
<p class="muted">what each covers and does not, in the words of its scope in the code (the same source as docs/identities.md)</p>
<table class="identities"><thead><tr><th>identity</th><th>digest</th><th>scope</th></tr></thead><tbody>
${v.identities.map(identityRow).join("\n")}
</tbody></table>
<h2>Replays</h2>
${v.replays.length === 0 ? "<p>none yet</p>" : v.replays.map(replaySection).join("\n")}
<p class="muted">written by cairn runs show --html${v.private ? "; includes private output excerpts" : ""}</p>`;
  return htmlPage({ title: v.replay === null ? `cairn run ${s.run_id}` : `cairn replay ${v.replay.n} of ${s.run_id}`, css: CSS, body });
}
