/**
 * Issue 32, items 4 and 7: every profile form that the seed
 * (../shared/seeds/002_bbb23a1942433a8c.txt, Strata's `spec` package v0.29.0)
 * shows or implies in its documentation, written here by hand from its doc
 * comments and struct tags. Each form must validate; the count of those that
 * do is printed (the note gives it before and after).
 *
 * Sources, by the seed's type:
 * - SoftwareRef / ParseSoftwareRef: `cuda`, `cuda@12.3`,
 *   `formation:cuda-python-ml@2024.03`; UnmarshalYAML's `python@3.13`,
 *   `formation:bio-seq@2026.03`, `{name: python, version: "3.13"}`; the
 *   `formation` field's `name@version` format.
 * - Profile.Defaults: `[{name: gcc, version: "14.2.0"}, {name: python, version: "3.12.13"}]`.
 * - MutableLayerSpec: name, version, size_gb (default 20), volume_type (default gp3), abi.
 * - RegistryRef.Trust: strata-core, keyfile://<path>, keyless; URL an S3 URL.
 * - InstanceConfig: type, spot, spot_fallback, placement, region.
 * - StorageMount: type (s3, efs, ebs, instance_store), mount, bucket, id, read_only.
 * - BaseRef: os (al2023, rocky9, rocky10, ubuntu24), arch x86_64 (default) / arm64.
 * - HostRequirement: {key, value}, value a constraint or boolean string (">=525", "true").
 * - PackageSpec / PackageEntry: manager pip/conda/cran, env (conda), packages [{name, version}].
 * - LayerManifest.name examples and Strata's own layer names (`R`).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  buildLayerFromDirectory,
  LocalRegistry,
  openRegistries,
  parseCapability,
  parseProfileText,
  parseSoftwareRef,
  profileToYaml,
  profileToModel,
  refString,
  refToModel,
  resolveProfile,
  trustNotes,
} from "../../src/strata/index.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { toySpec } from "../../examples/strata/build-registry.ts";
import { catalogOf, exampleRegistry, NOW, probedExampleBase, tempDir } from "./fixtures.ts";

const HEAD = "name: seed-forms\nbase: {os: al2023}\n";

/** [label, profile text]: each a profile in one form the seed documents. */
export const SEED_FORMS: readonly (readonly [string, string])[] = [
  ["software scalar: cuda", `${HEAD}software: [cuda]\n`],
  ["software scalar: cuda@12.3", `${HEAD}software: [cuda@12.3]\n`],
  ["software scalar: formation:cuda-python-ml@2024.03", `${HEAD}software: ["formation:cuda-python-ml@2024.03"]\n`],
  ["software scalar: python@3.13", `${HEAD}software: [python@3.13]\n`],
  ["software scalar: formation:bio-seq@2026.03", `${HEAD}software: ["formation:bio-seq@2026.03"]\n`],
  ['software mapping: {name: python, version: "3.13"}', `${HEAD}software: [{name: python, version: "3.13"}]\n`],
  ["software mapping: {name: cuda}", `${HEAD}software: [{name: cuda}]\n`],
  ["software mapping: {formation: cuda-python-ml@2024.03}", `${HEAD}software: [{formation: "cuda-python-ml@2024.03"}]\n`],
  ['software mapping: {name: "formation:cuda-python-ml@2024.03"}', `${HEAD}software: [{name: "formation:cuda-python-ml@2024.03"}]\n`],
  ["software: Strata's layer name R", `${HEAD}software: [R@4.4]\n`],
  ["software: R as a mapping", `${HEAD}software: [{name: R, version: "4.4.1"}]\n`],
  ["software: a capitalised name", `${HEAD}software: [OpenMPI@5.0]\n`],
  [
    'defaults: [{name: gcc, version: "14.2.0"}, {name: python, version: "3.12.13"}]',
    `${HEAD}software: [gcc@14.2.0, python@3.12.13]\ndefaults: [{name: gcc, version: "14.2.0"}, {name: python, version: "3.12.13"}]\n`,
  ],
  ["defaults: scalar SoftwareRefs [gcc@14.2.0, python]", `${HEAD}software: [gcc@14.2.0, python]\ndefaults: [gcc@14.2.0, python]\n`],
  [
    "mutable_layer: {name, version, size_gb, volume_type, abi}",
    `${HEAD}software: [python]\nmutable_layer: {name: torch-ml, version: "1.0", size_gb: 50, volume_type: gp3, abi: linux-gnu-2.34}\n`,
  ],
  ["mutable_layer: {name, version} (size_gb and volume_type defaulted)", `${HEAD}software: [python]\nmutable_layer: {name: torch-ml, version: "1.0"}\n`],
  ["mutable_layer: volume_type io2", `${HEAD}software: [python]\nmutable_layer: {name: scratch, version: "0.1", size_gb: 100, volume_type: io2}\n`],
  ["registries: trust strata-core", `${HEAD}software: [python]\nregistries: [{url: "s3://strata-public-layers", trust: strata-core}]\n`],
  ["registries: trust keyless", `${HEAD}software: [python]\nregistries: [{url: "s3://my-layers", trust: keyless}]\n`],
  ["registries: trust keyfile://PATH", `${HEAD}software: [python]\nregistries: [{url: ./registry, trust: "keyfile://./registry.pub"}]\n`],
  [
    "instance: every InstanceConfig field",
    `${HEAD}software: [python]\ninstance: {type: p4d.24xlarge, spot: true, spot_fallback: p4de.24xlarge, placement: cluster, region: us-east-1}\n`,
  ],
  ["instance: type only", `${HEAD}software: [python]\ninstance: {type: c7i.large}\n`],
  [
    "storage: StorageMount entries (s3, efs, ebs, instance_store)",
    `${HEAD}software: [python]\nstorage:\n  - {type: s3, mount: /data, bucket: my-bucket, read_only: true}\n  - {type: efs, mount: /shared, id: fs-0123456789abcdef0}\n  - {type: ebs, mount: /scratch}\n  - {type: instance_store, mount: /local}\n`,
  ],
  ["base: {os: al2023, arch: x86_64}", "name: seed-forms\nbase: {os: al2023, arch: x86_64}\nsoftware: [python]\n"],
  ["base: {os: rocky9, arch: arm64}", "name: seed-forms\nbase: {os: rocky9, arch: arm64}\nsoftware: [python]\n"],
  ["base: {os: rocky10}", "name: seed-forms\nbase: {os: rocky10}\nsoftware: [python]\n"],
  ["base: {os: ubuntu24}", "name: seed-forms\nbase: {os: ubuntu24}\nsoftware: [python]\n"],
  [
    'requires_host: [{key: cuda-driver, value: ">=525"}, {key: efa, value: "true"}]',
    `${HEAD}software: [python]\nrequires_host: [{key: cuda-driver, value: ">=525"}, {key: efa, value: "true"}]\n`,
  ],
  ["packages: pip with versions", `${HEAD}software: [python]\npackages: [{manager: pip, packages: [{name: numpy, version: "1.26"}, {name: pandas}]}]\n`],
  ["packages: conda with env", `${HEAD}software: [python]\npackages: [{manager: conda, env: analysis, packages: [{name: scipy}]}]\n`],
  ["packages: cran", `${HEAD}software: [R]\npackages: [{manager: cran, packages: [{name: ggplot2, version: "3.5"}]}]\n`],
  ["packages only (no software)", `${HEAD}packages: [{manager: pip, packages: [{name: numpy}]}]\n`],
  [
    "every Profile field at once",
    `name: ml-env
description: "GPU training"
version: "2.1"
base: {os: al2023, arch: x86_64}
software:
  - cuda@12.3
  - {name: python, version: "3.12"}
  - "formation:cuda-python-ml@2024.03"
registries:
  - {url: "s3://strata-public-layers", trust: strata-core}
instance: {type: g5.xlarge, spot: true}
storage:
  - {type: s3, mount: /data, bucket: datasets, read_only: true}
env: {OMP_NUM_THREADS: "8"}
on_ready: ["nvidia-smi"]
defaults: [{name: python, version: "3.12"}]
packages:
  - {manager: pip, packages: [{name: torch, version: "2.3"}]}
mutable_layer: {name: torch-ml, version: "1.0", size_gb: 40}
requires_host: [{key: cuda-driver, value: ">=525"}]
`,
  ],
];

