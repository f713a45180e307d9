/**
 * The lockfiles and profiles Strata's own repository writes, extracted at test
 * time from a local mirror of it (nothing of Strata's is copied into cairn):
 * YAML held in Go string literals of its tests (`*_test.go`), its example
 * profiles (`examples/*.yaml`), YAML files under `testdata/`, and the ```yaml
 * blocks of its README and docs. A text is kept when it parses as a YAML
 * mapping shaped like a lockfile (`profile` with `layers`, `base`,
 * `strata_version` or `profile_sha256`) or a profile (`name` with `base`);
 * equal texts are kept once, with every origin.
 */
import { execFileSync } from "node:child_process";
import { parseDocument } from "yaml";

export type StrataFileKind = "lockfile" | "profile";

export interface StrataCorpusFile {
  readonly kind: StrataFileKind;
  /** Where the text was found, "path:line" at the mirror's commit; more than one when the same text recurs. */
  readonly origins: readonly string[];
  readonly text: string;
}

function git(src: string, args: readonly string[]): string {
  return execFileSync("git", ["-C", src, ...args], { encoding: "utf8", maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "ignore"] });
}

/** Which of the mirror's paths are searched, and how. */
function sourceOf(path: string): "go" | "yaml" | "markdown" | undefined {
  if (path.endsWith("_test.go")) return "go";
  if (/^examples\/[^/]+\.ya?ml$/.test(path) || /(^|\/)testdata\/.+\.ya?ml$/.test(path)) return "yaml";
  if (path === "README.md" || /^docs\/.+\.md$/.test(path)) return "markdown";
  return undefined;
}

const GO_ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\", '"': '"', "'": "'", a: "\x07", b: "\b", f: "\f", v: "\v" };

/** Decodes the body of a Go interpreted string literal; undefined when it uses an escape this reader does not know. */
function goUnquote(body: string): string | undefined {
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c !== "\\") {
      out += c;
      continue;
    }
    const e = body[++i];
    if (e !== undefined && e in GO_ESCAPES) out += GO_ESCAPES[e];
    else if (e === "x" || e === "u" || e === "U") {
      const n = e === "x" ? 2 : e === "u" ? 4 : 8;
      const hex = body.slice(i + 1, i + 1 + n);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== n) return undefined;
      out += e === "x" ? String.fromCharCode(Number.parseInt(hex, 16)) : String.fromCodePoint(Number.parseInt(hex, 16));
      i += n;
    } else return undefined;
  }
  return out;
}

/** Every string literal of a Go source file, with the line it starts on. Comments and rune literals are skipped. */
export function goStringLiterals(source: string): { line: number; value: string }[] {
  const found: { line: number; value: string }[] = [];
  let line = 1;
  let i = 0;
  const advance = (to: number): void => {
    for (let k = i; k < to; k++) if (source[k] === "\n") line++;
    i = to;
  };
  while (i < source.length) {
    const c = source[i];
    if (c === "/" && source[i + 1] === "/") {
      const end = source.indexOf("\n", i);
      advance(end < 0 ? source.length : end);
    } else if (c === "/" && source[i + 1] === "*") {
      const end = source.indexOf("*/", i + 2);
      advance(end < 0 ? source.length : end + 2);
    } else if (c === "`") {
      const end = source.indexOf("`", i + 1);
      if (end < 0) break;
      found.push({ line, value: source.slice(i + 1, end) });
      advance(end + 1);
    } else if (c === '"' || c === "'") {
      let k = i + 1;
      while (k < source.length && source[k] !== c && source[k] !== "\n") k += source[k] === "\\" ? 2 : 1;
      if (c === '"') {
        const value = goUnquote(source.slice(i + 1, k));
        if (value !== undefined) found.push({ line, value });
      }
      advance(k + 1);
    } else advance(i + 1);
  }
  return found;
}

/** The ```yaml (or ```yml) fenced blocks of a Markdown text, with the line each body starts on. */
export function markdownYamlBlocks(text: string): { line: number; value: string }[] {
  const lines = text.split("\n");
  const found: { line: number; value: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*```\s*ya?ml\s*$/.test(lines[i] ?? "")) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end] ?? "")) end++;
    found.push({ line: start + 1, value: `${lines.slice(start, end).join("\n")}\n` });
    i = end;
  }
  return found;
}

/** Whether a text is a Strata lockfile or profile by its top-level keys (undefined when it is neither or not a YAML mapping). */
export function kindOf(text: string): StrataFileKind | undefined {
  let keys: Set<string>;
  try {
    const doc = parseDocument(text, { uniqueKeys: false });
    if (doc.errors.length > 0) return undefined;
    const top = doc.toJS() as unknown;
    if (top === null || typeof top !== "object" || Array.isArray(top)) return undefined;
    keys = new Set(Object.keys(top));
  } catch {
    return undefined;
  }
  if (keys.has("profile") && ["layers", "base", "strata_version", "profile_sha256"].some((k) => keys.has(k))) return "lockfile";
  // A profile names its base: Strata's Validate refuses one without (the docs' formation sketches have none).
  if (keys.has("name") && keys.has("base")) return "profile";
  return undefined;
}

/** The corpus at `commit` of the mirror `src`, in path order. */
export function strataCorpus(src: string, commit: string): StrataCorpusFile[] {
  const byText = new Map<string, { kind: StrataFileKind; origins: string[] }>();
  const paths = git(src, ["ls-tree", "-r", "--name-only", commit])
    .split("\n")
    .filter((p) => p !== "");
  for (const path of paths.sort()) {
    const how = sourceOf(path);
    if (how === undefined) continue;
    const text = git(src, ["show", `${commit}:${path}`]);
    const candidates = how === "go" ? goStringLiterals(text) : how === "markdown" ? markdownYamlBlocks(text) : [{ line: 1, value: text }];
    for (const { line, value } of candidates) {
      const kind = kindOf(value);
      if (kind === undefined) continue;
      const seen = byText.get(value);
      if (seen) seen.origins.push(`${path}:${line}`);
      else byText.set(value, { kind, origins: [`${path}:${line}`] });
    }
  }
  return [...byText].map(([text, { kind, origins }]) => ({ kind, origins, text }));
}
