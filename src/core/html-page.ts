/**
 * The one page kit for every HTML file cairn writes (`campaign report
 * --html`, `runs show --html`, `lock diff --html`): escaping, a
 * self-contained page shell and a few SVG helpers.
 *
 * A page is opened from disk, often long after it was written and on a
 * machine without a network, and what it shows is shaped by hostile input (a
 * workload's output, a mismatch's message, a package name). So:
 *
 *   - every value goes through `esc` (text and attribute values alike: it
 *     escapes both quote kinds), and this is the only escaper in src/
 *     (tests/architecture/conventions.test.ts);
 *   - the page has no script, no font, no image and no style from elsewhere,
 *     and its Content-Security-Policy says so to the browser too
 *     (`PAGE_CSP`): if an escaping bug let markup through, the browser would
 *     still load nothing and run nothing;
 *   - pictures are plain inline SVG drawn here, not a chart library: the
 *     pictures are timelines and bars, a few dozen lines of SVG, while a
 *     library would add a dependency (and its script) to every page and to
 *     the package, and would need `script-src` opened in the policy.
 */

/** Escapes text for HTML element content and for double- or single-quoted attribute values. */
export function esc(v: unknown): string {
  return String(v ?? "")
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

/**
 * The policy every page carries: nothing is loaded from anywhere (no
 * network, no other file), inline style is allowed, images only as `data:`
 * URLs, and no script runs at all.
 */
export const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/** The style every page shares; a page adds its own rules after it. */
const BASE_CSS = [
  "body{font-family:system-ui,sans-serif;margin:1em 1.5em;color:#111;background:#fff}",
  "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}",
  "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}",
  "code,pre{font-family:ui-monospace,monospace;font-size:.9em}pre{background:#f6f6f6;padding:.5em;overflow:auto;max-height:20em}",
  ".bad{background:#fdd}.good{background:#efe}.muted{color:#666}",
].join("");

export interface PageOptions {
  /** The page's title (escaped here). */
  readonly title: string;
  /** The body's HTML, already built from escaped values. */
  readonly body: string;
  /** Extra CSS rules for this page (a constant of the page's module, never input). */
  readonly css?: string;
}

/** One self-contained HTML document: charset, the policy, the title, the shared and the page's style, the body. */
export function htmlPage(p: PageOptions): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${PAGE_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(p.title)}</title>
<style>${BASE_CSS}${p.css ?? ""}</style>
</head><body>
${p.body}
</body></html>
`;
}

/** A digest's first 12 hex digits, for a cell whose title holds the whole digest. */
export function shortDigest(d: string | null | undefined): string {
  return typeof d === "string" ? d.replace(/^[a-z0-9]+:/, "").slice(0, 12) : "";
}

/** `<code title="full">short</code>` for a digest; empty for none. */
export function digestCell(d: string | null | undefined): string {
  return typeof d === "string" ? `<code title="${esc(d)}">${esc(shortDigest(d))}</code>` : "";
}

/** Attributes of an SVG element, escaped; undefined values are left out. */
function attrs(a: Readonly<Record<string, string | number | undefined>>): string {
  return Object.entries(a)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${esc(typeof v === "number" ? round(v) : v)}"`)
    .join("");
}

/** Coordinates to two decimals: enough for a screen, and the page text stays the same on every host. */
function round(n: number): string {
  return Number.isFinite(n) ? String(Math.round(n * 100) / 100) : "0";
}

export const svg = {
  /** An inline SVG of the given size holding `children` (already-built SVG elements). */
  root(width: number, height: number, children: readonly string[], label: string): string {
    return `<svg${attrs({ width, height, viewBox: `0 0 ${round(width)} ${round(height)}`, role: "img", "aria-label": label })}>\n${children.join("\n")}\n</svg>`;
  },
  /** A rectangle; `title` becomes its tooltip, `cls` and `data` its class and data-* attributes. */
  rect(
    x: number,
    y: number,
    width: number,
    height: number,
    o: { fill?: string; cls?: string; title?: string; data?: Readonly<Record<string, string | number>> } = {},
  ): string {
    const data = Object.fromEntries(Object.entries(o.data ?? {}).map(([k, v]) => [`data-${k}`, v]));
    const a = attrs({ x, y, width: Math.max(width, 0), height, fill: o.fill, class: o.cls, ...data });
    return o.title === undefined ? `<rect${a}/>` : `<rect${a}><title>${esc(o.title)}</title></rect>`;
  },
  /** A line from (x1, y1) to (x2, y2). */
  line(x1: number, y1: number, x2: number, y2: number, stroke = "#999"): string {
    return `<line${attrs({ x1, y1, x2, y2, stroke })}/>`;
  },
  /** Text at (x, y), escaped. */
  text(x: number, y: number, content: string, o: { anchor?: "start" | "middle" | "end"; size?: number; fill?: string } = {}): string {
    return `<text${attrs({ x, y, "text-anchor": o.anchor, "font-size": o.size ?? 11, fill: o.fill })}>${esc(content)}</text>`;
  },
  /** A circle (an instant on a timeline); `title` becomes its tooltip. */
  circle(cx: number, cy: number, r: number, o: { fill?: string; cls?: string; title?: string; data?: Readonly<Record<string, string | number>> } = {}): string {
    const data = Object.fromEntries(Object.entries(o.data ?? {}).map(([k, v]) => [`data-${k}`, v]));
    const a = attrs({ cx, cy, r, fill: o.fill, class: o.cls, ...data });
    return o.title === undefined ? `<circle${a}/>` : `<circle${a}><title>${esc(o.title)}</title></circle>`;
  },
};
