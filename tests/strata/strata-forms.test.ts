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
  lockfileToModel,
  lockfileToYaml,
  parseLockfile,
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
    const back = parseLockfile(lockfileToModel(lock) as never);
    assert.equal(environmentId(back), environmentId(lock), `${file}: the lockfile reads back with the same ID`);
  }
  const seq = await resolve(readProfileFile(join(FIXTURES, "strata-sequencing.yaml")));
  assert.deepEqual(seq.layers.map((l) => l.name).sort(), ["bwa", "numpy", "python", "samtools"]);
  assert.ok(
    seq.layers.some((l) => l.from_formation === "bio-seq@2026.03"),
    "the formation mapping form brought the formation in",
  );
  assert.deepEqual(seq.defaults, ["python/3.12", "samtools/1.20"], "the Lmod preload list, in order");
  assert.deepEqual(seq.mutable_layer, { size: "20GiB", volume_type: "local-ssd", abi: "gnu" });
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
});

test("mutable_layer: a boolean or Strata's spec, validated; its ABI must be the probed base's", async () => {
  assert.equal(P("mutable_layer: true\n").mutable_layer, true);
  assert.deepEqual(P("mutable_layer: {size: 512M}\n").mutable_layer, { size: "512M" });
  assert.deepEqual(P("mutable_layer: {size: 1073741824}\n").mutable_layer, { size: "1073741824" });
  assertCode(() => P("mutable_layer: {size: 20 parsecs}\n"), "MODEL_VALUE", "/mutable_layer/size");
  assertCode(() => P("mutable_layer: {size: 100TiB}\n"), "LIMIT_EXCEEDED", "/mutable_layer/size");
  assertCode(() => P("mutable_layer: {volume_type: ssd}\n"), "MODEL_MISSING_FIELD", "/mutable_layer/size");
  assertCode(() => P("mutable_layer: {size: 1G, abi: ppc}\n"), "MODEL_VALUE", "/mutable_layer/abi");
  assertCode(() => P("mutable_layer: {size: 1G, fs: xfs}\n"), "MODEL_UNKNOWN_FIELD", "/mutable_layer/fs");
  assertCode(() => P("mutable_layer: yes\n"), "MODEL_TYPE", "/mutable_layer");
  await assert.rejects(resolve(P("software: [tool-a]\nmutable_layer: {size: 1G, abi: musl}\n")), (e: { code: string; path: string }) => {
    assert.equal(e.code, "RESOLVE_FAILED");
    assert.equal(e.path, "/mutable_layer/abi");
    return true;
  });
  const ok = await resolve(P("software: [tool-a]\nmutable_layer: {size: 1G, abi: gnu}\n"));
  assert.notEqual(environmentId(ok), environmentId(await resolve(P("software: [tool-a]\nmutable_layer: true\n"))), "the spec is part of the ID");
});

test("defaults: the settings map or the Lmod preload list; module names are checked", () => {
  assert.deepEqual(P("defaults: [gcc/12.2, openmpi]\n").defaults, ["gcc/12.2", "openmpi"]);
  assertCode(() => P("defaults: [gcc//12]\n"), "MODEL_VALUE", "/defaults/0");
  assertCode(() => P("defaults: [gcc, gcc]\n"), "MODEL_VALUE", "/defaults/1");
  assertCode(() => P("defaults: bash\n"), "MODEL_TYPE", "/defaults");
  assert.equal((P("defaults: {shell: bash}\n").defaults as ReadonlyMap<string, string>).get("shell"), "bash", "control: the map form");
});

test("storage as a list is recorded; refused forms name the form to write", () => {
  assert.deepEqual(JSON.parse(JSON.stringify(P("storage: [{name: scratch, mount: /scratch}]\n").storage)), [{ name: "scratch", mount: "/scratch" }]);
  assertCode(() => P("storage: [scratch]\n"), "MODEL_TYPE", "/storage/0");
  assertCode(() => P("registries: [./registry]\n"), "MODEL_TYPE", "/registries/0");
  assert.equal(P("registries: [{url: ./registry}]\n").registries[0]!.url, "./registry", "control");
  assertCode(() => P("packages: {pip: [numpy]}\n"), "MODEL_TYPE", "/packages");
  assert.equal(P("packages: [{manager: pip, packages: [{name: numpy}]}]\n").packages[0]!.manager, "pip", "control");
});

test("the fixture files are Strata-form text, not cairn's canonical output", () => {
  const text = readFileSync(join(FIXTURES, "strata-sequencing.yaml"), "utf8");
  for (const form of ["arch: amd64", "- formation: bio-seq@2026.03", "- key: efa", "volume_type:", "storage:"]) assert.ok(text.includes(form), form);
});
