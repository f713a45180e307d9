/**
 * Strict YAML reading (YAML 1.2 core schema, `yaml` document API) into the
 * same null-prototype models as JSON. Refused, each with its JSON pointer:
 * syntax errors and warnings, duplicate keys, non-string keys, `__proto__`
 * keys, aliases and anchors (a small file must not expand into a large model),
 * custom tags, null list entries (a bare `-`, or the dash a commented-out
 * entry leaves behind), non-finite numbers and unsafe integers, multiple
 * documents, lone surrogates and invalid UTF-8.
 */
import { createRequire } from "node:module";
import type { Node as YamlNode } from "yaml";

type YamlModule = typeof import("yaml");
let loaded: YamlModule | undefined;
/** The yaml package, loaded at the first YAML read or written, not at import: commands that read no YAML never pay its ~25 ms load. */
function yaml(): YamlModule {
  loaded ??= createRequire(import.meta.url)("yaml") as YamlModule;
  return loaded;
}
import { CairnError, type ErrorCode, type Issue } from "./errors.ts";
import { escapePointer, hasLoneSurrogate } from "./jcs.ts";
import { decodeUtf8, type JsonModel, type JsonObject } from "./json.ts";
import { checkLimit, FIXED_LIMIT_HINT } from "./limits.ts";

function where(text: string, node: { range?: [number, number, number] | null } | null | undefined): string {
  const offset = node?.range?.[0];
  if (offset === undefined) return "";
  let line = 1;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) line++;
  return ` (line ${line})`;
}

/** Records one problem and goes on, so one refusal lists every problem in the file, each with its pointer. */
function refuse(issues: Issue[], code: ErrorCode, message: string, path: string): null {
  issues.push({ code, path, message });
  return null;
}

function convert(node: unknown, text: string, path: string, issues: Issue[]): JsonModel {
  if (yaml().isAlias(node)) {
    return refuse(issues, "YAML_UNSUPPORTED", "aliases are refused", path);
  }
  const anchored = node as { anchor?: string; tag?: string } | null;
  if (anchored?.anchor) {
    return refuse(issues, "YAML_UNSUPPORTED", "anchors are refused", path);
  }
  if (yaml().isMap(node)) {
    if (node.tag && node.tag !== "tag:yaml.org,2002:map") {
      return refuse(issues, "YAML_UNSUPPORTED", `a custom tag is refused${where(text, node)}`, path);
    }
    const out: JsonObject = Object.create(null) as JsonObject;
    for (const pair of node.items) {
      if (!yaml().isPair(pair)) {
        refuse(issues, "YAML_SYNTAX", "malformed mapping entry", path);
        continue;
      }
      const keyNode = pair.key;
      if (!yaml().isScalar(keyNode) || typeof keyNode.value !== "string") {
        refuse(issues, "YAML_UNSUPPORTED", `mapping keys must be strings${where(text, keyNode as YamlNode)}`, path);
        continue;
      }
      const key = keyNode.value;
      const childPath = `${path}/${escapePointer(key)}`;
      if (key === "__proto__") {
        refuse(issues, "JSON_PROTO_KEY", 'a "__proto__" key is refused (prototype smuggling)', childPath);
        continue;
      }
      if (Object.hasOwn(out, key)) {
        refuse(issues, "JSON_DUPLICATE_KEY", `duplicate key "${key}"${where(text, keyNode)}`, childPath);
        continue;
      }
      out[key] = convert(pair.value, text, childPath, issues);
    }
    return out;
  }
  if (yaml().isSeq(node)) {
    if (node.tag && node.tag !== "tag:yaml.org,2002:seq") {
      return refuse(issues, "YAML_UNSUPPORTED", `a custom tag is refused${where(text, node)}`, path);
    }
    return node.items.map((item, i) => {
      const itemPath = `${path}/${i}`;
      if (item === null || (yaml().isScalar(item) && item.value === null)) {
        return refuse(issues, "MODEL_NULL_ENTRY", `list entry ${i} is empty (a bare "-")`, itemPath);
      }
      return convert(item, text, itemPath, issues);
    });
  }
  if (node === null || node === undefined) return null;
  if (yaml().isScalar(node)) {
    const v = node.value;
    if (v === null || typeof v === "boolean") return v;
    if (typeof v === "string") {
      if (hasLoneSurrogate(v)) return refuse(issues, "JSON_STRING", "string holds a lone surrogate", path);
      return v;
    }
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return refuse(issues, "JSON_NUMBER", "number is not finite", path);
      if (Number.isInteger(v) && !Number.isSafeInteger(v)) {
        return refuse(issues, "JSON_NUMBER", "integer is outside the safe range ±(2^53−1)", path);
      }
      return v;
    }
    if (typeof v === "bigint") {
      // intAsBigInt keeps unsafe integers exact so they can be refused, not rounded.
      if (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(v);
      return refuse(issues, "JSON_NUMBER", "integer is outside the safe range ±(2^53−1)", path);
    }
    // the tag itself is source text (`!hunter2`): name the kind, not the tag
    return refuse(issues, "YAML_UNSUPPORTED", `unsupported scalar (${node.tag === undefined ? typeof v : "a custom tag"})${where(text, node)}`, path);
  }
  return refuse(issues, "YAML_UNSUPPORTED", "unsupported YAML node", path);
}

