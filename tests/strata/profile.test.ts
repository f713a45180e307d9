import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseProfileText, profileToYaml, profileToModel, refToModel, readRef, refString } from "../../src/strata/index.ts";
import { Checker } from "../../src/core/index.ts";
import { assertCode } from "../helpers/errors.ts";

const GOOD = `
name: demo
description: a test
version: "1.0"
base: {os: debian12}
software:
  - python@3.12
  - numpy
  - formation:bio-seq@2026.03
  - {name: r-base, version: "4.4"}
  - {formation: tools}
registries:
  - {url: ./registry, trust: "keyfile://./k.pub"}
env: {LANG: C.UTF-8}
on_ready: [echo hi]
defaults: [python@3.12]
packages:
  - manager: conda
    env: analysis
    packages: [{name: scipy, version: "1.13"}, {name: pandas}]
mutable_layer: {name: work, version: "1.0"}
requires_host: [{key: gpu, value: ">=1"}]
instance: {type: c7i.large}
storage: [{type: ebs, mount: /scratch}]
`;

test("a complete profile parses, with defaults and both ref forms", () => {
  const p = parseProfileText(GOOD);
  assert.equal(p.base.arch, "x86_64", "arch defaults to x86_64");
  assert.deepEqual(p.software.map(refString), ["python@3.12", "numpy", "formation:bio-seq@2026.03", "r-base@4.4", "formation:tools"]);
  assert.equal(p.packages[0]!.env, "analysis");
  assert.deepEqual(p.mutable_layer, { name: "work", version: "1.0", size_gb: 20, volume_type: "gp3" });
  assert.deepEqual({ ...p.instance }, { type: "c7i.large" });
});

test("writing a profile back reads back equal", () => {
  const p = parseProfileText(GOOD);
  const again = parseProfileText(profileToYaml(p));
  assert.deepEqual(profileToModel(again), profileToModel(p));
  assert.equal(profileToYaml(again), profileToYaml(p));
});

test("refs: both spellings read as the same ref, and a profile written back reads back equal, YAML-ambiguous names included (property, counting what it reached)", (t) => {
  // Names YAML would read as something else if written unquoted (booleans, null, numbers) are generated on purpose.
  const ambiguous = ["true", "false", "null", "yes", "no", "on", "off", "1.0", "1e3", "0x1f", "007", "1_000", "12", ".5"].filter((n) => /^[a-z0-9]/.test(n));
  const name = fc.oneof(fc.stringMatching(/^[a-z0-9][a-z0-9._+-]{0,10}$/), fc.constantFrom(...ambiguous));
  const version = fc.option(fc.oneof(fc.stringMatching(/^[0-9a-z]{1,3}(\.[0-9a-z]{1,3}){0,2}$/), fc.constantFrom("1.0", "1e3", "true")), { nil: undefined });
  const reached = { scalar: 0, mapping: 0, ambiguousName: 0, ambiguousVersion: 0, formation: 0 };
  fc.assert(
    fc.property(fc.constantFrom("layer" as const, "formation" as const), name, version, fc.boolean(), (kind, n, v, asMapping) => {
      const ref = { kind, name: n, ...(v !== undefined ? { version: v } : {}) };
      const mapping = { [kind === "formation" ? "formation" : "name"]: n, ...(v !== undefined ? { version: v } : {}) };
      const spelled = asMapping ? mapping : refString(ref);
      reached[asMapping ? "mapping" : "scalar"]++;
      if (ambiguous.includes(n)) reached.ambiguousName++;
      if (v !== undefined && /^(1\.0|1e3|true)$/.test(v)) reached.ambiguousVersion++;
      if (kind === "formation") reached.formation++;
      const c = new Checker("PROFILE_INVALID");
      assert.deepEqual(readRef(c, spelled as never, ""), ref, "both spellings read as the same ref");
      assert.ok(c.ok, JSON.stringify(c.issues));
      // The writer emits the mapping form, which every Strata reads (v0.22 decodes no scalar ref).
      assert.deepEqual(refToModel(ref), kind === "formation" ? { formation: v === undefined ? n : `${n}@${v}` } : mapping);
      // The whole profile, read from either spelling and written back, reads back equal.
      const text = `name: d\nbase: {os: debian12}\nsoftware:\n  - ${JSON.stringify(spelled)}\n`;
      const p = parseProfileText(text);
      assert.deepEqual(p.software, [ref]);
      const again = parseProfileText(profileToYaml(p));
      assert.deepEqual(again.software, [ref]);
    }),
    { numRuns: 400 },
  );
  t.diagnostic(`reached: ${JSON.stringify(reached)}`);
  // Expected in 400 runs: ~200 each spelling, ~100+ ambiguous names, ~50 ambiguous versions, ~200 formations.
  for (const [k, n] of Object.entries(reached)) assert.ok(n >= 10, `only ${n} cases reached ${k}`);
});

/** The `code path` of each issue of the refusal (the refusal must be PROFILE_INVALID). */
function issuePaths(text: string): string[] {
  const e = assertCode(() => parseProfileText(text), "PROFILE_INVALID");
  return e.issues.map((i) => `${i.code} ${i.path}`);
}

test("a null list entry is an error naming its index", () => {
  const text = "name: d\nbase: {os: debian12}\nsoftware:\n  - python\n  -\n  # - numpy\n";
  const e = assertCode(() => parseProfileText(text), "MODEL_NULL_ENTRY");
  assert.equal(e.path, "/software/1");
  assert.doesNotThrow(
    () => parseProfileText("name: d\nbase: {os: debian12}\nsoftware:\n  - python\n  # - numpy\n"),
    "control: a fully commented-out entry is fine",
  );
});

