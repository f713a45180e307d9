/**
 * Go's encoding/json text for the values Strata hashes: objects (keys in the
 * order given; a map's keys sorted by bytes, as Go sorts them), arrays,
 * strings and null. It differs from JSON.stringify and from JCS in its string
 * escapes, which the EnvironmentID depends on: `<`, `>` and `&` are written
 * \u003c, \u003e, \u0026 (json.Marshal escapes HTML), U+2028 and U+2029 are
 * written \u2028 and \u2029, control characters other than \b \f \n \r \t
 * are \u00XX in lowercase hex, and DEL and every other character is written
 * as itself. (The short forms \b and \f are Go 1.22's; the seed's Strata
 * needs Go 1.24.)
 */
const HEX = "0123456789abcdef";

export function goJsonString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (c < 0x20 || ch === "<" || ch === ">" || ch === "&") out += `\\u00${HEX[c >> 4]}${HEX[c & 15]}`;
    else if (c === 0x2028 || c === 0x2029) out += `\\u${c.toString(16)}`;
    else out += ch;
  }
  return `${out}"`;
}

export type GoJson = null | string | readonly GoJson[] | { readonly [k: string]: GoJson };

/** The encoding of `v`: objects keep their key order (the caller orders a struct's fields and sorts a map's keys). */
export function goJson(v: GoJson): string {
  if (v === null) return "null";
  if (typeof v === "string") return goJsonString(v);
  if (Array.isArray(v)) return `[${v.map(goJson).join(",")}]`;
  const o = v as { readonly [k: string]: GoJson };
  return `{${Object.keys(o)
    .map((k) => `${goJsonString(k)}:${goJson(o[k]!)}`)
    .join(",")}}`;
}