test("the seed's profile forms: each validates (count printed for the issue's note)", (t) => {
  const refused: string[] = [];
  for (const [label, text] of SEED_FORMS) {
    try {
      parseProfileText(text);
    } catch (e) {
      refused.push(`${label}: ${(e as Error).message.split("\n").slice(0, 3).join(" | ")}`);
    }
  }
  t.diagnostic(`seed profile forms accepted: ${SEED_FORMS.length - refused.length} of ${SEED_FORMS.length}`);
  for (const r of refused) t.diagnostic(`refused: ${r}`);
  assert.deepEqual(refused, []);
});

test("the seed's profile forms: each written back by cairn reads back equal", () => {
  for (const [label, text] of SEED_FORMS) {
    const p = parseProfileText(text);
    const written = profileToYaml(p);
    assert.deepEqual(profileToModel(parseProfileText(written)), profileToModel(p), label);
    assert.equal(profileToYaml(parseProfileText(written)), written, `${label}: byte-stable`);
  }
});

const P = (body: string) => parseProfileText(`name: t\nbase: {os: al2023}\n${body}`);

test("ParseSoftwareRef and String, per the seed: the three documented forms, whitespace trimmed; written in the mapping form every Strata reads", () => {
  assert.deepEqual(parseSoftwareRef("cuda"), { kind: "layer", name: "cuda" });
  assert.deepEqual(parseSoftwareRef("cuda@12.3"), { kind: "layer", name: "cuda", version: "12.3" });
  assert.deepEqual(parseSoftwareRef("formation:cuda-python-ml@2024.03"), { kind: "formation", name: "cuda-python-ml", version: "2024.03" });
  assert.deepEqual(parseSoftwareRef("  cuda@12.3 "), parseSoftwareRef("cuda@12.3"), "ParseSoftwareRef trims");
  for (const s of ["cuda", "cuda@12.3", "formation:cuda-python-ml@2024.03", "R@4.4"]) {
    assert.equal(refString(parseSoftwareRef(s)), s, `String(ParseSoftwareRef(${s}))`);
    const r = parseSoftwareRef(s);
    assert.deepEqual(
      refToModel(r),
      r.kind === "formation" ? { formation: `${r.name}@${r.version}` } : { name: r.name, ...(r.version !== undefined ? { version: r.version } : {}) },
      "written in the mapping form, which every Strata reads",
    );
  }
  for (const bad of ["", "   ", "formation:", "cu da", "a/b", "@1.0", "cuda@"]) assertCode(() => parseSoftwareRef(bad), "MODEL_VALUE");
});

