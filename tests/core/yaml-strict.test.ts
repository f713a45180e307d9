// The strict YAML reader (src/core/yaml.ts) beyond json.test.ts: each refusal
// with its code and pointer, every problem listed, the integer range in both
// directions, the depth and node pre-passes, and the writer's options.
// Written to kill StrykerJS survivors (bench/mutation/README.md); each refusal
// has a control beside it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { canonicalize, parseYamlBytes, parseYamlText, type ErrorCode } from "../../src/core/index.ts";
import { toYamlText, yamlNestingDepth, yamlNodeEstimate } from "../../src/core/yaml.ts";
import { assertCode } from "../helpers/errors.ts";

const parsed = (text: string): string => canonicalize(parseYamlText(text));

test("YAML refusals carry their code and pointer; the repaired document is the control", () => {
  const cases: [string, ErrorCode, string][] = [
    ["", "YAML_SYNTAX", ""],
    ["# only a comment\n", "YAML_SYNTAX", ""],
    ["a: &x 1\n", "YAML_UNSUPPORTED", "/a"],
    ["a: !foo {b: 1}\n", "YAML_UNSUPPORTED", ""],
    ["a: !foo 1\n", "YAML_UNSUPPORTED", ""],
    ["1: a\n", "YAML_UNSUPPORTED", ""],
    ["? [a]\n: 1\n", "YAML_UNSUPPORTED", ""],
    ["n: -9007199254740992\n", "JSON_NUMBER", "/n"],
    ["n: 9007199254740992\n", "JSON_NUMBER", "/n"],
    ["n: [.inf]\n", "JSON_NUMBER", "/n/0"],
    ["n: .nan\n", "JSON_NUMBER", "/n"],
    ["n: 1e16\n", "JSON_NUMBER", "/n"],
    ['s: "\\ud800"\n', "JSON_STRING", "/s"],
    ["- ~\n", "MODEL_NULL_ENTRY", "/0"],
    ["[a, null]\n", "MODEL_NULL_ENTRY", "/1"],
    ["a: 1\n b: 2\n", "YAML_SYNTAX", ""],
    ["x/y~: {__proto__: 1}\n", "JSON_PROTO_KEY", "/x~1y~0/__proto__"],
    ["a: {b: 1, b: 2}\n", "JSON_DUPLICATE_KEY", "/a/b"],
  ];
  for (const [text, code, path] of cases) assertCode(() => parseYamlText(text), code, path);
  assert.equal(parsed("a: !!map {b: 1}\n"), '{"a":{"b":1}}');
  assert.equal(parsed("a: !!seq [1]\n"), '{"a":[1]}');
  assert.equal(parsed("n: [9007199254740991, -9007199254740991, 1.5, 0x1F]\n"), '{"n":[9007199254740991,-9007199254740991,1.5,31]}');
  assert.equal(parsed("a: ~\nb:\nc: true\nd: false\ne: 'x'\n"), '{"a":null,"b":null,"c":true,"d":false,"e":"x"}');
  assert.equal(parsed("- a\n- [b]\n- {c: d}\n"), '["a",["b"],{"c":"d"}]');
  assert.equal(parsed("x"), '"x"');
  // An explicit key without a value is a null value, not an unsupported node.
  assert.equal(parsed("? a\nb: 1\n"), '{"a":null,"b":1}');
  // Known tags are not resolved: !!binary is refused by the parser, at the root, before any value is built.
  assertCode(() => parseYamlText("a: !!binary aGk=\n"), "YAML_UNSUPPORTED", "");
  assertCode(() => parseYamlText("a: !!timestamp 2001-12-14\n"), "YAML_UNSUPPORTED", "");
  // Strict parsing: an implicit key longer than 1024 characters is an error (the lenient parser would accept it).
  assertCode(() => parseYamlText(`${"k".repeat(1100)}: 1\n`), "YAML_SYNTAX", "");
  assert.equal(parsed(`${"k".repeat(1000)}: 1\n`), `{"${"k".repeat(1000)}":1}`);
  assert.equal(parsed("\uFEFFa: 1\n"), '{"a":1}');
});

