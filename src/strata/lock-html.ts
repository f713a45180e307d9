/**
 * The lock pages: `lock diff A B --html OUT` and `lock explain LOCK --html
 * OUT`, each one self-contained HTML file built on the page kit
 * (core/html-page.ts: its escaper, its no-load no-script policy, its SVG
 * helpers). They show what the change model (lockfile-changes.ts) and the
 * explanation (lockfile-explain.ts) hold and nothing else: the stack of
 * layers in mount order as one bar per lockfile (a segment per layer, its
 * width by size), a row per layer with why it is there, a row per package
 * change the way `uv lock` lists them, and the other field changes with
 * environment values hidden as `lock diff` hides them.
 *
 * Every value here comes from a lockfile, which is hostile input (a package
 * or layer name, a `satisfied_by`, a formation label): all of it goes
 * through the kit's escaper, and rows carry `data-*` attributes so the
 * tests can find each change without reading the layout.
 */
import { digestCell, escapeHtml as esc, formatBytes, htmlPage, svg } from "../core/index.ts";
import type { LockDiff } from "./lockfile-diff.ts";
import type { LayerFacts } from "./lockfile-changes.ts";
import type { LockExplained } from "./lockfile-explain.ts";
import type { Lockfile } from "./lockfile.ts";

const CSS = [
  ".added{background:#e4f6e4}.removed{background:#fbe3e3}.changed{background:#fff2d6}",
  ".mark{font-family:ui-monospace,monospace;font-weight:bold;text-align:center}",
  ".why{margin:0;padding-left:1.1em}.legend span{display:inline-block;padding:0 .5em;margin-right:.4em;border:1px solid #ccc}",
  "figure{margin:.5em 0}figcaption{font-size:.9em;color:#444}",
].join("");

/** Segment fill by what happened to the layer. */
const FILL = { added: "#3a9a3a", removed: "#c84141", changed: "#e6a00f", same: "#7d9bb8" } as const;
type Tone = keyof typeof FILL;

const WIDTH = 760;
const MIN_SEGMENT = 6;

/** One bar: a segment per layer, bottom of the stack on the left, widths by size (each at least MIN_SEGMENT). */
function stackBar(label: string, layers: readonly { name: string; version: string; size: number; mount_order: number; tone: Tone }[]): string {
  const total = layers.reduce((n, l) => n + l.size, 0);
  const free = Math.max(WIDTH - MIN_SEGMENT * layers.length, 0);
  let x = 0;
  const parts: string[] = [];
  for (const l of layers) {
    const w = MIN_SEGMENT + (total > 0 ? (free * l.size) / total : free / Math.max(layers.length, 1));
    parts.push(
      svg.rect(x, 0, w - 1, 26, {
        fill: FILL[l.tone],
        title: `${l.mount_order}. ${l.name} ${l.version}: ${formatBytes(l.size)}`,
        data: { layer: l.name, tone: l.tone },
      }),
    );
    if (w > 60) parts.push(svg.text(x + 4, 17, `${l.name} ${l.version}`, { fill: "#fff", size: 11 }));
    x += w;
  }
  return `<figure>${svg.root(WIDTH, 26, parts, label)}<figcaption>${esc(label)}: ${layers.length} layer(s), ${esc(formatBytes(total))}, mount 1 on the left</figcaption></figure>`;
}

const LEGEND = `<p class="legend"><span style="background:${FILL.added};color:#fff">added</span><span style="background:${FILL.removed};color:#fff">removed</span><span style="background:${FILL.changed}">changed</span><span style="background:${FILL.same};color:#fff">unchanged</span></p>`;

/** A lockfile's layers bottom to top, each toned by `tone`. */
const stackOf = (l: Lockfile, tone: (name: string) => Tone) =>
  [...l.layers]
    .sort((a, b) => a.mount_order - b.mount_order)
    .map((x) => ({ name: x.name, version: x.version, size: x.size, mount_order: x.mount_order, tone: tone(x.name) }));

function whyCell(f: LayerFacts | null): string {
  if (f === null) return "";
  const refs = f.satisfied_by === "" ? ["(no satisfied_by)"] : [f.satisfied_by];
  return esc([...refs, ...(f.from_formation !== null ? [`formation ${f.from_formation}`] : [])].join("; "));
}

const MARK = { added: "+", removed: "-" } as const;
const markOf = (change: string): string => (change === "added" || change === "removed" ? MARK[change] : "~");
const toneOf = (change: string): "added" | "removed" | "changed" => (change === "added" || change === "removed" ? change : "changed");

