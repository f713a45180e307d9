import { test } from "node:test";
import assert from "node:assert/strict";
import { canonicalize, parseJsonBytes, parseJsonText, parseYamlText } from "../../src/core/index.ts";
import { assertCode } from "../helpers/errors.ts";

test("control: a valid JSONC document with comments, trailing comma and BOM parses", () => {
  const m = parseJsonText('\uFEFF{ // c\n "a": [1, 2,], /* x */ "b": {"c": "d"}, }', { jsonc: true });
  assert.equal(canonicalize(m), '{"a":[1,2],"b":{"c":"d"}}');
  assert.equal(Object.getPrototypeOf(m), null, "objects have no prototype");
});

test("strict JSON refuses comments and trailing commas that JSONC allows", () => {
  assertCode(() => parseJsonText('{"a": 1, }'), "JSON_SYNTAX");
  assertCode(() => parseJsonText('{"a": 1 // c\n}'), "JSON_SYNTAX");
  assert.doesNotThrow(() => parseJsonText('{"a": 1}'));
});

test("syntax errors are errors, not partial models", () => {
  for (const bad of ['{"a": }', '{"a" 1}', "[1 2]", "", "{", '{"a": 1} x', "nul"]) {
    assertCode(() => parseJsonText(bad, { jsonc: true }), "JSON_SYNTAX");
  }
});

test("duplicate keys are refused with the pointer of the second", () => {
  assertCode(() => parseJsonText('{"x": {"a": 1, "a": 2}}'), "JSON_DUPLICATE_KEY", "/x/a");
  assert.doesNotThrow(() => parseJsonText('{"x": {"a": 1, "b": 2}}'));
});

test("a __proto__ key is refused anywhere", () => {
  assertCode(() => parseJsonText('{"__proto__": {"build": {}}}'), "JSON_PROTO_KEY", "/__proto__");
  assertCode(() => parseJsonText('{"a": [{"__proto__": 1}]}'), "JSON_PROTO_KEY", "/a/0/__proto__");
  assertCode(() => parseJsonText('{"\\u005f_proto__": 1}'), "JSON_PROTO_KEY");
  assert.doesNotThrow(() => parseJsonText('{"__proto": 1}'));
});

test("non-finite and unsafe-integer numbers are refused", () => {
  assertCode(() => parseJsonText('{"n": 1e400}'), "JSON_NUMBER", "/n");
  assertCode(() => parseJsonText('{"n": 9007199254740993}'), "JSON_NUMBER", "/n");
  assertCode(() => parseJsonText('{"n": -9007199254740992}'), "JSON_NUMBER", "/n");
  assertCode(() => parseJsonText('{"n": 1e300}'), "JSON_NUMBER", "/n");
  assert.equal(canonicalize(parseJsonText('{"n": 9007199254740991}')), '{"n":9007199254740991}');
  assert.equal(canonicalize(parseJsonText('{"n": 1.5}')), '{"n":1.5}');
});

test("lone surrogates in strings and keys are refused", () => {
  assertCode(() => parseJsonText('{"s": "\\ud800"}'), "JSON_STRING", "/s");
  assertCode(() => parseJsonText('{"\\udc00": 1}'), "JSON_STRING");
  assert.doesNotThrow(() => parseJsonText('{"s": "\\ud83d\\ude02"}'));
});

test("invalid UTF-8 is refused; one BOM is stripped, a second is not", () => {
  assertCode(() => parseJsonBytes(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])), "JSON_UTF8");
  assert.doesNotThrow(() => parseJsonBytes(Buffer.from('\uFEFF{"a":"é"}', "utf8")));
  assertCode(() => parseJsonBytes(Buffer.from('\uFEFF\uFEFF{"a":1}', "utf8")), "JSON_SYNTAX");
});

test("YAML: aliases, duplicate keys, null entries and __proto__ are refused; a control parses", () => {
  assert.equal(canonicalize(parseYamlText("a: [1, x]\nb: {c: true}\n")), '{"a":[1,"x"],"b":{"c":true}}');
  assertCode(() => parseYamlText("a: &x 1\nb: *x\n"), "YAML_UNSUPPORTED");
  assertCode(() => parseYamlText("a: 1\na: 2\n"), "JSON_DUPLICATE_KEY");
  assertCode(() => parseYamlText("l:\n  - a\n  -\n"), "MODEL_NULL_ENTRY", "/l/1");
  assertCode(() => parseYamlText("__proto__: 1\n"), "JSON_PROTO_KEY");
  assertCode(() => parseYamlText("n: 9007199254740993\n"), "JSON_NUMBER", "/n");
  assertCode(() => parseYamlText("a: 1\n---\nb: 2\n"), "YAML_SYNTAX");
  assertCode(() => parseYamlText("a: !!binary aGk=\n"), "YAML_UNSUPPORTED");
});

test("nesting depth is a named limit, checked before the recursive parsers run", () => {
  const deep = (n: number) => "[".repeat(n) + "]".repeat(n);
  assert.doesNotThrow(() => parseJsonText(deep(200)));
  assertCode(() => parseJsonText(deep(100_000)), "LIMIT_EXCEEDED");
  // brackets inside strings and comments do not count (control)
  assert.doesNotThrow(() => parseJsonText(`{"s": "${"[".repeat(1000)}"} // ${"{".repeat(1000)}`, { jsonc: true }));
  assert.doesNotThrow(() => parseYamlText(`a: ${deep(200)}\n`));
  assertCode(() => parseYamlText(`a: ${deep(100_000)}\n`), "LIMIT_EXCEEDED");
  let block = "";
  for (let i = 0; i < 1000; i++) block += `${" ".repeat(i)}k:\n`;
  assertCode(() => parseYamlText(block), "LIMIT_EXCEEDED");
  assert.doesNotThrow(() => parseYamlText(`s: "${"[".repeat(1000)}"\n`));
});