/**
 * An upper estimate of the nesting depth of a YAML text: indentation levels
 * plus flow brackets (outside quoted scalars and comments). The `yaml` parser
 * recurses; deep flow nesting exhausts memory in the process instead of
 * throwing, so this is checked first against the named limit `yaml_depth`.
 */
export function yamlNestingDepth(text: string): number {
  let max = 0;
  const indents: number[] = [];
  // Open flow brackets carry over line ends: `[` on each of 10,000 lines is
  // 10,000 levels deep, however the lines are indented.
  let open = 0;
  for (const line of text.split("\n")) {
    const body = line.trimStart();
    if (body === "" || body.startsWith("#")) continue;
    const indent = line.length - body.length;
    while (indents.length > 0 && indents[indents.length - 1]! >= indent) indents.pop();
    indents.push(indent);
    let block = 0;
    let deepest = open;
    let quote = "";
    for (let i = 0; i < body.length; i++) {
      const c = body[i]!;
      if (quote === '"') {
        if (c === "\\") i++;
        else if (c === '"') quote = "";
      } else if (quote === "'") {
        if (c === "'") quote = "";
      } else if (c === '"' || c === "'") quote = c;
      else if (c === "#" && (i === 0 || body[i - 1] === " ")) break;
      else if (c === "[" || c === "{") deepest = Math.max(deepest, ++open);
      else if (c === "]" || c === "}") open = Math.max(0, open - 1);
      else if ((c === "-" || c === ":") && (body[i + 1] === " " || i + 1 === body.length)) block++;
    }
    max = Math.max(max, indents.length + block + deepest);
  }
  return max;
}

/**
 * Default bound on the nodes of one YAML document (limit name `yaml_nodes`).
 * The `yaml` library's document tree costs about 1 KiB a node (a 16 MiB
 * lockfile of `[a,a,...]` took 4.5 GB and aborted): 500,000 nodes stay
 * within the 1 GiB budget of docs/host-safety.md.
 */
export const DEFAULT_YAML_NODES = 500_000;

/**
 * An upper estimate of the nodes of a YAML text without parsing it: each
 * line holds at most one block node plus one per flow separator (`,` `[`
 * `{` `:`) and block indicator (`- `); quoted text is counted too, which
 * only errs high.
 */
export function yamlNodeEstimate(text: string): number {
  let nodes = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a || c === 0x2c || c === 0x5b || c === 0x7b || c === 0x3a || c === 0x2d) nodes++;
  }
  return nodes;
}

/** Default bound on YAML nesting (limit name `yaml_depth`). */
export const DEFAULT_YAML_DEPTH = 256;