test("a name field holding formation:NAME@V is the formation ref it spells; a refusal names the whole ref as written", () => {
  assert.deepEqual(P('software: [{name: "formation:cuda-python-ml@2024.03"}]\n').software, P('software: ["formation:cuda-python-ml@2024.03"]\n').software);
  const bad = assertCode(() => P('software: [{name: "formation:cuda python@2024.03"}]\n'), "MODEL_VALUE", "/software/0");
  assert.ok(bad.message.includes('"formation:cuda python@2024.03"'), bad.message);
  const ver = assertCode(() => P('software: ["formation:cuda-python-ml@2024..03"]\n'), "MODEL_VALUE", "/software/0");
  assert.ok(ver.message.includes('"formation:cuda-python-ml@2024..03"'), ver.message);
  const twice = assertCode(() => P('software: [{name: "formation:cuda-python-ml@2024.03", version: "1"}]\n'), "MODEL_VALUE", "/software/0");
  assert.ok(twice.message.includes("formation:cuda-python-ml@2024.03"), twice.message);
});

test("names Strata uses: R and capital letters read, in software, defaults and the mutable layer; names no path component can hold are refused", () => {
  const p = P('software: [R@4.4, {name: OpenMPI}]\ndefaults: [R@4.4]\nmutable_layer: {name: My-Layer, version: "1"}\n');
  assert.deepEqual(p.software.map(refString), ["R@4.4", "OpenMPI"]);
  assert.deepEqual(p.defaults.map(refString), ["R@4.4"]);
  for (const bad of ["software: [../etc]", "software: [.hidden]", "software: ['a:b']"]) assertCode(() => P(`${bad}\n`), "MODEL_VALUE", "/software/0");
});

