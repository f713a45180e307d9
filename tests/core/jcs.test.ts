// JCS (RFC 8785) edge cases that the official vectors do not pin: the
// refusals and the paths they name, UTF-16 key order, -0, and pointer escapes.
// Written to kill StrykerJS survivors in src/core/jcs.ts
// (bench/mutation/README.md); each refusal sits beside a control that passes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { canonicalBytes, canonicalize, escapePointer } from "../../src/core/index.ts";
import { hasLoneSurrogate } from "../../src/core/jcs.ts";
import { assertCode } from "../helpers/errors.ts";

test("JCS: scalars, empty containers and nesting have their exact canonical text", () => {
  assert.equal(canonicalize(null), "null");
  assert.equal(canonicalize(true), "true");
  assert.equal(canonicalize(false), "false");
  assert.equal(canonicalize([]), "[]");
  assert.equal(canonicalize({}), "{}");
  assert.equal(canonicalize([1, [2, 3], { a: [] }]), '[1,[2,3],{"a":[]}]');
  assert.equal(canonicalize({ b: { d: 1, c: 2 }, a: [true, false, null] }), '{"a":[true,false,null],"b":{"c":2,"d":1}}');
  assert.equal(canonicalize('a"\\\n\u0001'), '"a\\"\\\\\\n\\u0001"');
});

test("JCS: -0 is 0, other numbers keep the shortest round-trip form", () => {
  assert.equal(canonicalize(-0), "0");
  assert.equal(canonicalize([-0, 0, -1, 1e21, 1e-7, 0.1]), "[0,0,-1,1e+21,1e-7,0.1]");
});

test("JCS: keys sort by UTF-16 code units, not code points", () => {
  // U+FFFF is one unit 0xFFFF; U+10000 is the pair 0xD800 0xDC00, which sorts first in UTF-16.
  assert.equal(canonicalize({ "\uFFFF": 1, "\u{10000}": 2, b: 3, a: 4, aa: 5 }), '{"a":4,"aa":5,"b":3,"\u{10000}":2,"\uFFFF":1}');
});

test("JCS: a lone surrogate is refused in a value and in a key, with its path; a pair is a control", () => {
  assert.equal(canonicalize({ k: "\uD83D\uDE00" }), '{"k":"\uD83D\uDE00"}');
  assert.equal(hasLoneSurrogate("\uD83D\uDE00"), false);
  assert.equal(hasLoneSurrogate("x\uD83Dy"), true);
  assert.equal(hasLoneSurrogate("x\uDE00y"), true);
  assert.equal(hasLoneSurrogate("\uDE00\uD83D"), true);
  assertCode(() => canonicalize({ a: ["ok", "\uD800"] }), "JSON_STRING", "/a/1");
  assertCode(() => canonicalize({ a: { "\uDC00": 1 } }), "JSON_STRING", "/a");
});

test("JCS: non-finite numbers are refused with their path; a finite one is a control", () => {
  assert.equal(canonicalize({ n: [1.5] }), '{"n":[1.5]}');
  assertCode(() => canonicalize({ n: [0, Number.NaN] }), "JSON_NUMBER", "/n/1");
  assertCode(() => canonicalize([Number.POSITIVE_INFINITY]), "JSON_NUMBER", "/0");
  assertCode(() => canonicalize(Number.NEGATIVE_INFINITY), "JSON_NUMBER", "");
});

test("JCS: values with no JSON form are refused, not coerced; a null-prototype object is a control", () => {
  const bare = Object.assign(Object.create(null) as Record<string, unknown>, { z: 1, y: 2 });
  assert.equal(canonicalize(bare), '{"y":2,"z":1}');
  assertCode(() => canonicalize({ a: undefined }), "MODEL_TYPE", "/a");
  assertCode(() => canonicalize([() => 1]), "MODEL_TYPE", "/0");
  assertCode(() => canonicalize({ "x/y~": 1n }), "MODEL_TYPE", "/x~1y~0");
  assertCode(() => canonicalize({ s: Symbol("s") }), "MODEL_TYPE", "/s");
  assertCode(() => canonicalize({ d: new Date(0) }), "MODEL_TYPE", "/d");
  assertCode(() => canonicalize({ m: [new Map()] }), "MODEL_TYPE", "/m/0");
});

test("JCS: canonical bytes are the UTF-8 of the canonical text", () => {
  assert.deepEqual([...canonicalBytes({ é: "€" })], [...Buffer.from('{"é":"€"}', "utf8")]);
  assert.equal(canonicalBytes({ é: "€" }).length, 12);
});

test("RFC 6901: ~ becomes ~0 and / becomes ~1, every occurrence, ~ first", () => {
  assert.equal(escapePointer("plain"), "plain");
  assert.equal(escapePointer("a/b/c~d~e"), "a~1b~1c~0d~0e");
  assert.equal(escapePointer("~1"), "~01");
});

test("JCS: canonical bytes of a document many 64 KiB chunks long are exactly the UTF-8 of its canonical text; control: a small one", () => {
  const small = { a: "é", b: [1, 2] };
  assert.ok(canonicalBytes(small).equals(Buffer.from(canonicalize(small), "utf8")));
  // 5,000 entries of about 100 characters, multi-byte characters on every chunk boundary's side
  const big = {
    tree: Array.from({ length: 5000 }, (_, i) => ({ path: `/usr/share/doc/pkg-${i}/é-ü-漢-${"x".repeat(i % 50)}`, size: i, sha256: "0".repeat(64) })),
  };
  const text = canonicalize(big);
  assert.ok(text.length > 6 * 64 * 1024, "spans several chunks");
  const bytes = canonicalBytes(big);
  assert.equal(bytes.length, Buffer.byteLength(text, "utf8"));
  assert.ok(bytes.equals(Buffer.from(text, "utf8")));
  assert.ok(bytes.subarray(0, 10).equals(Buffer.from('{"tree":[{', "utf8")), "the first chunk is kept");
});
