/**
 * PEP 508 dependency specifiers, as a wheel's METADATA writes them in
 * `Requires-Dist` (`urllib3<3,>=1.21.1; python_version >= "3.8"`), and the
 * environment markers they carry, evaluated for the lock's target (its Python
 * and platform), never for the host running cairn: a freeze on a laptop must
 * pin what the environment's Python installs.
 *
 * Names are compared normalized (PEP 503: lowercase, runs of `-_.` become
 * `-`), so `Foo_Bar` and `foo-bar` are one project. A direct reference
 * (`name @ https://...`) is refused: it names no index archive to pin.
 */
import { CairnError } from "../../core/index.ts";
import { parsePep440, parseSpecifier, clauseMatches, type Pep440Specifier } from "./pep440.ts";

export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, "-");
}

export const PROJECT_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,198}[A-Za-z0-9])?$/;

export interface PipRequirement {
  readonly text: string;
  readonly name: string;
  readonly extras: readonly string[];
  readonly specifier: Pep440Specifier;
  readonly marker?: Marker;
}

/** The values markers are evaluated against. */
export type MarkerEnvironment = Readonly<Record<string, string>>;

export type Marker = { kind: "and" | "or"; left: Marker; right: Marker } | { kind: "cmp"; left: Operand; op: string; right: Operand };
type Operand = { var: string } | { str: string };

const MARKER_VARS = new Set([
  "python_version",
  "python_full_version",
  "os_name",
  "sys_platform",
  "platform_release",
  "platform_system",
  "platform_version",
  "platform_machine",
  "platform_python_implementation",
  "implementation_name",
  "implementation_version",
  "extra",
  "os.name",
  "sys.platform",
  "platform.version",
  "platform.machine",
  "platform.python_implementation",
  "python_implementation",
]);
const VERSION_VARS = new Set(["python_version", "python_full_version", "implementation_version", "platform_release"]);

function refuse(text: string, path: string, why: string): never {
  throw new CairnError("MODEL_VALUE", `${JSON.stringify(text.slice(0, 160))} is not a PEP 508 requirement: ${why}`, {
    path,
    hint: 'write NAME, NAME>=1.0 or NAME[extra]>=1.0; python_version >= "3.9"',
  });
}

