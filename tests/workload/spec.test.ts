import { test } from "node:test";
import assert from "node:assert/strict";
import { canonicalize } from "../../src/core/index.ts";
import { canonicalSpecModel, parseCanonicalSpec, parseWorkloadSpec } from "../../src/workload/spec.ts";
import { canonicalSpecBytes } from "../../src/workload/derive.ts";
import { assertCode } from "../helpers/errors.ts";

const y = (s: string) => Buffer.from(s);
const BIN = `schema: cairn.workload/1
source:
  binary:
    path: ./hello
    args: [a, b]
    env: {GREETING: hi}
    workdir: /work
    user: "1000:1000"
`;
const OCI = `{"schema":"cairn.workload/1","source":{"oci":{"layout":"img","manifest":"sha256:${"a".repeat(64)}"}},"policy":{"hardlinks":"copy"},"run":{"steps":[1]}}`;

test("binary and OCI specs parse (YAML and JSON); defaults are filled", () => {
  const b = parseWorkloadSpec(y(BIN), "w.yaml");
  assert.equal(b.source.kind, "binary");
  assert.equal(b.policy.hardlinks, "refuse");
  const o = parseWorkloadSpec(y(OCI), "w.json");
  assert.equal(o.source.kind, "oci");
  assert.equal(o.policy.hardlinks, "copy");
  assert.ok(o.run !== undefined);
  const minimal = parseWorkloadSpec(y('schema: cairn.workload/1\nsource: {binary: {path: x, user: "1:1"}}\n'), "m.yaml");
  assert.equal(minimal.source.kind === "binary" && minimal.source.workdir, "/");
});

test("unknown fields, both or neither source, bad schema, bad digest, null entries are refused", () => {
  assertCode(() => parseWorkloadSpec(y(`${BIN}extra: 1\n`), "w.yaml"), "MODEL_UNKNOWN_FIELD");
  assertCode(() => parseWorkloadSpec(y(BIN.replace("user:", "shell: x\n    user:")), "w.yaml"), "MODEL_UNKNOWN_FIELD");
  assertCode(() => parseWorkloadSpec(y(BIN.replace("cairn.workload/1", "cairn.workload/2")), "w.yaml"), "WORKLOAD_SPEC_INVALID");
  assertCode(() => parseWorkloadSpec(y("schema: cairn.workload/1\nsource: {}\n"), "w.yaml"), "WORKLOAD_SPEC_INVALID");
  assertCode(
    () =>
      parseWorkloadSpec(
        y(`schema: cairn.workload/1\nsource: {binary: {path: x, user: "1:1"}, oci: {layout: l, manifest: "sha256:${"a".repeat(64)}"}}\n`),
        "w.yaml",
      ),
    "WORKLOAD_SPEC_INVALID",
  );
  assertCode(() => parseWorkloadSpec(y(OCI.replace("a".repeat(64), "A".repeat(64))), "w.json"), "DIGEST_INVALID");
  assertCode(() => parseWorkloadSpec(y(BIN.replace("[a, b]", "[a, null]")), "w.yaml"), "MODEL_NULL_ENTRY");
  assertCode(() => parseWorkloadSpec(y(BIN.replace("    path: ./hello\n", "")), "w.yaml"), "MODEL_MISSING_FIELD");
  assertCode(() => parseWorkloadSpec(y(`${BIN}policy: {setid: strip}\n`), "w.yaml"), "MODEL_UNKNOWN_FIELD");
  assertCode(() => parseWorkloadSpec(y(OCI.replace('"copy"', '"link"')), "w.json"), "MODEL_VALUE");
  assertCode(() => parseWorkloadSpec(y(`${BIN}limits: {bogus: 1}\n`), "w.yaml"), "MODEL_UNKNOWN_FIELD");
  assertCode(() => parseWorkloadSpec(y(`${BIN}run: [1]\n`), "w.yaml"), "MODEL_TYPE");
  assertCode(() => parseWorkloadSpec(y(`${BIN}x: &a 1\n`), "w.yaml"), "YAML_UNSUPPORTED");
  assertCode(() => parseWorkloadSpec(y(OCI.replace('"schema"', '"schema":1,"schema"')), "w.json"), "JSON_DUPLICATE_KEY");
});

test("the canonical spec drops locators: moving the executable or layout does not change it", () => {
  const a = canonicalSpecBytes(parseWorkloadSpec(y(BIN), "w.yaml"));
  const b = canonicalSpecBytes(parseWorkloadSpec(y(BIN.replace("./hello", "/elsewhere/prog")), "w.yaml"));
  assert.ok(a.equals(b));
  assert.ok(!canonize(BIN).includes("hello"));
  // control: an identity-relevant change does change it
  const c = canonicalSpecBytes(parseWorkloadSpec(y(BIN.replace("[a, b]", "[a, c]")), "w.yaml"));
  assert.ok(!a.equals(c));
});

function canonize(text: string): string {
  return canonicalize(canonicalSpecModel(parseWorkloadSpec(y(text), "w.yaml")));
}

test("a stored canonical spec round-trips and refuses locators", () => {
  for (const [text, name] of [
    [BIN, "w.yaml"],
    [OCI, "w.json"],
  ] as const) {
    const bytes = canonicalSpecBytes(parseWorkloadSpec(y(text), name));
    const again = parseCanonicalSpec(bytes, "stored");
    assert.ok(canonicalSpecBytes(again).equals(bytes));
  }
  const withPath = Buffer.from(canonize(BIN).replace('"args"', '"path":"x","args"'));
  assertCode(() => parseCanonicalSpec(withPath, "stored"), "MODEL_UNKNOWN_FIELD");
});
