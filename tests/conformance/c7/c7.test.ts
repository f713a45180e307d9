// Conformance suite C7: environment manifests. vectors/standard/ holds what
// the standard says, vectors/profile/ cairn's profile on top (each case names
// its rules, profile-rules.json; README.md). Each file is a group of cases,
// input (devcontainer.json text) → expected outcome:
//   expect.address        the exact blake3 address of the standard's core
//                         (recomputed by an independent encoder in address.test.ts)
//   expect.not_address    an address the input must NOT produce (controls)
//   expect.extension_address / not_extension_address   the same for cairn's extension
//   expect.core_has       a subset of the expected core, written by hand
//   expect.extension_has  a subset of the expected extension, written by hand
//   expect.pinned / image_pinned / unpinned   the pinning labels
//   expect.refused        the error code; expect.paths the offending fields
// Resume cases carry `snapshot` and `offered` inputs (and `allow_unpinned`)
// and expect {resume:"ok"} or {refused:"RESUME_MISMATCH"|"RESUME_UNPINNED", paths}.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2019 } from "ajv/dist/2019.js";
import { CairnError, parseJsonText, toJsonValue } from "../../../src/core/index.ts";
import {
  checkResume,
  ingestDevcontainer,
  manifestText,
  MANIFEST_FIELD_SCOPE,
  parseManifest,
  snapshotRefOf,
  type EnvManifest,
} from "../../../src/manifest/index.ts";
import { skipUnlessVectors, vectorsPath } from "../../helpers/vectors.ts";
import { KINDS, PROFILE_RULES, vectorFiles, type Case, type Kind } from "./vector-files.ts";

const C7 = fileURLToPath(new URL(".", import.meta.url));

function ingestText(text: string): EnvManifest {
  return ingestDevcontainer(parseJsonText(text, { jsonc: true })).manifest;
}

function refusal(fn: () => unknown): CairnError | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof CairnError) return e;
    throw e;
  }
  return undefined;
}

function pathsOf(e: CairnError): string[] {
  return e.issues.length > 0 ? [...new Set(e.issues.map((i) => i.path))].sort() : [e.path ?? ""];
}

function subset(actual: unknown, expected: unknown, where: string): void {
  if (typeof expected === "object" && expected !== null && !Array.isArray(expected)) {
    assert.ok(typeof actual === "object" && actual !== null, `${where}: expected an object`);
    for (const [k, v] of Object.entries(expected)) subset((actual as { [k: string]: unknown })[k], v, `${where}/${k}`);
  } else assert.deepEqual(actual, expected, where);
}

function run(c: Case): void {
  const x = c.expect;
  if (c.snapshot !== undefined && c.offered !== undefined) {
    const snap = snapshotRefOf(ingestText(c.snapshot));
    const e = refusal(() => checkResume(snap, ingestText(c.offered!), { allowUnpinned: c.allow_unpinned === true }));
    if (x.resume === "ok") assert.equal(e, undefined, e?.message);
    else {
      assert.equal(e?.code, x.refused, e?.message);
      assert.deepEqual(pathsOf(e!), [...(x.paths ?? [])].sort());
    }
    return;
  }
  const text = c.input!;
  if (x.refused !== undefined) {
    const e = refusal(() => ingestText(text));
    assert.ok(e, "expected a refusal, but the input was accepted");
    assert.equal(e.code, x.refused, e.message);
    if (x.paths) assert.deepEqual(pathsOf(e), [...x.paths].sort());
    return;
  }
  const m = ingestText(text);
  if (x.address !== undefined) assert.equal(m.address, x.address);
  if (x.not_address !== undefined) assert.notEqual(m.address, x.not_address);
  if (x.extension_address !== undefined) assert.equal(m.extension_address, x.extension_address);
  if (x.not_extension_address !== undefined) assert.notEqual(m.extension_address, x.not_extension_address);
  if (x.core_has !== undefined) subset(m.core, x.core_has, "core");
  if (x.extension_has !== undefined) subset(m.extension, x.extension_has, "extension");
  if (x.pinned !== undefined) assert.equal(m.pinned, x.pinned);
  if (x.image_pinned !== undefined) assert.equal(m.image_pinned, x.image_pinned);
  if (x.unpinned !== undefined) assert.deepEqual(m.unpinned, x.unpinned);
  // Every accepted input also survives its own manifest document.
  assert.deepEqual(parseManifest(parseJsonText(manifestText(m))), m);
}