/** The `lock diff` page: both stacks, then the layer, formation, default and package changes, then every other field change. */
export function lockDiffHtml(a: Lockfile, b: Lockfile, d: LockDiff, names: { readonly a: string; readonly b: string }): string {
  const byName = new Map(d.layers.map((l) => [l.name, l]));
  const tone = (name: string, side: "a" | "b"): Tone => {
    const c = byName.get(name);
    if (c === undefined) return "same";
    if (c.change === "added" || c.change === "removed") return side === "a" ? "removed" : "added";
    return "changed";
  };
  const stacks = (["a", "b"] as const)
    .map((side) => {
      const layers = stackOf(side === "a" ? a : b, (name) => tone(name, side));
      return stackBar(`${side}: ${side === "a" ? names.a : names.b}`, layers);
    })
    .join("\n");
  const idLine = (side: "a" | "b", id: string | null, problems: number) =>
    `<tr><th>${side}</th><td><code>${esc(side === "a" ? names.a : names.b)}</code></td><td>${id !== null ? `<code>${esc(id)}</code>` : esc(problems > 0 ? "invalid (no EnvironmentID)" : "unfrozen")}</td></tr>`;
  const problems = [...d.problems_a.map((p) => ["a", p] as const), ...d.problems_b.map((p) => ["b", p] as const)]
    .map(([side, p]) => `<li class="removed">${esc(side)} <code>${esc(p.path)}</code>: [${esc(p.code)}] ${esc(p.message)}</li>`)
    .join("");
  const layerRows = d.layers
    .map((l) => {
      const f = (x: LayerFacts | null, what: (y: LayerFacts) => string) => (x === null ? "" : esc(what(x)));
      return `<tr class="${toneOf(l.change)}" data-layer="${esc(l.name)}" data-change="${esc(l.change)}"><td class="mark">${markOf(l.change)}</td><td>${esc(l.name)}</td><td>${esc(l.change)}</td><td>${f(l.a, (x) => x.version)}</td><td>${f(l.b, (x) => x.version)}</td><td>${f(l.a, (x) => formatBytes(x.size))}</td><td>${f(l.b, (x) => formatBytes(x.size))}</td><td>${f(l.a, (x) => String(x.mount_order))}</td><td>${f(l.b, (x) => String(x.mount_order))}</td><td>${digestCell(l.a?.sha256)}</td><td>${digestCell(l.b?.sha256)}</td><td>${whyCell(l.b ?? l.a)}</td></tr>`;
    })
    .join("\n");
  const versionRows = (kind: string, xs: readonly { name: string; change: string; from: string | null; to: string | null }[]) =>
    xs
      .map(
        (x) =>
          `<tr class="${toneOf(x.change)}" data-${kind}="${esc(x.name)}" data-change="${esc(x.change)}"><td class="mark">${markOf(x.change)}</td><td>${esc(x.name)}</td><td>${esc(x.change)}</td><td>${esc(x.from)}</td><td>${esc(x.to)}</td></tr>`,
      )
      .join("\n");
  const packageRows = d.packages
    .map((p) => {
      const text =
        p.change === "added"
          ? `+ ${p.name}==${p.to}`
          : p.change === "removed"
            ? `- ${p.name}==${p.from}`
            : p.change === "version-changed"
              ? `~ ${p.name} ${p.from ?? "(any)"} → ${p.to ?? "(any)"}`
              : `~ ${p.name} ${p.to ?? p.from ?? ""} ${p.change}`;
      return `<tr class="${toneOf(p.change)}" data-package="${esc(`${p.set}/${p.name}`)}" data-change="${esc(p.change)}"><td>${esc(p.set)}</td><td><code>${esc(text)}</code></td><td>${esc(p.change)}</td><td>${digestCell(p.from_sha256)}</td><td>${digestCell(p.to_sha256)}</td></tr>`;
    })
    .join("\n");
  const setRows = [
    ...d.package_sets.map(
      (s) =>
        `<li class="${toneOf(s.change)}">set <code>${esc(s.set)}</code> ${esc(s.change)}${s.change === "target-changed" ? `: ${esc(s.from_target)} → ${esc(s.to_target)}` : ""}</li>`,
    ),
    ...d.requests.map(
      (r) =>
        `<li class="${toneOf(r.change)}">set <code>${esc(r.set)}</code>: request ${esc(r.name)} ${esc(r.change)} ${esc(r.from ?? "")} ${r.to !== null ? `→ ${esc(r.to)}` : ""}</li>`,
    ),
  ].join("");
  const modelled = /^\/(layers|packages|formations|defaults)(\/|$)/;
  const otherRows = d.changes
    .filter((c) => !modelled.test(c.path))
    .map(
      (c) =>
        `<tr class="${toneOf(c.change)}" data-field="${esc(c.path)}"><td class="mark">${markOf(c.change)}</td><td><code>${esc(c.path)}</code></td><td>${esc(c.a)}</td><td>${esc(c.b)}</td></tr>`,
    )
    .join("\n");
  const section = (title: string, rows: string, head: string, none: string) =>
    `<h2>${esc(title)}</h2>${rows === "" ? `<p class="muted">${esc(none)}</p>` : `<table><thead><tr>${head}</tr></thead><tbody>\n${rows}\n</tbody></table>`}`;
  const th = (...xs: string[]) => xs.map((x) => `<th>${esc(x)}</th>`).join("");
  return htmlPage({
    title: "cairn lock diff",
    css: CSS,
    body: `<h1>cairn lock diff</h1>
<table><tbody>${idLine("a", d.id_a, d.problems_a.length)}${idLine("b", d.id_b, d.problems_b.length)}</tbody></table>
<p id="verdict">${d.same_id ? "same EnvironmentID" : "different EnvironmentID"}</p>
${problems !== "" ? `<h2>problems</h2><ul>${problems}</ul>` : ""}
<h2>layers in mount order</h2>
${LEGEND}
${stacks}
${section("layer changes", layerRows, th("", "layer", "change", "a version", "b version", "a size", "b size", "a mount", "b mount", "a digest", "b digest", "why it is there"), "no layer changed")}
${section("formation changes", versionRows("formation", d.formations), th("", "formation", "change", "a", "b"), "no formation changed")}
${section("Lmod default changes", versionRows("default", d.defaults), th("", "default", "change", "a", "b"), "no default changed")}
${section("package changes", packageRows, th("set", "change", "kind", "a digest", "b digest"), "no package changed")}
${setRows !== "" ? `<ul>${setRows}</ul>` : ""}
${section("other changes", otherRows, th("", "field", "a", "b"), "no other field changed")}
<p class="muted">Environment values are never shown; layers are paired by name, package sets by manager and environment.</p>`,
  });
}

