/**
 * Issue 13 item 1: Strata's profile forms. The fixtures in
 * tests/strata/fixtures/ are profiles written in Strata's forms; each
 * validates, reads back equal after cairn writes it, and resolves against the
 * toy registry. Each refused or invalid form has a control.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  environmentId,
  lockfileToYaml,
  parseLockfileText,
  parseProfileText,
  profileToModel,
  profileToYaml,
  resolveProfile,
  type Lockfile,
  type Profile,
} from "../../src/strata/index.ts";
import { readProfileFile } from "../../src/strata/profile-file.ts";
import { catalogOf, exampleRegistry, NOW, probedExampleBase } from "./fixtures.ts";
import { assertCode } from "../helpers/errors.ts";

const FIXTURES = join(import.meta.dirname, "fixtures");
const ex = exampleRegistry();

async function resolve(p: Profile, probe = true): Promise<Lockfile> {
  return resolveProfile({
    profile: p,
    catalog: catalogOf(ex),
    ...(probe ? { probedBase: await probedExampleBase(ex) } : {}),
    allowUnsignedOffline: false,
    now: NOW,
    cairnVersion: "test",
  });
}

const P = (body: string): Profile => parseProfileText(`name: t\nbase: {os: debian12}\n${body}`);

test("the Strata-form fixtures validate, round-trip and resolve against the toy registry", async () => {
  for (const [file, probe] of [
    ["strata-sequencing.yaml", true],
    ["strata-settings.yaml", true],
    ["strata-arm.yaml", false], // the toy base is x86_64: the arm64 profile resolves on its declared base
  ] as const) {
    const p = readProfileFile(join(FIXTURES, file));
    assert.deepEqual(profileToModel(parseProfileText(profileToYaml(p))), profileToModel(p), `${file}: reads back equal`);
    const lock = await resolve(p, probe);
    assert.ok(lock.layers.length > 0, `${file}: resolved`);
    const back = parseLockfileText(lockfileToYaml(lock));
    assert.equal(environmentId(back), environmentId(lock), `${file}: the lockfile reads back with the same ID`);
  }
  const seq = await resolve(readProfileFile(join(FIXTURES, "strata-sequencing.yaml")));
  assert.deepEqual(seq.layers.map((l) => l.name).sort(), ["bwa", "numpy", "python", "samtools"]);
  assert.ok(
    seq.layers.some((l) => l.from_formation === "bio-seq@2026.03"),
    "the formation mapping form brought the formation in",
  );
  assert.deepEqual(
    seq.defaults,
    [
      { kind: "layer", name: "python", version: "3.12" },
      { kind: "layer", name: "samtools", version: "1.20" },
    ],
    "defaults: software refs, in order",
  );
  assert.deepEqual(seq.mutable_layer, { name: "seq-work", version: "1.0", size_gb: 20, volume_type: "local-ssd", abi: "linux-gnu-2.36" });
  assert.equal(seq.base.arch, "x86_64", "amd64 is read as x86_64");
  const arm = await resolve(readProfileFile(join(FIXTURES, "strata-arm.yaml")), false);
  assert.equal(arm.base.arch, "aarch64");
  assert.ok(!lockfileToYaml(arm).includes("arm64"), "one canonical spelling in the lockfile");
});

test("a software ref: Strata's {formation: name@version} is the scalar ref; the version given twice is refused", () => {
  assert.deepEqual(P('software: [{formation: "bio-seq@2026.03"}]\n').software, P("software: [formation:bio-seq@2026.03]\n").software);
  assert.deepEqual(P('software: [{name: "python@3.12"}]\n').software, P("software: [python@3.12]\n").software);
  assertCode(() => P('software: [{formation: "bio-seq@2026.03", version: "2026.03"}]\n'), "MODEL_VALUE", "/software/0");
  assert.deepEqual(P('software: [{formation: bio-seq, version: "2026.03"}]\n').software, P("software: [formation:bio-seq@2026.03]\n").software, "control");
});

test("arch: arm64 and amd64 map to the canonical names, an unknown arch is refused; a lockfile holds only canonical names", () => {
  assert.equal(parseProfileText("name: t\nbase: {os: debian12, arch: arm64}\n").base.arch, "aarch64");
  assert.equal(parseProfileText("name: t\nbase: {os: debian12, arch: amd64}\n").base.arch, "x86_64");
  assertCode(() => parseProfileText("name: t\nbase: {os: debian12, arch: sparc}\n"), "MODEL_VALUE", "/base/arch");
  assert.equal(parseProfileText("name: t\nbase: {os: debian12, arch: aarch64}\n").base.arch, "aarch64", "control");
  // A profile is written with the seed's spelling (BaseRef.Arch: x86_64, arm64), and reads back as aarch64.
  const written = profileToYaml(parseProfileText("name: t\nbase: {os: debian12, arch: aarch64}\n"));
  assert.match(written, /arch: arm64/);
  assert.equal(parseProfileText(written).base.arch, "aarch64");
  assert.match(profileToYaml(parseProfileText("name: t\nbase: {os: debian12, arch: amd64}\n")), /arch: x86_64/);
});

test("mutable_layer: the seed's MutableLayerSpec, validated; cairn's boolean and {size} forms are refused naming it; its ABI must be the probed base's", async () => {
  assert.deepEqual(P('mutable_layer: {name: work, version: "1.0"}\n').mutable_layer, { name: "work", version: "1.0", size_gb: 20, volume_type: "gp3" });
  assert.deepEqual(
    P('mutable_layer: {name: work, version: "1.0", size_gb: 0}\n').mutable_layer,
    { name: "work", version: "1.0", size_gb: 20, volume_type: "gp3" },
    "0 is the default, as the seed says",
  );
  assert.deepEqual(P('mutable_layer: {name: work, version: "1.0", size_gb: 512, volume_type: io2, abi: linux-gnu-2.34}\n').mutable_layer, {
    name: "work",
    version: "1.0",
    size_gb: 512,
    volume_type: "io2",
    abi: "linux-gnu-2.34",
  });
  assertCode(() => P('mutable_layer: {version: "1.0"}\n'), "MODEL_MISSING_FIELD", "/mutable_layer/name");
  assertCode(() => P("mutable_layer: {name: work}\n"), "MODEL_MISSING_FIELD", "/mutable_layer/version");
  assertCode(() => P('mutable_layer: {name: work, version: "1.0", size_gb: 20GiB}\n'), "MODEL_TYPE", "/mutable_layer/size_gb");
  assertCode(() => P('mutable_layer: {name: work, version: "1.0", size_gb: 2.5}\n'), "MODEL_TYPE", "/mutable_layer/size_gb");
  assertCode(() => P('mutable_layer: {name: work, version: "1.0", size_gb: 100000}\n'), "LIMIT_EXCEEDED", "/mutable_layer/size_gb");
  assertCode(() => P('mutable_layer: {name: work, version: "1.0", abi: Linux/GNU}\n'), "MODEL_VALUE", "/mutable_layer/abi");
  assertCode(() => P('mutable_layer: {name: work, version: "1.0", fs: xfs}\n'), "MODEL_UNKNOWN_FIELD", "/mutable_layer/fs");
  for (const old of ["true", "false"]) {
    const e = assertCode(() => P(`mutable_layer: ${old}\n`), "MODEL_TYPE", "/mutable_layer");
    assert.match(e.message, /MutableLayerSpec \{name: NAME, version/, "names the seed's form");
  }
  const size = assertCode(() => P("mutable_layer: {size: 20GiB}\n"), "MODEL_UNKNOWN_FIELD", "/mutable_layer/size");
  assert.match(size.message, /size_gb/);
  await assert.rejects(resolve(P('software: [tool-a]\nmutable_layer: {name: w, version: "1", abi: linux-musl-1.2}\n')), (e: { code: string; path: string }) => {
    assert.equal(e.code, "RESOLVE_FAILED");
    assert.equal(e.path, "/mutable_layer/abi");
    return true;
  });
  await assert.rejects(resolve(P('software: [tool-a]\nmutable_layer: {name: w, version: "1", abi: vms}\n')), (e: { code: string; path: string }) => {
    assert.equal(e.code, "RESOLVE_FAILED");
    assert.equal(e.path, "/mutable_layer/abi");
    return true;
  });
  const ok = await resolve(P('software: [tool-a]\nmutable_layer: {name: w, version: "1", abi: linux-gnu-2.36}\n'));
  assert.equal(ok.mutable_layer?.abi, "linux-gnu-2.36", "control: the gnu family on the gnu base");
  assert.notEqual(
    environmentId(ok),
    environmentId(await resolve(P('software: [tool-a]\nmutable_layer: {name: w, version: "1", size_gb: 30, abi: linux-gnu-2.36}\n'))),
    "the spec is part of the ID",
  );
});

test("defaults: []SoftwareRef in both forms; cairn's settings mapping and Lmod module names are refused naming the seed's form", () => {
  const refs = [
    { kind: "layer", name: "gcc", version: "14.2.0" },
    { kind: "layer", name: "python", version: "3.12.13" },
  ];
  assert.deepEqual(P('defaults: [{name: gcc, version: "14.2.0"}, {name: python, version: "3.12.13"}]\n').defaults, refs);
  assert.deepEqual(P("defaults: [gcc@14.2.0, python@3.12.13]\n").defaults, refs, "the scalar form is the same value");
  assert.deepEqual(P("defaults: [openmpi]\n").defaults, [{ kind: "layer", name: "openmpi" }], "a bare module name is a SoftwareRef scalar");
  const map = assertCode(() => P("defaults: {shell: bash}\n"), "MODEL_TYPE", "/defaults");
  assert.match(map.message, /\[\{name: gcc, version: "14\.2\.0"\}\]/);
  const mod = assertCode(() => P("defaults: [gcc/12.2]\n"), "MODEL_VALUE", "/defaults/0");
  assert.match(mod.message, /gcc@12\.2/, "names the ref it would be");
  assertCode(() => P("defaults: bash\n"), "MODEL_TYPE", "/defaults");
  assertCode(() => P("defaults: [{name: gcc, version: 14.10}]\n"), "MODEL_TYPE", "/defaults/0/version");
});

test("instance and storage: the seed's InstanceConfig and []StorageMount, strict; cairn's free mappings are refused", () => {
  const p = P("instance: {type: p4d.24xlarge, spot: true, spot_fallback: p4de.24xlarge, placement: cluster, region: us-east-1}\n");
  assert.deepEqual({ ...p.instance }, { type: "p4d.24xlarge", spot: true, spot_fallback: "p4de.24xlarge", placement: "cluster", region: "us-east-1" });
  assert.equal(P("instance: {spot: false}\n").instance, undefined, "a zero InstanceConfig is none, as the seed's omitempty writes it");
  assertCode(() => P("instance: {cpus: 4}\n"), "MODEL_UNKNOWN_FIELD", "/instance/cpus");
  assertCode(() => P("instance: {spot: yes}\n"), "MODEL_TYPE", "/instance/spot");
  const s = P("storage: [{type: s3, mount: /data, bucket: b, read_only: true}, {type: efs, mount: /shared, id: fs-1}]\n").storage;
  assert.deepEqual(JSON.parse(JSON.stringify(s)), [
    { type: "s3", mount: "/data", bucket: "b", read_only: true },
    { type: "efs", mount: "/shared", id: "fs-1" },
  ]);
  assertCode(() => P("storage: {scratch: /scratch}\n"), "MODEL_TYPE", "/storage");
  assertCode(() => P("storage: [{type: ebs, name: scratch, mount: /scratch}]\n"), "MODEL_UNKNOWN_FIELD", "/storage/0/name");
  assertCode(() => P("storage: [{type: nfs, mount: /scratch}]\n"), "MODEL_VALUE", "/storage/0/type");
  assertCode(() => P("storage: [{type: ebs}]\n"), "MODEL_MISSING_FIELD", "/storage/0/mount");
  assertCode(() => P("storage: [scratch]\n"), "MODEL_TYPE", "/storage/0");
});

test("refused forms name the form to write", () => {
  assertCode(() => P("registries: [./registry]\n"), "MODEL_TYPE", "/registries/0");
  assert.equal(P("registries: [{url: ./registry}]\n").registries[0]!.url, "./registry", "control");
  assertCode(() => P("packages: {pip: [numpy]}\n"), "MODEL_TYPE", "/packages");
  assert.equal(P("packages: [{manager: pip, packages: [{name: numpy}]}]\n").packages[0]!.manager, "pip", "control");
});

test("the fixture files are Strata-form text, not cairn's canonical output", () => {
  const text = readFileSync(join(FIXTURES, "strata-sequencing.yaml"), "utf8");
  for (const form of ["arch: amd64", "- formation: bio-seq@2026.03", "- key: efa", "volume_type:", "storage:"]) assert.ok(text.includes(form), form);
});