test("every problem in a file is listed; the first one gives the code and path", () => {
  const e = assertCode(() => parseYamlText("a: 1\nb: 1\na: 2\nb: 3\n"), "JSON_DUPLICATE_KEY", "/a");
  assert.deepEqual(
    e.issues?.map((i) => [i.code, i.path]),
    [
      ["JSON_DUPLICATE_KEY", "/a"],
      ["JSON_DUPLICATE_KEY", "/b"],
    ],
  );
  const mixed = assertCode(() => parseYamlText("l:\n  - ~\n  - &x y\n__proto__: 2\n"), "MODEL_NULL_ENTRY", "/l/0");
  assert.deepEqual(
    mixed.issues?.map((i) => [i.code, i.path]),
    [
      ["MODEL_NULL_ENTRY", "/l/0"],
      ["YAML_UNSUPPORTED", "/l/1"],
      ["JSON_PROTO_KEY", "/__proto__"],
    ],
  );
  const one = assertCode(() => parseYamlText("a: &x 1\n"), "YAML_UNSUPPORTED", "/a");
  assert.equal(one.issues?.length, 1);
});

test("the depth pre-pass counts indentation, block indicators and flow brackets outside quotes and comments", () => {
  const cases: [string, number][] = [
    ["a:\n  b:\n    c: 1\n", 4],
    ["a: [[1]]\n", 4],
    ['a: "[[["\n', 2],
    ["a: '[[' \n", 2],
    ["a: 'it''s [' \n", 2],
    ['a: "x\\"[" \n', 2],
    ["a: [1] # [[[\n", 3],
    ["a#b: [1]\n", 3],
    ["- - - a\n", 4],
    ["a:\n  - b\n  - c: [1,\n    2]\n", 5],
    ["#c\n\n   \na: 1\n", 2],
    ["[\n[\n[\n]]]\n", 4],
    ["]]]\na: [1]\n", 3],
    ["- a: 1\n  b: 2\n", 3],
    ["a: b-c\nd: e:f\n", 2],
    ["a: -\n", 3],
    // Blank and comment lines do not count, however deep they are indented.
    ["a: 1\n  #\n    #\n      #\n", 2],
    ["a: 1\n   \n      \n         \n", 2],
    ["a: 1\n  # c\n    # d\n", 2],
    // A quote closes: what follows it on the line counts (a backslash escapes only inside double quotes).
    ['a: ["x", [1]]\n', 4],
    ['a: ["x\\\\", [1]]\n', 4],
    ["a: ['x', [1]]\n", 4],
    // "#" starts a comment only after a space.
    ["a: [1] #[[[\n", 3],
    // "{" opens a level as "[" does; "]" and "}" close one, also across lines.
    ["a: {b: {c: 1}}\n", 6],
    ["a: [1]\nb: [2]\nc: [3]\n", 3],
    ["a: {x: 1}\nb: {y: 2}\nc: {z: 3}\n", 4],
  ];
  for (const [text, depth] of cases) assert.equal(yamlNestingDepth(text), depth, JSON.stringify(text));
  assert.doesNotThrow(() => parseYamlText("a: [[1]]\n", "t", 4));
  assertCode(() => parseYamlText("a: [[1]]\n", "t", 3), "LIMIT_EXCEEDED", "");
});

test("the node estimate counts line ends, flow separators and dashes; yaml_nodes refuses one over 500,000", () => {
  assert.equal(yamlNodeEstimate(""), 1);
  assert.equal(yamlNodeEstimate("a: [1, {b: -2}]\n"), 8);
  assert.equal(yamlNodeEstimate("x"), 1);
  assertCode(() => parseYamlText("-\n".repeat(250_000)), "LIMIT_EXCEEDED", "");
  // Control: the estimate of one line fewer is exactly at the limit, so it reaches the parser (and its null entries).
  assert.equal(yamlNodeEstimate("-\n".repeat(249_999) + "-"), 500_000);
  assertCode(() => parseYamlText("- a\n- ~\n"), "MODEL_NULL_ENTRY", "/1");
});

test("bytes: invalid UTF-8 is refused, valid bytes parse as the text does", () => {
  assertCode(() => parseYamlBytes(Buffer.from([0x61, 0x3a, 0x20, 0xff, 0x0a])), "JSON_UTF8", "");
  assert.equal(canonicalize(parseYamlBytes(Buffer.from("a: é\n", "utf8"))), '{"a":"é"}');
});

test("the writer emits no anchors for repeated objects and never folds long lines", () => {
  const shared = { x: 1 };
  const text = toYamlText({ a: shared, b: shared });
  assert.equal(text, "a:\n  x: 1\nb:\n  x: 1\n");
  const long = `${"y".repeat(100)} ${"z".repeat(100)}`;
  assert.equal(toYamlText({ s: long }), `s: ${long}\n`);
  assert.equal(parsed(toYamlText({ l: ["p", "q"], n: 1 })), '{"l":["p","q"],"n":1}');
});