function tokenizeMarker(text: string, path: string, full: string): string[] {
  const out: string[] = [];
  const re = /\s*(?:(\(|\))|('[^']*'|"[^"]*")|(===|==|!=|<=|>=|~=|<|>)|(not\s+in\b|in\b|and\b|or\b)|([A-Za-z_][A-Za-z0-9_.]*))/y;
  let i = 0;
  while (i < text.length) {
    if (/^\s*$/.test(text.slice(i))) break;
    re.lastIndex = i;
    const m = re.exec(text);
    if (m === null) refuse(full, path, `cannot read the marker at ${JSON.stringify(text.slice(i, i + 20))}`);
    out.push((m[1] ?? m[2] ?? m[3] ?? m[4]?.replace(/\s+/, " ") ?? m[5])!);
    i = re.lastIndex;
  }
  return out;
}

function parseMarker(text: string, path: string, full: string): Marker {
  const toks = tokenizeMarker(text, path, full);
  let i = 0;
  const operand = (): Operand => {
    const t = toks[i++];
    if (t === undefined) refuse(full, path, "the marker ends early");
    if (t.startsWith('"') || t.startsWith("'")) return { str: t.slice(1, -1) };
    if (!MARKER_VARS.has(t)) refuse(full, path, `unknown marker variable ${JSON.stringify(t)}`);
    return { var: t.replace(".", "_") };
  };
  const expr = (): Marker => {
    if (toks[i] === "(") {
      i++;
      const m = or();
      if (toks[i++] !== ")") refuse(full, path, "an unclosed parenthesis");
      return m;
    }
    const left = operand();
    const op = toks[i++];
    if (op === undefined || !["===", "==", "!=", "<=", ">=", "~=", "<", ">", "in", "not in"].includes(op))
      refuse(full, path, "a marker comparison without operator");
    return { kind: "cmp", left, op, right: operand() };
  };
  const and = (): Marker => {
    let m = expr();
    while (toks[i] === "and") {
      i++;
      m = { kind: "and", left: m, right: expr() };
    }
    return m;
  };
  const or = (): Marker => {
    let m = and();
    while (toks[i] === "or") {
      i++;
      m = { kind: "or", left: m, right: and() };
    }
    return m;
  };
  const m = or();
  if (i !== toks.length) refuse(full, path, `unexpected ${JSON.stringify(toks[i])} in the marker`);
  return m;
}

function compareMarker(op: string, l: string, r: string, versionish: boolean): boolean {
  if (op === "in") return r.includes(l);
  if (op === "not in") return !r.includes(l);
  const lv = versionish ? parsePep440(l) : undefined;
  if (lv !== undefined && op !== "===") {
    try {
      const spec = parseSpecifier(`${op}${r}`);
      return spec.clauses.every((c) => clauseMatches(c, lv));
    } catch {
      // not a version on the right: fall through to a string comparison
    }
  }
  switch (op) {
    case "==":
    case "===":
      return l === r;
    case "!=":
      return l !== r;
    default:
      // PEP 508: a comparison the version rules cannot make falls back to the operator on strings
      return op === "<" ? l < r : op === "<=" ? l <= r : op === ">" ? l > r : op === ">=" ? l >= r : false;
  }
}

export function evaluateMarker(m: Marker, env: MarkerEnvironment): boolean {
  if (m.kind !== "cmp")
    return m.kind === "and" ? evaluateMarker(m.left, env) && evaluateMarker(m.right, env) : evaluateMarker(m.left, env) || evaluateMarker(m.right, env);
  const value = (o: Operand): string => ("str" in o ? o.str : (env[o.var] ?? ""));
  const isExtra = ("var" in m.left && m.left.var === "extra") || ("var" in m.right && m.right.var === "extra");
  let l = value(m.left);
  let r = value(m.right);
  if (isExtra) {
    l = normalizeName(l);
    r = normalizeName(r);
  }
  const versionish = ("var" in m.left && VERSION_VARS.has(m.left.var)) || ("var" in m.right && VERSION_VARS.has(m.right.var));
  return compareMarker(m.op, l, r, versionish);
}

/** Parses one PEP 508 requirement (`path` names where it came from, for the error). */
export function parseRequirementText(text: string, path = ""): PipRequirement {
  if (text.length > 4096) refuse(text, path, "longer than 4096 characters");
  const semi = text.indexOf(";");
  const head = (semi < 0 ? text : text.slice(0, semi)).trim();
  const markerText = semi < 0 ? undefined : text.slice(semi + 1).trim();
  const m = /^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?\s*(.*)$/s.exec(head);
  if (m === null || !PROJECT_NAME.test(m[1]!)) refuse(text, path, "no project name");
  let rest = m[3]!.trim();
  if (rest.startsWith("@")) refuse(text, path, "a direct URL reference names no index archive to pin");
  if (rest.startsWith("(") && rest.endsWith(")")) rest = rest.slice(1, -1).trim();
  const extras = (m[2] ?? "")
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "");
  for (const e of extras) if (!PROJECT_NAME.test(e)) refuse(text, path, `extra ${JSON.stringify(e)} is not a name`);
  let specifier: Pep440Specifier;
  try {
    specifier = parseSpecifier(rest, path);
  } catch (e) {
    refuse(text, path, e instanceof Error ? e.message : String(e));
  }
  return {
    text: text.trim(),
    name: normalizeName(m[1]!),
    extras: extras.map(normalizeName),
    specifier,
    ...(markerText !== undefined && markerText !== "" ? { marker: parseMarker(markerText, path, text) } : {}),
  };
}

/** The marker environment of a CPython `python` (X.Y or X.Y.Z) on Linux `machine`. */
export function linuxMarkerEnvironment(python: string, machine: string): MarkerEnvironment {
  const parts = python.split(".");
  const full = parts.length >= 3 ? python : `${parts[0]}.${parts[1] ?? "0"}.0`;
  return {
    python_version: `${parts[0]}.${parts[1] ?? "0"}`,
    python_full_version: full,
    implementation_version: full,
    os_name: "posix",
    sys_platform: "linux",
    platform_system: "Linux",
    platform_machine: machine,
    platform_python_implementation: "CPython",
    python_implementation: "CPython",
    implementation_name: "cpython",
    platform_release: "",
    platform_version: "",
  };
}