test("C7 vector files are present: both kinds, every required group", () => {
  const groups = (k: Kind): string[] => vectorFiles(k).map(([f]) => f.replace(/\.json$/, ""));
  for (const g of ["determinism", "refused", "parsing", "substitutions", "mounts", "pinning", "resume", "features"])
    assert.ok(groups("standard").includes(g), g);
  for (const g of ["determinism", "refused", "parsing", "substitutions", "mounts", "pinning", "resume", "features", "extension", "values"])
    assert.ok(groups("profile").includes(g), g);
});

test("C7 profile rules: every profile case names known rules, every rule has cases, standard cases name none; README lists the rules as profile-rules.json does", () => {
  const ids = new Set(PROFILE_RULES.map((r) => r.id));
  const used = new Set<string>();
  for (const [f, doc] of vectorFiles("profile")) {
    for (const c of doc.cases) {
      assert.ok(c.rules !== undefined && c.rules.length > 0, `profile/${f} / ${c.name}: no rules`);
      for (const r of c.rules) {
        assert.ok(ids.has(r), `profile/${f} / ${c.name}: unknown rule ${r}`);
        used.add(r);
      }
    }
  }
  assert.deepEqual([...used].sort(), [...ids].sort());
  for (const [f, doc] of vectorFiles("standard")) for (const c of doc.cases) assert.equal(c.rules, undefined, `standard/${f} / ${c.name}`);
  for (const r of PROFILE_RULES) assert.ok(r.source.length > 0 && r.rule.length > 0, r.id);
  const readme = readFileSync(join(C7, "README.md"), "utf8");
  const rows = [...readme.matchAll(/^\| (P\d+) \| (.*) \| (.*) \|$/gm)].map((m) => ({ id: m[1], rule: m[2], source: m[3] }));
  assert.deepEqual(rows, PROFILE_RULES);
});

for (const kind of KINDS) {
  for (const [, doc] of vectorFiles(kind)) {
    test(`C7 ${kind} ${doc.group}`, async (t) => {
      assert.ok(doc.cases.length > 0);
      // Every group with refusals also has at least one accepted control.
      if (doc.cases.some((c) => c.expect.refused !== undefined)) {
        assert.ok(
          doc.cases.some((c) => c.expect.refused === undefined),
          `${kind} ${doc.group} has no positive control`,
        );
      }
      for (const c of doc.cases) await t.test(c.name, () => run(c));
    });
  }
}

test("C7 every accepted input is valid under the official devcontainer schema (independent oracle)", {
  skip: skipUnlessVectors("devcontainer", "devContainer.base.schema.json"),
}, () => {
  const schema = JSON.parse(readFileSync(vectorsPath("devcontainer", "devContainer.base.schema.json")!, "utf8")) as object;
  const validate = new Ajv2019({ strict: false, allErrors: true, validateFormats: false }).compile(schema);
  // Legacy spellings are accepted by cairn but no longer listed by the schema.
  const legacy = Object.entries(MANIFEST_FIELD_SCOPE)
    .filter(([, v]) => "legacy" in v)
    .map(([k]) => k);
  let checked = 0;
  for (const [f, doc] of KINDS.flatMap((k) => vectorFiles(k))) {
    for (const c of doc.cases) {
      if (c.expect.refused !== undefined) continue;
      for (const text of [c.input, c.snapshot, c.offered]) {
        if (text === undefined) continue;
        const v = toJsonValue(parseJsonText(text, { jsonc: true }));
        if (legacy.some((k) => typeof v === "object" && v !== null && k in v)) continue;
        assert.ok(validate(v), `${f} / ${c.name}: ${JSON.stringify(validate.errors?.slice(0, 2))}`);
        checked++;
      }
    }
  }
  assert.ok(checked > 30, `only ${checked} inputs checked`);
  // Control: the schema does reject something (a wrongly typed image).
  assert.equal(validate({ image: 42 }), false);
});