test("requires_host: the seed's {key, value}; cairn's requirement strings are refused naming the mapping they would be", () => {
  assert.deepEqual(P('requires_host: [{key: cuda-driver, value: ">=525"}, {key: efa, value: true}]\n').requires_host, [
    { key: "cuda-driver", value: ">=525" },
    { key: "efa", value: "true" },
  ]);
  const kvm = assertCode(() => P("requires_host: [kvm]\n"), "MODEL_TYPE", "/requires_host/0");
  assert.match(kvm.message, /\{key: kvm, value: "true"\}/);
  const cuda = assertCode(() => P('requires_host: ["cuda>=12"]\n'), "MODEL_TYPE", "/requires_host/0");
  assert.match(cuda.message, /\{key: cuda, value: ">=12"\}/);
  assertCode(() => P("requires_host: [{key: cuda-driver, value: 525.10}]\n"), "MODEL_TYPE", "/requires_host/0/value");
  assert.deepEqual(P("requires_host: [{key: gpus, value: 4}]\n").requires_host, [{ key: "gpus", value: "4" }], "control: a whole number is its text");
});

test("trust: strata-core and keyless validate and are noted; resolve refuses them naming the mode and that cairn verifies keyfiles offline only; keyfile:// is the control", async () => {
  for (const mode of ["strata-core", "keyless"]) {
    const p = P(`registries: [{url: "s3://strata-public-layers", trust: ${mode}}]\n`);
    assert.equal(p.registries[0]!.trust, mode);
    assert.equal(trustNotes(p).length, 1);
    const e = await assertCodeAsync(() => openRegistries({ env: {}, cwd: "/", registries: [], trust: [], profile: p }), "TRUST_REFUSED", "/registries/0/trust");
    assert.ok(e.message.includes(`trust ${mode}`), e.message);
    assert.match(e.message, /cairn verifies keyfiles offline only/);
    assert.ok(!/[\\^$]|\/\^/.test(e.message), `no regex in the message: ${e.message}`);
  }
  const bad = assertCode(() => P("registries: [{url: ./r, trust: pgp}]\n"), "MODEL_VALUE", "/registries/0/trust");
  assert.ok(!bad.message.includes("/^"), `no regex in the message: ${bad.message}`);
  assert.match(bad.message, /keyfile:\/\/PATH, strata-core or keyless/);
  const ex = exampleRegistry();
  const good = parseProfileText(`name: t\nbase: {os: debian12}\nregistries: [{url: ${ex.registry}, trust: "keyfile://${ex.root}/registry.pub"}]\n`);
  assert.deepEqual(trustNotes(good), []);
  const opened = await openRegistries({ env: {}, cwd: "/", registries: [], trust: [], profile: good });
  assert.equal(opened[0]!.source.keys.length, 1, "control: the keyfile is read");
});

test("profile validate says which trust resolve refuses and what is not acted upon; resolve refuses strata-core by name (the CLI)", () => {
  const dir = tempDir("cairn-seed-forms-");
  const file = join(dir, "p.yaml");
  writeFileSync(
    file,
    `name: t\nbase: {os: al2023}\nsoftware: [python]\nregistries: [{url: "s3://strata-public-layers", trust: strata-core}]\ninstance: {type: g5.xlarge}\n`,
  );
  const cli = join(import.meta.dirname, "../../bin/cairn.js");
  const v = spawnSync(process.execPath, [cli, "profile", "validate", file], { encoding: "utf8" });
  assert.equal(v.status, 0, v.stderr);
  assert.match(v.stdout, /trust strata-core is read, but resolve refuses it/);
  assert.match(v.stdout, /recorded, not acted upon: instance/);
  const r = spawnSync(process.execPath, [cli, "resolve", file, "--out", join(dir, "lock.yaml"), "--json"], {
    encoding: "utf8",
    env: { ...process.env, CAIRN_HOME: dir },
  });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  const err = JSON.parse(r.stdout).error;
  assert.equal(err.code, "TRUST_REFUSED");
  assert.equal(err.path, "/registries/0/trust");
  assert.match(err.message, /strata-core.*cairn verifies keyfiles offline only/);
});

