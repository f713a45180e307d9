// An RFC 8785 (JCS) encoder written for the C7 oracles, independent of
// cairn's: address.test.ts checks it against the official RFC 8785 vectors.
export function jcs(v: unknown): string {
  if (v === null || typeof v === "boolean") return JSON.stringify(v);
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new TypeError("JCS has no non-finite numbers");
    return JSON.stringify(v); // ECMAScript Number::toString, as RFC 8785 §3.2.2.3 asks
  }
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(jcs).join(",")}]`;
  if (typeof v === "object") {
    const o = v as Record<string, unknown>;
    // RFC 8785 §3.2.3: keys sorted by their UTF-16 code units (the default sort).
    const keys = Object.keys(o).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${jcs(o[k])}`).join(",")}}`;
  }
  throw new TypeError(`not JSON: ${typeof v}`);
}
