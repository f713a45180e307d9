/**
 * Strict JSON and JSONC reading into null-prototype models.
 *
 * The devcontainer CLI reads with a lenient `jsonc.parse` that keeps going
 * after syntax errors, lets the last duplicate key win, and builds ordinary
 * objects in which a `"__proto__"` key becomes the prototype, hiding a
 * refused field from `Object.keys`. Here every one of those is an error that
 * carries the JSON pointer of the offending value:
 *   syntax errors, duplicate keys, `__proto__` keys, non-finite or
 *   unsafe-integer numbers, lone surrogates, invalid UTF-8.
 * One leading BOM is stripped. JSONC additionally allows comments and
 * trailing commas (as VS Code does for devcontainer.json); strict JSON allows
 * neither.
 */
import { parseTree, printParseErrorCode, type Node, type ParseError } from "jsonc-parser";
import { CairnError } from "./errors.ts";
import { escapePointer, hasLoneSurrogate, type JsonValue } from "./jcs.ts";
import { checkLimit, FIXED_LIMIT_HINT } from "./limits.ts";

export type JsonObject = { [key: string]: JsonModel };
export type JsonModel = null | boolean | number | string | JsonModel[] | JsonObject;

/** Default bound on array/object nesting (limit name `json_depth`). */
export const DEFAULT_JSON_DEPTH = 256;

export interface ReadJsonOptions {
  /** Allow comments and trailing commas. */
  jsonc?: boolean;
  /** Maximum nesting of arrays and objects (limit `json_depth`). */
  maxDepth?: number;
  /** Name of the source for messages (a file path). */
  source?: string;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Decodes bytes as UTF-8, refusing invalid sequences (a BOM is kept; the text parsers strip one). */
export function decodeUtf8(bytes: Uint8Array, source = "input"): string {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (cause) {
    throw new CairnError("JSON_UTF8", `${source} is not valid UTF-8`, { path: "", cause });
  }
  return text;
}

function lineCol(text: string, offset: number): string {
  let line = 1;
  let col = 1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      col = 1;
    } else col++;
  }
  return `line ${line}, column ${col}`;
}

/** Returns the pointer of the value that contains `offset`, as near as the tree allows. */
function pointerAt(root: Node | undefined, offset: number): string {
  let path = "";
  let node = root;
  while (node?.children) {
    const next: Node | undefined = node.children.find((c) => offset >= c.offset && offset <= c.offset + c.length);
    if (next === undefined) break;
    if (node.type === "object" && next.type === "property") {
      const key = next.children?.[0]?.value;
      if (typeof key === "string") path += `/${escapePointer(key)}`;
      node = next.children?.[1] ?? next;
      if (node === next) break;
      continue;
    }
    if (node.type === "array") path += `/${node.children.indexOf(next)}`;
    node = next;
  }
  return path;
}

function convert(node: Node, text: string, path: string): JsonModel {
  switch (node.type) {
    case "null":
      return null;
    case "boolean":
      return node.value as boolean;
    case "string": {
      const s = node.value as string;
      if (hasLoneSurrogate(s)) {
        throw new CairnError("JSON_STRING", "string holds a lone surrogate", { path });
      }
      return s;
    }
    case "number": {
      const raw = text.slice(node.offset, node.offset + node.length);
      const n = Number(raw);
      if (!Number.isFinite(n)) {
        throw new CairnError("JSON_NUMBER", "number is not finite", { path });
      }
      if (/^-?\d+$/.test(raw) && !Number.isSafeInteger(n)) {
        throw new CairnError("JSON_NUMBER", "integer is outside the safe range ±(2^53−1)", { path });
      }
      if (Number.isInteger(n) && !Number.isSafeInteger(n)) {
        throw new CairnError("JSON_NUMBER", "number is an integer outside the safe range ±(2^53−1)", { path });
      }
      return n;
    }
    case "array":
      return (node.children ?? []).map((c, i) => convert(c, text, `${path}/${i}`));
    case "object": {
      const out: JsonObject = Object.create(null) as JsonObject;
      for (const prop of node.children ?? []) {
        const keyNode = prop.children?.[0];
        const valueNode = prop.children?.[1];
        const key = keyNode?.value;
        if (typeof key !== "string" || valueNode === undefined) {
          throw new CairnError("JSON_SYNTAX", "malformed property", { path });
        }
        const childPath = `${path}/${escapePointer(key)}`;
        if (hasLoneSurrogate(key)) {
          throw new CairnError("JSON_STRING", "key holds a lone surrogate", { path: childPath });
        }
        if (key === "__proto__") {
          throw new CairnError("JSON_PROTO_KEY", 'a "__proto__" key is refused (prototype smuggling)', {
            path: childPath,
          });
        }
        if (Object.hasOwn(out, key)) {
          throw new CairnError("JSON_DUPLICATE_KEY", `duplicate key "${key}"`, { path: childPath });
        }
        out[key] = convert(valueNode, text, childPath);
      }
      return out;
    }
    default:
      throw new CairnError("JSON_SYNTAX", `unexpected ${node.type}`, { path });
  }
}

