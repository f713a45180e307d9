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
defaults: {shell: /bin/bash}
packages:
  - manager: conda
    env: analysis
    packages: [{name: scipy, version: "1.13"}, {name: pandas}]
mutable_layer: true
requires_host: [gpu>=1]
instance: {cpus: 4}
storage: {size: 10G}
`;

test("a complete profile parses, with defaults and both ref forms", () => {
  const p = parseProfileText(GOOD);
  assert.equal(p.base.arch, "x86_64", "arch defaults to x86_64");
  assert.deepEqual(p.software.map(refString), ["python@3.12", "numpy", "formation:bio-seq@2026.03", "r-base@4.4", "formation:tools"]);
  assert.equal(p.packages[0]!.env, "analysis");
  assert.equal(p.mutable_layer, true);
  assert.deepEqual(p.instance, Object.assign(Object.create(null), { cpus: 4 }));
});

test("writing a profile back reads back equal", () => {
  const p = parseProfileText(GOOD);
  const again = parseProfileText(profileToYaml(p));
  assert.deepEqual(profileToModel(again), profileToModel(p));
  assert.equal(profileToYaml(again), profileToYaml(p));
});

test("refs: scalar and mapping round-trip (property), and a mapping is used when the scalar would not survive", () => {
  const name = fc.stringMatching(/^[a-z0-9][a-z0-9._+-]{0,10}$/);
  const version = fc.option(fc.stringMatching(/^[0-9a-z]{1,3}(\.[0-9a-z]{1,3}){0,2}$/), { nil: undefined });
  fc.assert(
    fc.property(fc.constantFrom("layer" as const, "formation" as const), name, version, (kind, n, v) => {
      const ref = { kind, name: n, ...(v !== undefined ? { version: v } : {}) };
      const c = new Checker("PROFILE_INVALID");
      const back = readRef(c, refToModel(ref) as never, "");
      assert.ok(c.ok, JSON.stringify(c.issues));
      assert.deepEqual(back, ref);
    }),
    { numRuns: 300 },
  );
  assert.equal(typeof refToModel({ kind: "layer", name: "python", version: "3.12" }), "string");
});

function issuePaths(text: string): string[] {
  try {
    parseProfileText(text);
  } catch (e) {
    const err = e as { issues: { path: string }[]; path: string };
    return err.issues.length > 0 ? err.issues.map((i) => i.path) : [err.path];
  }
  assert.fail("expected a refusal");
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

test("unknown fields are errors with their paths, everywhere", () => {
  const paths = issuePaths("name: d\nbase: {os: debian12, kernel: 6}\nsoftwares: []\npackages: [{manager: pip, packages: [{name: x, pin: y}]}]\n");
  for (const p of ["/softwares", "/base/kernel", "/packages/0/packages/0/pin"]) assert.ok(paths.includes(p), `${p} in ${paths.join(", ")}`);
});

test("the two ref forms are exclusive, and other ref mistakes are refused", () => {
  const base = "name: d\nbase: {os: debian12}\nsoftware:\n  - ";
  for (const bad of [
    "{name: a, formation: b}",
    "{version: '1'}",
    "{name: a, version: null}",
    "'Python'",
    "'py@'",
    "'formation:'",
    "'a@1..2'",
    "{name: a, extra: 1}",
  ]) {
    assert.throws(
      () => parseProfileText(base + bad),
      (e: unknown) => (e as { code: string }).code !== undefined,
      bad,
    );
  }
  assert.doesNotThrow(() => parseProfileText(`${base}{name: a, version: "1"}`));
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
