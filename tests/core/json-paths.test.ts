// The strict JSON reader (src/core/json.ts) beyond json.test.ts: the pointer a
// syntax error names, the shape pre-pass that bounds depth and node count,
// the integer range, and the plain copy. Written to kill StrykerJS survivors
// (bench/mutation/README.md); each refusal has a control beside it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isJsonObject, parseJsonBytes, parseJsonText, toJsonValue } from "../../src/core/index.ts";
import { decodeUtf8, jsonShape, nestingDepth } from "../../src/core/json.ts";
import { assertCode } from "../helpers/errors.ts";

test("a syntax error names the pointer of the value it sits in", () => {
  const cases: [string, string][] = [
    ['{"a": {"b": [1, 2 x]}}', "/a/b"],
    ['{"a": [1, {"b": }]}', "/a/1/b"],
    ['{"a~/": [1, 2,]}', "/a~0~1"],
    ["[1, [2, [3, }]]]", "/1/1"],
    ['{"a": 1 "b": 2}', "/b"],
    ["  ", ""],
    ['{"a": 1} x', ""],
    // An error at the very end of a value belongs to that value.
    ['{"a": [1}', "/a/0"],
    ['{"a"', "/a"],
    ['[{"a":1}{"b":2}]', "/0"],
  ];
  for (const [text, path] of cases) assertCode(() => parseJsonText(text), "JSON_SYNTAX", path);
  // Control: the same documents, repaired, parse.
  assert.deepEqual(toJsonValue(parseJsonText('{"a": {"b": [1, 2]}}')), { a: { b: [1, 2] } });
});

test("the shape pre-pass counts brackets outside strings and comments, and values and keys", () => {
  assert.deepEqual(jsonShape("1"), { depth: 0, nodes: 1 });
  assert.deepEqual(jsonShape("[1,2]"), { depth: 1, nodes: 3 });
  assert.deepEqual(jsonShape('{"a":[{}],"b":2}'), { depth: 3, nodes: 7 });
  assert.deepEqual(jsonShape("[[]][[[]]]"), { depth: 3, nodes: 6 });
  // An escaped quote does not end a string; brackets, commas and colons inside it do not count.
  assert.deepEqual(jsonShape('["a\\"[{,:", "\\\\"]'), { depth: 1, nodes: 3 });
  assert.deepEqual(jsonShape('"\\\\"[1]'), { depth: 1, nodes: 2 });
  // Comments: a line comment runs to the newline, a block comment to */.
  assert.deepEqual(jsonShape("[ // [[,\n1]"), { depth: 1, nodes: 2 });
  assert.deepEqual(jsonShape("[ /* [[, */ 1]"), { depth: 1, nodes: 2 });
  assert.deepEqual(jsonShape("[ /* [[, */ [1]]"), { depth: 2, nodes: 3 });
  assert.deepEqual(jsonShape("[1] /* [[ unterminated"), { depth: 1, nodes: 2 });
  assert.deepEqual(jsonShape("[1] / [2]"), { depth: 1, nodes: 3 });
  assert.equal(nestingDepth("[[[]]]"), 3);
  // Each closing brace and bracket closes a level.
  assert.deepEqual(jsonShape("[{},{},{}]"), { depth: 2, nodes: 7 });
  // A line comment ends at the newline; what follows counts again.
  assert.deepEqual(jsonShape("[ // c\n[1]]"), { depth: 2, nodes: 3 });
  // Only "/*" opens a block comment; "*/" closes it only after its opening, and what follows counts again.
  assert.deepEqual(jsonShape("[1*[2]]"), { depth: 2, nodes: 3 });
  assert.deepEqual(jsonShape("/*/[*/"), { depth: 0, nodes: 1 });
  assert.deepEqual(jsonShape("/* a *//[1]"), { depth: 1, nodes: 2 });
  assert.deepEqual(jsonShape("/* a *//* b */[[1]]"), { depth: 2, nodes: 3 });
});

