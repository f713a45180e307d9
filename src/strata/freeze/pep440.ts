/**
 * PEP 440 versions and specifiers: the single definition of how `cairn freeze`
 * orders Python package versions and decides whether one satisfies a
 * requirement. It is not strata/version.ts on purpose: a pip index orders
 * `1.0.post1` above `1.0` and `1.0.dev1` below `1.0a1`, which the layer
 * version order does not, and a resolver that used the layer order would pick
 * a different release than pip would for the same requirement.
 *
 * Pre-releases (`a`, `b`, `rc`, `.dev`) never satisfy a specifier set unless
 * one of its clauses names a pre-release itself (`>=2.0b1`) or the caller asks
 * for them (PEP 440 "Handling of pre-releases"); `<V` never admits V's own
 * pre-releases and `>V` never admits V's post-releases, as the PEP says.
 */
import { CairnError } from "../../core/index.ts";

export interface Pep440Version {
  readonly text: string;
  readonly epoch: bigint;
  readonly release: readonly bigint[];
  /** ["a" | "b" | "rc", n] */
  readonly pre?: readonly [string, bigint];
  readonly post?: bigint;
  readonly dev?: bigint;
  readonly local?: readonly (string | bigint)[];
}

const VERSION_RE =
  /^\s*v?(?:(?<epoch>[0-9]+)!)?(?<release>[0-9]+(?:\.[0-9]+)*)(?<pre>[-_.]?(?<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?<pre_n>[0-9]+)?)?(?<post>(?:-(?<post_n1>[0-9]+))|(?:[-_.]?(?<post_l>post|rev|r)[-_.]?(?<post_n2>[0-9]+)?))?(?<dev>[-_.]?(?<dev_l>dev)[-_.]?(?<dev_n>[0-9]+)?)?(?:\+(?<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$/i;

const MAX_VERSION_TEXT = 128;

function preLetter(l: string): string {
  const s = l.toLowerCase();
  if (s === "alpha" || s === "a") return "a";
  if (s === "beta" || s === "b") return "b";
  return "rc"; // c, pre, preview, rc
}

/** Parses a PEP 440 version, or undefined when `text` is not one. */
export function parsePep440(text: string): Pep440Version | undefined {
  if (text.length > MAX_VERSION_TEXT) return undefined;
  const m = VERSION_RE.exec(text);
  if (m === null || m.groups === undefined) return undefined;
  const g = m.groups;
  const post = g.post_n1 ?? g.post_n2 ?? (g.post_l !== undefined ? "0" : undefined);
  return {
    text,
    epoch: BigInt(g.epoch ?? "0"),
    release: g.release!.split(".").map((x) => BigInt(x)),
    ...(g.pre_l !== undefined ? { pre: [preLetter(g.pre_l), BigInt(g.pre_n ?? "0")] as const } : {}),
    ...(post !== undefined ? { post: BigInt(post) } : {}),
    ...(g.dev_l !== undefined ? { dev: BigInt(g.dev_n ?? "0") } : {}),
    ...(g.local !== undefined
      ? {
          local: g.local
            .toLowerCase()
            .split(/[-_.]/)
            .map((p) => (/^[0-9]+$/.test(p) ? BigInt(p) : p)),
        }
      : {}),
  };
}

export function requirePep440(text: string, path: string): Pep440Version {
  const v = parsePep440(text);
  if (v === undefined) throw new CairnError("MODEL_VALUE", `${JSON.stringify(text.slice(0, 80))} is not a PEP 440 version`, { path });
  return v;
}

export function isPep440Prerelease(v: Pep440Version): boolean {
  return v.pre !== undefined || v.dev !== undefined;
}

function cmp(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareRelease(a: readonly bigint[], b: readonly bigint[]): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = cmp(a[i] ?? 0n, b[i] ?? 0n);
    if (c !== 0) return c;
  }
  return 0;
}

const PRE_ORDER: Record<string, number> = { a: 0, b: 1, rc: 2 };

/** Position of the pre-release part: a dev-only release sorts below every pre-release; no pre-release sorts above all. */
function preRank(v: Pep440Version): [number, number, bigint] {
  if (v.pre === undefined && v.post === undefined && v.dev !== undefined) return [-1, 0, 0n];
  if (v.pre === undefined) return [1, 0, 0n];
  return [0, PRE_ORDER[v.pre[0]]!, v.pre[1]];
}

function compareLocal(a: Pep440Version["local"], b: Pep440Version["local"]): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined || y === undefined) return x === undefined ? -1 : 1;
    if (typeof x !== typeof y) return typeof x === "bigint" ? 1 : -1; // numbers sort above strings
    const c = typeof x === "bigint" ? cmp(x, y as bigint) : x < (y as string) ? -1 : x > (y as string) ? 1 : 0;
    if (c !== 0) return c;
  }
  return 0;
}

/** THE PEP 440 order. `withLocal: false` compares public versions only. */
export function comparePep440(a: Pep440Version, b: Pep440Version, withLocal = true): number {
  let c = cmp(a.epoch, b.epoch) || compareRelease(a.release, b.release);
  if (c !== 0) return c;
  const pa = preRank(a);
  const pb = preRank(b);
  c = pa[0] - pb[0] || pa[1] - pb[1] || cmp(pa[2], pb[2]);
  if (c !== 0) return c;
  c = cmp(a.post ?? -1n, b.post ?? -1n);
  if (c !== 0) return c;
  // no dev part sorts above any dev part
  c = a.dev === undefined || b.dev === undefined ? (a.dev === b.dev ? 0 : a.dev === undefined ? 1 : -1) : cmp(a.dev, b.dev);
  if (c !== 0 || !withLocal) return c;
  return compareLocal(a.local, b.local);
}