test("docs/strata.md's forms table: every row names a test that exists, and the before/after figures are this file's", () => {
  const doc = readFileSync(join(import.meta.dirname, "../../docs/strata.md"), "utf8");
  const section = doc.slice(doc.indexOf("### Strata's profile forms"), doc.indexOf("## Versions, capabilities, requirements"));
  const rows = section.split("\n").filter((l) => l.startsWith("| `") || l.startsWith("| a "));
  assert.ok(rows.length >= 15, `rows: ${rows.length}`);
  for (const row of rows) {
    const cell = row.split(" | ").at(-1)!.replace(/ \|$/, "");
    const refs = [...cell.matchAll(/`([a-z-]+\.test\.ts)`((?: "(?:[^"\\]|\\.)*",?)*)/g)];
    assert.ok(refs.length > 0, `a test named in: ${row.slice(0, 80)}`);
    for (const [, file, names] of refs) {
      const text = readFileSync(join(import.meta.dirname, file!), "utf8");
      for (const [, name] of names!.matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
        const want = name!.replace(/\\"/g, '\\"');
        assert.ok(text.includes(`test("${want}`), `${file} has a test starting "${name}" (row: ${row.slice(0, 60)})`);
      }
    }
  }
  assert.match(section, new RegExp(`all ${SEED_FORMS.length} do`));
  assert.match(section, new RegExp(`\\(${SEED_FORMS.length}, from its doc comments`));
});

test("second pass: a host requirement's value holding a control character (an escape sequence, a newline) is refused, since resolve and lock diff print it; control: a printable value", () => {
  for (const bad of ['"\\e[2J\\e[31mok"', '"true\\nwarning: all checks passed"', '"\\u009b31m"', '"a\\u2028b"'])
    assertCode(() => P(`requires_host: [{key: efa, value: ${bad}}]\n`), "MODEL_VALUE", "/requires_host/0/value");
  assert.deepEqual(P('requires_host: [{key: efa, value: ">=1.2 (any) ü"}]\n').requires_host, [{ key: "efa", value: ">=1.2 (any) ü" }]);
});

test("second pass: the refusal of a wrong-typed defaults or mutable_layer reads as a sentence naming the seed's form", () => {
  for (const [text, path] of [
    ["mutable_layer: ~\n", "/mutable_layer"],
    ["mutable_layer: [a]\n", "/mutable_layer"],
    ["defaults: ~\n", "/defaults"],
    ["defaults: bash\n", "/defaults"],
  ] as const) {
    const e = assertCode(() => P(text), "MODEL_TYPE", path);
    assert.ok(!/ is write /.test(e.message), e.message);
    assert.match(e.message, /must be|is cairn's earlier form/);
  }
});

test("second pass: a Strata profile whose registries are strata-core on s3 resolves against a registry named on the command line with its keyfile; without one, its trust is refused", async () => {
  const ex = exampleRegistry();
  const p = P('registries: [{url: "s3://strata-public-layers", trust: strata-core}, {url: "s3://my-layers", trust: keyless}]\n');
  const opened = await openRegistries({ env: {}, cwd: "/", registries: [ex.registry], trust: [`keyfile://${ex.root}/registry.pub`], profile: p });
  assert.equal(opened.length, 1);
  assert.equal(opened[0]!.source.keys.length, 1, "the command line's key, nothing from the profile's online modes");
  await assertCodeAsync(() => openRegistries({ env: {}, cwd: "/", registries: [], trust: [], profile: p }), "TRUST_REFUSED", "/registries/0/trust");
});

test("a layer named R (Strata's name for R) is built, published, and resolved by software: [R@4.4] with defaults [R]; control: r names no layer", async () => {
  const ex = exampleRegistry();
  const src = join(ex.root, "src-R");
  mkdirSync(join(src, "opt/R/4.4.1/bin"), { recursive: true });
  writeFileSync(join(src, "opt/R/4.4.1/bin/R"), "#!/bin/sh\necho R\n", { mode: 0o755 });
  const spec = { ...toySpec({ name: "R", version: "4.4.1", files: {} }), provides: [parseCapability("r@4.4.1")] };
  const built = buildLayerFromDirectory(src, spec);
  LocalRegistry.open(ex.registry).publishLayer(built.blob.blob, built.manifest, [ex.registryKey]);
  const resolve = async (text: string) =>
    resolveProfile({
      profile: parseProfileText(text),
      catalog: catalogOf(ex),
      probedBase: await probedExampleBase(ex),
      allowUnsignedOffline: false,
      now: NOW,
      cairnVersion: "t",
    });
  const lock = await resolve("name: stats\nbase: {os: debian12}\nsoftware: [R@4.4]\ndefaults: [R]\n");
  assert.deepEqual(
    lock.layers.map((l) => l.id),
    ["R-4.4.1-none-noarch"],
  );
  assert.deepEqual(lock.defaults, [{ kind: "layer", name: "R" }]);
  await assert.rejects(resolve("name: stats\nbase: {os: debian12}\nsoftware: [r@4.4]\n"), (e: { code: string }) => e.code === "RESOLVE_FAILED");
});