/** The kind of a parser problem in words, from its code alone (e.g. BAD_INDENT → "bad indent"). */
function problemKind(code: string): string {
  return /^[A-Z_]+$/.test(code) ? code.toLowerCase().replaceAll("_", " ") : "syntax error";
}

/** " at line L, column C" of a source offset (no source text). */
function position(text: string, offset: number | undefined): string {
  if (offset === undefined || offset < 0) return "";
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return ` at line ${line}, column ${offset - lineStart + 1}`;
}

/** Parses one YAML document strictly into a null-prototype model; refuses it listing every problem. */
export function parseYamlText(text: string, source = "input", maxDepth = DEFAULT_YAML_DEPTH): JsonModel {
  const { model, issues } = readYamlText(text, source, maxDepth);
  if (issues.length === 1) throw new CairnError(issues[0]!.code, `${source}: ${issues[0]!.message}`, { path: issues[0]!.path, issues });
  if (issues.length > 1) {
    const lines = issues.map((i) => `  ${i.path || "/"}: ${i.message}`).join("\n");
    throw new CairnError(issues[0]!.code, `${source}: ${issues.length} problem(s)\n${lines}`, { path: issues[0]!.path, issues });
  }
  return model;
}

/**
 * Reads one YAML document strictly, returning the model with the problems
 * found in it instead of refusing: each refused node (a null list entry, an
 * alias, a custom tag, a bad number) is `null` in the model and an issue with
 * its pointer, and a duplicate key keeps its first value. A caller that
 * checks the model further (a profile) reports these with its own issues, so
 * one bare `-` does not hide every other problem of the file. A document that
 * does not parse at all, or is over a limit, is still refused at once.
 */
export function readYamlText(text: string, source = "input", maxDepth = DEFAULT_YAML_DEPTH): { model: JsonModel; issues: Issue[] } {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  checkLimit("yaml_nodes", yamlNodeEstimate(text), DEFAULT_YAML_NODES, "", "count", FIXED_LIMIT_HINT);
  checkLimit("yaml_depth", yamlNestingDepth(text), maxDepth, "", "count", FIXED_LIMIT_HINT);
  const docs = yaml().parseAllDocuments(text, {
    version: "1.2",
    schema: "core",
    uniqueKeys: false, // duplicates are found in convert, each with its pointer, all of them
    intAsBigInt: true,
    strict: true,
    prettyErrors: false,
    customTags: [],
    resolveKnownTags: false,
  });
  if (!Array.isArray(docs)) {
    throw new CairnError("YAML_SYNTAX", `${source}: not a YAML stream`, { path: "" });
  }
  if (docs.length !== 1) {
    throw new CairnError("YAML_SYNTAX", `${source}: expected exactly one YAML document, found ${docs.length}`, { path: "" });
  }
  const doc = docs[0]!;
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) {
    const code = problem.code === "DUPLICATE_KEY" ? "JSON_DUPLICATE_KEY" : problem.code === "TAG_RESOLVE_FAILED" ? "YAML_UNSUPPORTED" : "YAML_SYNTAX";
    // The parser's own message quotes the source ("Unresolved tag: !hunter2"),
    // and an unquoted password beginning with !, | or > is exactly such a
    // source: keep the kind and the position, never the text.
    throw new CairnError(code, `${source}: ${problemKind(problem.code)}${position(text, problem.pos?.[0])}`, { path: "" });
  }
  const issues: Issue[] = [];
  const model = convert(doc.contents, text, "", issues);
  return { model, issues };
}

export function parseYamlBytes(bytes: Uint8Array, source = "input"): JsonModel {
  return parseYamlText(decodeUtf8(bytes, source), source);
}

/** Serializes a plain model as YAML with stable formatting (no anchors, no line folding). */
export function toYamlText(value: unknown): string {
  return yaml().stringify(value, { aliasDuplicateObjects: false, lineWidth: 0, version: "1.2" });
}
