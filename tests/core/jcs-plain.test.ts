/**
 * `encodeString` quotes a string needing no escape without JSON.stringify
 * (claim W63): for every string its text is the definition it replaces,
 * JSON.stringify of a well-formed string (a lone surrogate refused
 * JSON_STRING): plain ASCII, every character below 0x20, quote, backslash,
 * DEL, U+2028/U+2029, é, € and an astral pair, lone surrogates of both
 * halves, and 20,000 random strings over all of them.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { CairnError, jcsString } from "../../src/core/index.ts";

const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** The definition before the fast path. */
const reference = (s: string): string | "JSON_STRING" => (LONE.test(s) ? "JSON_STRING" : JSON.stringify(s));
function encoded(s: string): string {
  try {
    return jcsString(s, "/x");
  } catch (e) {
    if (e instanceof CairnError) return e.code;
    throw e;
  }
}

const ALPHABET = ["a", "/", "0", " ", '"', "\\", "\u007f", "\u2028", "\u2029", "\u00e9", "\u20ac", "\u{1F600}", "\uD83D", "\uDE00", "\uFFFF"];
for (let c = 0; c < 0x20; c++) ALPHABET.push(String.fromCharCode(c));

test("encodeString is JSON.stringify of every well-formed string and refuses every lone surrogate", () => {
  const cases = ["", "usr/share/d1/f1.txt", "sha256:0123abcdef", ...ALPHABET, ...ALPHABET.map((c) => `x${c}y`)];
  let seed = 7;
  const next = (): number => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed >>> 8;
  };
  for (let i = 0; i < 20_000; i++) {
    let s = "";
    const n = next() % 12;
    for (let k = 0; k < n; k++) s += next() % 3 === 0 ? ALPHABET[next() % ALPHABET.length] : String.fromCharCode(0x20 + (next() % 95));
    cases.push(s);
  }
  let plain = 0;
  let refused = 0;
  for (const s of cases) {
    const want = reference(s);
    assert.equal(encoded(s), want, JSON.stringify(s));
    if (want === `"${s}"`) plain++;
    if (want === "JSON_STRING") refused++;
  }
  // control: all three kinds occur (quoted as is, escaped, refused)
  assert.ok(plain > 1000 && refused > 100 && cases.length - plain - refused > 1000, `${plain} plain, ${refused} refused`);
});