test("maxDepth is the json_depth limit: one level more is refused, the limit itself parses", () => {
  const deep = (n: number) => "[".repeat(n) + "]".repeat(n);
  assert.doesNotThrow(() => parseJsonText(deep(4), { maxDepth: 4 }));
  assertCode(() => parseJsonText(deep(5), { maxDepth: 4 }), "LIMIT_EXCEEDED", "");
  assert.doesNotThrow(() => parseJsonText(deep(256)));
  assertCode(() => parseJsonText(deep(257)), "LIMIT_EXCEEDED");
});

test("numbers: integers written with an exponent are held to the safe range too; fractions and -0 are kept", () => {
  assertCode(() => parseJsonText('{"n": 1e16}'), "JSON_NUMBER", "/n");
  assertCode(() => parseJsonText('{"n": [-9007199254740992.0]}'), "JSON_NUMBER", "/n/0");
  assertCode(() => parseJsonText("-1e400"), "JSON_NUMBER", "");
  assert.equal(parseJsonText("1.5e3"), 1500);
  assert.equal(parseJsonText("-9007199254740991"), -9007199254740991);
  assert.equal(parseJsonText("9007199254740991.0"), 9007199254740991);
  assert.ok(Object.is(parseJsonText("-0"), -0));
  assert.equal(parseJsonText("1e-7"), 1e-7);
});

test("scalars, empty containers and strings parse to exactly their values", () => {
  assert.equal(parseJsonText("null"), null);
  assert.equal(parseJsonText("true"), true);
  assert.equal(parseJsonText("false"), false);
  assert.equal(parseJsonText('"x\\u00e9"'), "xé");
  assert.deepEqual(toJsonValue(parseJsonText("[]")), []);
  assert.deepEqual(toJsonValue(parseJsonText("{}")), {});
  assert.deepEqual(toJsonValue(parseJsonText('[null, true, [false], {"k": ""}]')), [null, true, [false], { k: "" }]);
  assertCode(() => parseJsonText('{"a": ["ok", "\\udfff"]}'), "JSON_STRING", "/a/1");
  assertCode(() => parseJsonText('{"a": {"\\ud800x": 1}}'), "JSON_STRING", "/a/\ud800x");
});

test("JSONC is opt-in: comments need jsonc, trailing commas need jsonc, a strict document parses either way", () => {
  assert.deepEqual(toJsonValue(parseJsonText("[1,]", { jsonc: true })), [1]);
  assertCode(() => parseJsonText("[1,]", { jsonc: false }), "JSON_SYNTAX");
  assert.deepEqual(toJsonValue(parseJsonText("/* c */ [1]", { jsonc: true })), [1]);
  assertCode(() => parseJsonText("/* c */ [1]"), "JSON_SYNTAX", "");
  assert.deepEqual(toJsonValue(parseJsonText("[1]", { jsonc: true })), [1]);
});

test("UTF-8: invalid bytes are JSON_UTF8 at the root; a BOM survives decoding and one is stripped by the parser", () => {
  assertCode(() => decodeUtf8(Buffer.from([0xc3, 0x28])), "JSON_UTF8", "");
  assertCode(() => parseJsonBytes(Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22])), "JSON_UTF8", "");
  assert.equal(decodeUtf8(Buffer.from("\uFEFFé", "utf8")), "\uFEFFé");
  assert.equal(parseJsonBytes(Buffer.from('\uFEFF"é"', "utf8")), "é");
  assert.equal(parseJsonText('\uFEFF"x"'), "x");
  assertCode(() => parseJsonText('"x"\uFEFF'), "JSON_SYNTAX");
});

test("isJsonObject is true only for objects; toJsonValue copies into plain objects", () => {
  assert.equal(isJsonObject(parseJsonText("{}")), true);
  assert.equal(isJsonObject([]), false);
  assert.equal(isJsonObject(null), false);
  assert.equal(isJsonObject("{}"), false);
  const model = parseJsonText('{"a": {"b": [{"c": 1}]}}');
  const plain = toJsonValue(model) as { a: { b: { c: number }[] } };
  assert.equal(Object.getPrototypeOf(plain), Object.prototype);
  assert.equal(Object.getPrototypeOf(plain.a.b[0]), Object.prototype);
  assert.deepEqual(plain, { a: { b: [{ c: 1 }] } });
  assert.notEqual(plain.a, (model as { a: unknown }).a);
});