/** The `lock explain` page: the stack, a row per layer with why it is there, formations, package sets, caveats. */
export function lockExplainHtml(e: LockExplained, name: string): string {
  const bar = stackBar(
    name,
    e.layers.map((l) => ({ ...l, tone: "same" as const })),
  );
  const rows = e.layers
    .map(
      (l) =>
        `<tr data-layer="${esc(l.name)}"><td>${l.mount_order}</td><td>${esc(l.name)}</td><td>${esc(l.version)}</td><td>${esc(formatBytes(l.size))}</td><td>${digestCell(l.sha256)}</td><td><ul class="why">${l.why.map((w) => `<li>${esc(w)}</li>`).join("")}</ul></td><td>${esc(l.provides.join(", "))}</td><td>${l.requires.map((r) => `${esc(r.requirement)}: ${esc(r.providers.join(", ") || "no provider")}`).join("<br>")}</td></tr>`,
    )
    .join("\n");
  const formations = e.formations
    .map((f) => `<li>${esc(f.name)}${f.version ? `@${esc(f.version)}` : ""}: ${esc(f.members.join(", ") || "no member layer")}</li>`)
    .join("");
  const sets = e.package_sets
    .map(
      (s) =>
        `<h3>${esc(s.set)} <span class="muted">(${esc(s.state)}${s.target ? `, for ${esc(s.target)}` : ""})</span></h3><table><tbody>${s.packages
          .map(
            (p) =>
              `<tr data-package="${esc(`${s.set}/${p.name}`)}"><td><code>${esc(p.name)}${p.version !== null ? `==${esc(p.version)}` : ""}</code></td><td>${digestCell(p.sha256)}</td></tr>`,
          )
          .join("")}</tbody></table>`,
    )
    .join("\n");
  return htmlPage({
    title: "cairn lock explain",
    css: CSS,
    body: `<h1>cairn lock explain</h1>
<p><code>${esc(name)}</code>: profile <code>${esc(e.profile)}</code>, resolved ${esc(e.resolved_at)}</p>
<p>content identity: ${e.environment_id !== null ? `<code>${esc(e.environment_id)}</code>` : "unfrozen, none"}; EnvironmentID (Strata): ${e.strata_environment_id !== null ? `<code>${esc(e.strata_environment_id)}</code>` : "none"}</p>
<p>base ${esc(e.base.name)} ${esc(e.base.arch)} (${esc(e.base.source)}) ${digestCell(e.base.digest)}: ${esc(e.base.provides.join(", "))}</p>
<h2>layers in mount order</h2>
${bar}
<table><thead><tr><th>mount</th><th>layer</th><th>version</th><th>size</th><th>digest</th><th>why it is there</th><th>provides</th><th>requires (providers)</th></tr></thead><tbody>
${rows}
</tbody></table>
<h2>formations</h2>${formations !== "" ? `<ul>${formations}</ul>` : '<p class="muted">none</p>'}
<h2>package sets</h2>${sets !== "" ? sets : '<p class="muted">none</p>'}
<h2>what this lockfile's ID cannot promise</h2>${e.caveats.length ? `<ul>${e.caveats.map((c) => `<li>${esc(c)}</li>`).join("")}</ul>` : '<p class="muted">no caveats beyond the general ones</p>'}`,
  });
}
