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

function encodeString(s: string, path: string): string {
  if (hasLoneSurrogate(s)) {
    throw new CairnError("JSON_STRING", "string holds a lone surrogate and has no canonical form", { path });
  }
  // JSON.stringify on a well-formed string emits exactly RFC 8785's escapes:
  // \b \t \n \f \r \" \\ and \u00XX for the remaining control characters.
  return JSON.stringify(s);
}

function encodeNumber(n: number, path: string): string {
  if (!Number.isFinite(n)) {
    throw new CairnError("JSON_NUMBER", "non-finite number has no canonical form", { path });
  }
  // ECMAScript Number-to-String is the serialization RFC 8785 specifies; -0 becomes 0.
  return Object.is(n, -0) ? "0" : String(n);
}

function compareUtf16(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function encode(value: unknown, path: string, out: string[]): void {
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
        value.forEach((item, i) => {
          if (i > 0) out.push(",");
          encode(item, `${path}/${i}`, out);
        });
        out.push("]");
        return;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== null && proto !== Object.prototype) {
        throw new CairnError("MODEL_TYPE", "only plain objects can be canonicalized", { path });
      }
      const keys = Object.keys(value).sort(compareUtf16);
      out.push("{");
      keys.forEach((k, i) => {
        const child = (value as Record<string, unknown>)[k];
        if (i > 0) out.push(",");
        out.push(encodeString(k, path), ":");
        encode(child, `${path}/${escapePointer(k)}`, out);
      });
      out.push("}");
      return;
    }
    default:
      throw new CairnError("MODEL_TYPE", `a ${typeof value} has no JSON form`, { path });
  }
}

/** The canonical JSON text of `value`. */
export function canonicalize(value: unknown): string {
  const out: string[] = [];
  encode(value, "", out);
  return out.join("");
}

/** The canonical JSON bytes (UTF-8) of `value`; identities hash these. */
export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalize(value), "utf8");
}

/** RFC 6901 escaping of one pointer token. */
export function escapePointer(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}
