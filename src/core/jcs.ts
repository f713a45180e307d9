/**
 * JSON Canonicalization Scheme (RFC 8785). Objects are emitted with their
 * keys sorted by UTF-16 code units (as the RFC requires), numbers in the
 * ECMAScript shortest round-trip form, strings with the minimal JSON escapes.
 * Input must be a plain JSON value; anything else (undefined, functions,
 * non-finite numbers, lone surrogates) is refused rather than coerced.
 */
import { CairnError } from "./errors.ts";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE.test(s);
}

/** No quote, backslash, control character or surrogate: the JCS text is the string in quotes. */
const PLAIN = /^[^"\\\u0000-\u001f\uD800-\uDFFF]*$/;

/** True when the JCS text of `s` is `s` itself in quotes: no quote, backslash, control character or surrogate to escape or refuse. */
export function isPlainString(s: string): boolean {
  return PLAIN.test(s);
}

/** The JCS text of one string (for encoders that write a fixed-shape object themselves); `path` names it in a refusal. */
export function encodeString(s: string, path: string): string {
  // most strings (paths, digests, names) need no escape: one scan, no JSON.stringify (a tree's derived entry encodes three per entry)
  if (PLAIN.test(s)) return `"${s}"`;
  if (hasLoneSurrogate(s)) {
    throw new CairnError("JSON_STRING", "string holds a lone surrogate and has no canonical form", { path });
  }
  // JSON.stringify on a well-formed string emits exactly RFC 8785's escapes:
  // \b \t \n \f \r \" \\ and \u00XX for the remaining control characters.
  return JSON.stringify(s);
}

/** The JCS text of one number; `path` names it in a refusal. */
export function encodeNumber(n: number, path: string): string {
  if (!Number.isFinite(n)) {
    throw new CairnError("JSON_NUMBER", "non-finite number has no canonical form", { path });
  }
  // ECMAScript Number-to-String is the serialization RFC 8785 specifies; -0 becomes 0.
  return Object.is(n, -0) ? "0" : String(n);
}

function compareUtf16(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Where encoded pieces go. `path` is the JSON pointer of the value being
 * encoded, kept only when `track` is set: pointers are built for messages,
 * and building one per value would cost more than the encoding (a pass
 * that fails is run again with `track` to name the value).
 */
interface Out {
  readonly track: boolean;
  push(piece: string): void;
}

const child = (out: Out, path: string, token: string | number): string =>
  out.track ? `${path}/${typeof token === "number" ? token : escapePointer(token)}` : "";

function encode(value: unknown, path: string, out: Out): void {
  if (value === null) {
    out.push("null");
    return;
  }
  switch (typeof value) {
    case "boolean":
      out.push(value ? "true" : "false");
      return;
    case "number":
      out.push(encodeNumber(value, path));
      return;
    case "string":
      out.push(encodeString(value, path));
      return;
    case "object": {
      if (Array.isArray(value)) {
        out.push("[");
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out.push(",");
          encode(value[i], child(out, path, i), out);
        }
        out.push("]");
        return;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== null && proto !== Object.prototype) {
        throw new CairnError("MODEL_TYPE", "only plain objects can be canonicalized", { path });
      }
      const keys = Object.keys(value).sort(compareUtf16);
      out.push("{");
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        if (i > 0) out.push(",");
        out.push(encodeString(k, path));
        out.push(":");
        encode((value as Record<string, unknown>)[k], child(out, path, k), out);
      }
      out.push("}");
      return;
    }
    default:
      throw new CairnError("MODEL_TYPE", `a ${typeof value} has no JSON form`, { path });
  }
}

/** Encodes `value` into `out`; a refusal is raised again by a tracking pass, so it names the value's pointer. */
function encodeAll(value: unknown, out: Out): void {
  try {
    encode(value, "", out);
  } catch (e) {
    if (!(e instanceof CairnError)) throw e;
    encode(value, "", { track: true, push() {} });
    throw e; // not reached: the tracking pass meets the same refusal first
  }
}

/** The canonical JSON text of `value`. */
export function canonicalize(value: unknown): string {
  const parts: string[] = [];
  encodeAll(value, { track: false, push: (p) => void parts.push(p) });
  return parts.join("");
}

const CHUNK = 64 * 1024;

/**
 * The canonical JSON bytes (UTF-8) of `value`; identities hash these.
 * Encoded in chunks of about 64 KiB (pieces never split a character), so a
 * large document (a derived entry listing every file of a tree) costs its
 * bytes, not one string per token.
 */
export function canonicalBytes(value: unknown): Buffer {
  const chunks: Buffer[] = [];
  let cur = "";
  encodeAll(value, {
    track: false,
    push(p) {
      cur += p;
      if (cur.length >= CHUNK) {
        chunks.push(Buffer.from(cur, "utf8"));
        cur = "";
      }
    },
  });
  if (chunks.length === 0) return Buffer.from(cur, "utf8");
  chunks.push(Buffer.from(cur, "utf8"));
  return Buffer.concat(chunks);
}

/** RFC 6901 escaping of one pointer token. */
export function escapePointer(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}