const OPERATORS = ["===", "~=", "==", "!=", "<=", ">=", "<", ">"] as const;
type Operator = (typeof OPERATORS)[number];

export interface Pep440Clause {
  readonly op: Operator;
  readonly text: string;
  /** `==1.2.*` / `!=1.2.*` */
  readonly wildcard: boolean;
  readonly version?: Pep440Version;
}

export interface Pep440Specifier {
  readonly text: string;
  readonly clauses: readonly Pep440Clause[];
}

function specError(text: string, path: string, why: string): CairnError {
  return new CairnError("MODEL_VALUE", `${JSON.stringify(text.slice(0, 120))} is not a PEP 440 version specifier: ${why}`, {
    path,
    hint: "write clauses like >=1.2,<2 or ==1.4.* or ~=2.1",
  });
}

/** Parses `>=1.2, <2` (an empty text is the empty specifier: any final release). */
export function parseSpecifier(text: string, path = ""): Pep440Specifier {
  const clauses: Pep440Clause[] = [];
  for (const raw of text.split(",")) {
    const part = raw.trim();
    if (part === "") {
      if (text.trim() === "") continue;
      throw specError(text, path, "an empty clause");
    }
    const op = OPERATORS.find((o) => part.startsWith(o));
    if (op === undefined) throw specError(text, path, `clause ${JSON.stringify(part)} has no operator`);
    const vtext = part.slice(op.length).trim();
    if (op === "===") {
      clauses.push({ op, text: vtext, wildcard: false });
      continue;
    }
    const wildcard = vtext.endsWith(".*");
    if (wildcard && op !== "==" && op !== "!=") throw specError(text, path, `${op} does not take a .* suffix`);
    const version = parsePep440(wildcard ? vtext.slice(0, -2) : vtext);
    if (version === undefined) throw specError(text, path, `${JSON.stringify(vtext)} is not a version`);
    if (op === "~=" && version.release.length < 2) throw specError(text, path, "~= needs at least two release segments");
    if (version.local !== undefined && op !== "==" && op !== "!=") throw specError(text, path, `${op} does not take a local version`);
    clauses.push({ op, text: vtext, wildcard, version });
  }
  return { text: text.trim(), clauses };
}

function prefixMatch(candidate: Pep440Version, prefix: Pep440Version): boolean {
  if (candidate.epoch !== prefix.epoch) return false;
  const n = prefix.release.length;
  for (let i = 0; i < n; i++) if ((candidate.release[i] ?? 0n) !== prefix.release[i]) return false;
  if (prefix.pre === undefined && prefix.post === undefined && prefix.dev === undefined) return true;
  // a prefix with a pre/post/dev part must match it exactly, with the release padded to the same length
  const padded = { ...candidate, release: candidate.release.slice(0, n), local: undefined };
  return candidate.release.slice(n).every((x) => x === 0n) && comparePep440(padded, prefix, false) === 0;
}

function sameRelease(a: Pep440Version, b: Pep440Version): boolean {
  return a.epoch === b.epoch && compareRelease(a.release, b.release) === 0;
}

/** Does `v` satisfy one clause (pre-release handling aside)? */
export function clauseMatches(clause: Pep440Clause, v: Pep440Version): boolean {
  const s = clause.version;
  switch (clause.op) {
    case "===":
      return v.text.trim().toLowerCase() === clause.text.toLowerCase();
    case "==":
    case "!=": {
      const eq = clause.wildcard
        ? prefixMatch(v, s!)
        : comparePep440(s!.local === undefined ? { ...v, local: undefined } : v, s!, s!.local !== undefined) === 0;
      return clause.op === "==" ? eq : !eq;
    }
    case "~=": {
      const prefix = { ...s!, release: s!.release.slice(0, -1), pre: undefined, post: undefined, dev: undefined };
      return comparePep440(v, s!, false) >= 0 && prefixMatch(v, prefix);
    }
    case "<=":
      return comparePep440(v, s!, false) <= 0;
    case ">=":
      return comparePep440(v, s!, false) >= 0;
    case "<":
      if (comparePep440(v, s!, false) >= 0) return false;
      return isPep440Prerelease(s!) || !isPep440Prerelease(v) || !sameRelease(v, s!);
    case ">":
      if (comparePep440(v, s!, false) <= 0) return false;
      if (v.local !== undefined && comparePep440({ ...v, local: undefined }, s!, false) === 0) return false;
      return s!.post !== undefined || v.post === undefined || !sameRelease(v, s!);
  }
}

/** True when a clause of the specifier names a pre-release, which lets the set admit pre-releases (PEP 440). */
export function specifierAsksForPrereleases(spec: Pep440Specifier): boolean {
  return spec.clauses.some((c) => c.op !== "!=" && c.version !== undefined && isPep440Prerelease(c.version));
}

/** True when the specifier pins one exact version (`==1.2.3` or `===1.2.3`): the only way a yanked release is chosen (PEP 592). */
export function isExactPin(spec: Pep440Specifier): boolean {
  return spec.clauses.some((c) => c.op === "===" || (c.op === "==" && !c.wildcard));
}

export function specifierMatches(spec: Pep440Specifier, v: Pep440Version, allowPrereleases: boolean): boolean {
  if (isPep440Prerelease(v) && !allowPrereleases && !specifierAsksForPrereleases(spec)) return false;
  return spec.clauses.every((c) => clauseMatches(c, v));
}