test("a null entry in software hides no other problem: the profile lists all of them (issue 31, case 18)", () => {
  // Every problem of this file: a YAML-level one (the bare "-", a duplicate key, an anchor) and model-level ones.
  const text =
    "name: BAD NAME\nbase: {os: debian12, arch: sparc}\nsoftware:\n  - python\n  -\n  - py/thon\nbogus: 1\nenv: {A: x, A: y, 1B: z}\non_ready: [&a echo]\n";
  const issues = issuePaths(text).sort();
  assert.deepEqual(issues, [
    "JSON_DUPLICATE_KEY /env/A",
    "MODEL_NULL_ENTRY /software/1",
    "MODEL_UNKNOWN_FIELD /bogus",
    "MODEL_VALUE /base/arch",
    "MODEL_VALUE /env/1B",
    "MODEL_VALUE /name",
    "MODEL_VALUE /software/2",
    "YAML_UNSUPPORTED /on_ready/0",
  ]);
  // Each YAML-level problem alone is reported as it was, with its own code (controls: one problem, one issue).
  assertCode(() => parseProfileText("name: d\nbase: {os: debian12}\nsoftware:\n  -\n"), "MODEL_NULL_ENTRY", "/software/0");
  assertCode(() => parseProfileText("name: d\nname: e\nbase: {os: debian12}\n"), "JSON_DUPLICATE_KEY", "/name");
  assertCode(() => parseProfileText("name: d\nbase: {os: debian12}\non_ready: [&a echo]\n"), "YAML_UNSUPPORTED", "/on_ready/0");
  // A problem the YAML reader found is not reported a second time by the model's reading of the same place.
  const e = assertCode(() => parseProfileText("name: d\nbase: {os: debian12}\nsoftware:\n  -\n  - py/thon\n"), "PROFILE_INVALID");
  assert.deepEqual(
    e.issues.map((i) => `${i.code} ${i.path}`),
    ["MODEL_NULL_ENTRY /software/0", "MODEL_VALUE /software/1"],
  );
  assert.match(e.message, /2 problem\(s\)/);
  // A duplicate key keeps its first value, which the model still checks.
  assert.deepEqual(issuePaths("name: BAD NAME\nname: e\nbase: {os: debian12}\n").sort(), ["JSON_DUPLICATE_KEY /name", "MODEL_VALUE /name"]);
});

test("unknown fields are errors with their paths, everywhere", () => {
  const paths = issuePaths("name: d\nbase: {os: debian12, kernel: 6}\nsoftwares: []\npackages: [{manager: pip, packages: [{name: x, pin: y}]}]\n");
  assert.deepEqual(paths, ["MODEL_UNKNOWN_FIELD /softwares", "MODEL_UNKNOWN_FIELD /base/kernel", "MODEL_UNKNOWN_FIELD /packages/0/packages/0/pin"]);
  parseProfileText("name: d\nbase: {os: debian12}\nsoftware: []\npackages: [{manager: pip, packages: [{name: x}]}]\n"); // control
});

test("the two ref forms are exclusive, and other ref mistakes are refused, each with its code and path (control: a good mapping)", () => {
  const base = "name: d\nbase: {os: debian12}\nsoftware:\n  - ";
  for (const [bad, code, path] of [
    ["{name: a, formation: b}", "MODEL_VALUE", "/software/0"],
    ["{version: '1'}", "MODEL_VALUE", "/software/0"],
    ["{name: a, version: null}", "MODEL_TYPE", "/software/0/version"],
    ["'py/thon'", "MODEL_VALUE", "/software/0"],
    ["'py@'", "MODEL_VALUE", "/software/0"],
    ["'formation:'", "MODEL_VALUE", "/software/0"],
    ["'a@1..2'", "MODEL_VALUE", "/software/0"],
    ["{name: a, extra: 1}", "MODEL_UNKNOWN_FIELD", "/software/0/extra"],
  ] as const) {
    assertCode(() => parseProfileText(base + bad), code, path);
  }
  parseProfileText(`${base}{name: a, version: "1"}`);
});

test("field rules: base name, arch, env names, trust scheme, conda-only env, duplicate keys", () => {
  const ok = "name: d\nbase: {os: debian12}\n";
  assert.doesNotThrow(() => parseProfileText(ok));
  assertCode(() => parseProfileText("name: d\nbase: {os: Debian}\n"), "MODEL_VALUE");
  assertCode(() => parseProfileText("name: d\nbase: {os: debian12, arch: i386}\n"), "MODEL_VALUE");
  assertCode(() => parseProfileText(`${ok}env: {"1BAD": x}\n`), "MODEL_VALUE");
  assertCode(() => parseProfileText(`${ok}registries: [{url: r, trust: "https://k"}]\n`), "MODEL_VALUE");
  assertCode(() => parseProfileText(`${ok}packages: [{manager: pip, env: x, packages: []}]\n`), "MODEL_VALUE");
  assertCode(() => parseProfileText(`${ok}packages: [{manager: npm, packages: []}]\n`), "MODEL_VALUE");
  assertCode(() => parseProfileText("name: d\nname: e\nbase: {os: debian12}\n"), "JSON_DUPLICATE_KEY");
  assertCode(() => parseProfileText("name: d\n"), "MODEL_MISSING_FIELD");
});