/**
 * The deepest nesting of brackets outside strings and comments. Checked before
 * parsing because the tree builder and converter recurse: a few kilobytes of
 * `[` would otherwise overflow the stack instead of failing with a named limit.
 */
export function nestingDepth(text: string): number {
  return jsonShape(text).depth;
}

/**
 * Default bound on the number of values and keys in one JSON document
 * (limit name `json_nodes`). The parse tree costs about 200 bytes a node:
 * 2,000,000 nodes stay within the 1 GiB budget of docs/host-safety.md
 * whatever the byte limit of the file, e.g. a 60 MiB envelope of `[{},...]`.
 */
export const DEFAULT_JSON_NODES = 2_000_000;

/**
 * The deepest nesting and an upper estimate of the node count (each
 * `[`, `{`, `,` and `:` outside strings and comments starts at most one
 * value or key), in one pass without building anything.
 */
export function jsonShape(text: string): { depth: number; nodes: number } {
  let depth = 0;
  let max = 0;
  let nodes = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // skip a string, honouring escapes
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x2f && text.charCodeAt(i + 1) === 0x2f) {
      while (i < text.length && text.charCodeAt(i) !== 0x0a) i++;
    } else if (c === 0x2f && text.charCodeAt(i + 1) === 0x2a) {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 1;
    } else if (c === 0x5b || c === 0x7b) {
      nodes++;
      if (++depth > max) max = depth;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    } else if (c === 0x2c || c === 0x3a) {
      nodes++;
    }
  }
  return { depth: max, nodes };
}

/** Parses JSON (or JSONC) text strictly; see the module comment for what is refused. */
export function parseJsonText(text: string, options: ReadJsonOptions = {}): JsonModel {
  const source = options.source ?? "input";
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const shape = jsonShape(text);
  checkLimit("json_depth", shape.depth, options.maxDepth ?? DEFAULT_JSON_DEPTH, "", "count", FIXED_LIMIT_HINT);
  checkLimit("json_nodes", shape.nodes, DEFAULT_JSON_NODES, "", "count", FIXED_LIMIT_HINT);
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, {
    disallowComments: !options.jsonc,
    allowTrailingComma: options.jsonc === true,
    allowEmptyContent: false,
  });
  if (errors.length > 0 || root === undefined) {
    const first = errors[0];
    const where = first ? lineCol(text, first.offset) : "start";
    throw new CairnError("JSON_SYNTAX", `${source}: ${first ? printParseErrorCode(first.error) : "empty document"} at ${where}`, {
      path: first ? pointerAt(root, first.offset) : "",
      hint: options.jsonc ? undefined : "comments and trailing commas are not JSON",
    });
  }
  return convert(root, text, "");
}

/** Parses UTF-8 bytes as strict JSON or JSONC. */
export function parseJsonBytes(bytes: Uint8Array, options: ReadJsonOptions = {}): JsonModel {
  return parseJsonText(decodeUtf8(bytes, options.source), options);
}

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Deep-copies a model into plain JSON values (for JCS and printing). */
export function toJsonValue(v: JsonModel): JsonValue {
  if (Array.isArray(v)) return v.map(toJsonValue);
  if (isJsonObject(v)) {
    const out: { [k: string]: JsonValue } = {};
    for (const k of Object.keys(v)) out[k] = toJsonValue(v[k] as JsonModel);
    return out;
  }
  return v;
}
