import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  Catalog,
  parseProfileText,
  resolveProfile,
  lockfileToYaml,
  environmentId,
  declaredBase,
  LocalRegistry,
  catalogFromRegistries,
  buildLayerFromDirectory,
  type Profile,
} from "../../src/strata/index.ts";
import { stageBase } from "../../src/strata/resolve/base-stage.ts";
import { expandFormations } from "../../src/strata/resolve/formations.ts";
import { resolveRefs } from "../../src/strata/resolve/refs.ts";
import { checkRequirements } from "../../src/strata/resolve/requirements.ts";
import { checkConflicts } from "../../src/strata/resolve/conflicts.ts";
import type { Pick } from "../../src/strata/resolve/pick.ts";
import type { CatalogLayer } from "../../src/strata/catalog.ts";
import { mountOrder } from "../../src/strata/resolve/mount-order.ts";
import { attestLayers } from "../../src/strata/resolve/attest-stage.ts";
import { toySpec, TOY_LAYERS } from "../../examples/strata/build-registry.ts";
import { catalogOf, exampleRegistry, NOW, probedExampleBase } from "./fixtures.ts";
import { assertCode } from "../helpers/errors.ts";

const ex = exampleRegistry();

function profile(software: string[], extra = ""): Profile {
  const list = software.length === 0 ? " []" : `\n${software.map((s) => `  - "${s}"`).join("\n")}`;
  return parseProfileText(`name: t\nbase: {os: debian12}\nsoftware:${list}\n${extra}`);
}

test("stage base: the probed base must match the profile; no probe records a declared base", async () => {
  const base = await probedExampleBase(ex);
  assert.equal(stageBase(profile([]), base).source, "rootfs:example");
  assert.equal(stageBase(profile([]), undefined).source, "declared");
  assertCode(() => stageBase(parseProfileText("name: t\nbase: {os: ubuntu24}\n"), base), "RESOLVE_FAILED");
  assertCode(() => stageBase(parseProfileText("name: t\nbase: {os: debian12, arch: aarch64}\n"), base), "RESOLVE_FAILED");
});

test("stage formations: highest matching version, members in formation order, unsigned refused unless allowed", async () => {
  const base = await probedExampleBase(ex);
  const p = profile(["formation:bio-seq@2026"]);
  const { picks, formations } = expandFormations(p.software, catalogOf(ex), base, false);
  assert.deepEqual(
    picks.map((x) => x.layer.doc.value.id),
    ["samtools-1.20-gnu-x86_64", "bwa-0.7.18-gnu-x86_64"],
  );
  assert.equal(picks[1]!.after_in_formation, "samtools-1.20-gnu-x86_64");
  assert.equal(formations[0]!.signature.status, "signed");
  assertCode(() => expandFormations(p.software, catalogOf(ex, []), base, false), "TRUST_REFUSED");
  assert.equal(expandFormations(p.software, catalogOf(ex, []), base, true).formations[0]!.signature.status, "unsigned-offline");
  assertCode(() => expandFormations(profile(["formation:bio-seq@2025"]).software, catalogOf(ex), base, false), "RESOLVE_FAILED");
});

test("stage refs: version prefix, highest satisfying, arch and ABI; failure lists what exists", async () => {
  const base = await probedExampleBase(ex);
  const cat = catalogOf(ex);
  const id = (refs: string[]): string[] => resolveRefs(profile(refs).software, cat, base).map((x) => x.layer.doc.value.id);
  assert.deepEqual(id(["python"]), ["python-3.12.4-gnu-x86_64"], "highest");
  assert.deepEqual(id(["python@3.11"]), ["python-3.11.9-gnu-x86_64"], "prefix");
  const e = assertCode(() => id(["python@3.13"]), "RESOLVE_FAILED");
  assert.match(e.hint ?? "", /3\.12\.4.*3\.11\.9/);
  assertCode(() => id(["samtools"]), "RESOLVE_FAILED"); // internal layers are not user-selectable
  assertCode(() => id(["nonexistent"]), "RESOLVE_FAILED");
  const arm = { ...base, arch: "aarch64" as const };
  assertCode(() => resolveRefs(profile(["python"]).software, cat, arm), "RESOLVE_FAILED");
  const musl = { ...base, abi: "musl" as const };
  assertCode(() => resolveRefs(profile(["python"]).software, cat, musl), "RESOLVE_FAILED");
  assert.deepEqual(resolveRefs(profile(["numpy"]).software, cat, musl).length, 1, "abi none runs anywhere");
});

test("stage requirements: base and layers satisfy; any provider is enough; unsatisfied lists what is near", async () => {
  const base = await probedExampleBase(ex);
  const cat = catalogOf(ex);
  const picks = resolveRefs(profile(["python", "numpy"]).software, cat, base);
  const sat = checkRequirements(picks, base);
  assert.deepEqual(sat.get("python-3.12.4-gnu-x86_64")?.get("glibc>=2.31"), ["base"]);
  assert.deepEqual(sat.get("numpy-2.0.1-none-noarch")?.get("python>=3.10,<3.13"), ["python-3.12.4-gnu-x86_64"]);
  assertCode(() => checkRequirements(resolveRefs(profile(["numpy"]).software, cat, base), base), "RESOLVE_FAILED");
  const oldBase = { ...base, capabilities: [{ name: "glibc", version: "2.28" }] };
  const e = assertCode(() => checkRequirements(picks, oldBase), "RESOLVE_FAILED");
  assert.match(e.message, /glibc@2\.28 from the base/);
  assertCode(() => checkRequirements(picks, declaredBase("debian12", "x86_64")), "RESOLVE_FAILED");
});

test("stage conflicts: same path different content, same capability; allowed inside one formation", async () => {
  const base = await probedExampleBase(ex);
  const cat = catalogOf(ex);
  const e = assertCode(() => checkConflicts(resolveRefs(profile(["tool-a", "tool-b"]).software, cat, base)), "RESOLVE_CONFLICT");
  assert.match(e.message, /usr\/local\/bin\/tool/);
  const f = expandFormations(profile(["formation:bio-seq"]).software, cat, base, false).picks;
  assert.doesNotThrow(() => checkConflicts(f), "samtools and bwa share a README inside one formation");
  const reg = LocalRegistry.open(ex.registry);
  const py = cat.byId.get("python-3.12.4-gnu-x86_64")!;
  const other = cat.byId.get("python-3.11.9-gnu-x86_64")!;
  assertCode(() => checkConflicts([{ layer: py }, { layer: other }]), "RESOLVE_CONFLICT");
  assert.ok(reg.hasBlob(py.doc.value.sha256));
  assert.doesNotThrow(() => checkConflicts([{ layer: py }]), "control");
});

test("stage conflicts: a layer outside a formation is checked against every member, in any pick order", () => {
  const d = (c: string): string => `sha256:${c.repeat(64)}`;
  const layer = (id: string, files: Record<string, string>): CatalogLayer =>
    ({ doc: { value: { id, name: id, provides: [], content_manifest: new Map(Object.entries(files)), symlinks: new Map() } } }) as unknown as CatalogLayer;
  // A and B are members of one formation and may overlap; C is not: which /x is visible depends on where C mounts relative to B.
  const a: Pick = { layer: layer("a", { "/x": d("1") }), from_formation: "f@1" };
  const b: Pick = { layer: layer("b", { "/x": d("2") }), from_formation: "f@1", after_in_formation: "a" };
  const c: Pick = { layer: layer("c", { "/x": d("1") }) };
  for (const order of [
    [a, b, c],
    [a, c, b],
    [b, a, c],
    [b, c, a],
    [c, a, b],
    [c, b, a],
  ]) {
    assertCode(() => checkConflicts(order), "RESOLVE_CONFLICT");
  }
  // Controls: the formation alone, and C beside it at another path.
  assert.doesNotThrow(() => checkConflicts([a, b]));
  assert.doesNotThrow(() => checkConflicts([a, b, { layer: layer("c", { "/y": d("1") }) }]));
});

test("stage conflicts: a path that is a file or symlink in one layer and a directory in another is a conflict", () => {
  const d = (c: string): string => `sha256:${c.repeat(64)}`;
  const layer = (id: string, files: Record<string, string>, links: Record<string, string> = {}): Pick =>
    ({
      layer: { doc: { value: { id, name: id, provides: [], content_manifest: new Map(Object.entries(files)), symlinks: new Map(Object.entries(links)) } } },
    }) as unknown as Pick;
  const fileAtTool = layer("a", { "/opt/tool": d("1") });
  const dirAtTool = layer("b", { "/opt/tool/bin/x": d("2") });
  const linkAtLib = layer("c", {}, { "/lib": "usr/lib" });
  const dirAtLib = layer("d", { "/lib/libfoo.so": d("3") });
  for (const pair of [
    [fileAtTool, dirAtTool],
    [dirAtTool, fileAtTool],
    [linkAtLib, dirAtLib],
    [dirAtLib, linkAtLib],
  ]) {
    assertCode(() => checkConflicts(pair), "RESOLVE_CONFLICT");
  }
  // Controls: layers sharing a directory, and the same shape inside one formation.
  assert.doesNotThrow(() => checkConflicts([dirAtTool, layer("e", { "/opt/tool/bin/y": d("4") })]));
  assert.doesNotThrow(() =>
    checkConflicts([
      { ...fileAtTool, from_formation: "f@1" },
      { ...dirAtTool, from_formation: "f@1" },
    ]),
  );
});

test("stage mount order: providers first, formation order kept, ties by content; a cycle is named", async () => {
  const base = await probedExampleBase(ex);
  const cat = catalogOf(ex);
  const f = expandFormations(profile(["formation:bio-seq"]).software, cat, base, false).picks;
  const refs = resolveRefs(profile(["numpy", "python"]).software, cat, base);
  const picks = [...refs, ...f];
  const order = mountOrder(picks, checkRequirements(picks, base)).map((p) => p.layer.doc.value.id);
  assert.ok(order.indexOf("python-3.12.4-gnu-x86_64") < order.indexOf("numpy-2.0.1-none-noarch"));
  assert.ok(order.indexOf("samtools-1.20-gnu-x86_64") < order.indexOf("bwa-0.7.18-gnu-x86_64"));
  const reversed = mountOrder([...picks].reverse(), checkRequirements([...picks].reverse(), base)).map((p) => p.layer.doc.value.id);
  assert.deepEqual(reversed, order);
  const a = cat.byId.get("tool-a-1.0-none-noarch")!;
  const b = cat.byId.get("tool-b-1.0-none-noarch")!;
  const cyc = new Map([
    [a.doc.value.id, new Map([["x", [b.doc.value.id]]])],
    [b.doc.value.id, new Map([["y", [a.doc.value.id]]])],
  ]);
  assertCode(() => mountOrder([{ layer: a }, { layer: b }], cyc), "RESOLVE_FAILED");
});

test("stage attestation: policy is signed only when everything is signed", async () => {
  const base = await probedExampleBase(ex);
  const picks = resolveRefs(profile(["python"]).software, catalogOf(ex), base);
  assert.equal(attestLayers(picks, [], false).policy, "signed");
  const unsignedPicks = resolveRefs(profile(["python"]).software, catalogOf(ex, []), base);
  assertCode(() => attestLayers(unsignedPicks, [], false), "TRUST_REFUSED");
  assert.equal(attestLayers(unsignedPicks, [], true).policy, "unsigned-offline");
});

test("reorder determinism: software order and registry listing order never change the lockfile", async () => {
  const base = await probedExampleBase(ex);
  const refs = ["python@3.12", "numpy", "formation:bio-seq@2026.03"];
  const locks = new Set<string>();
  for (const order of [
    [0, 1, 2],
    [2, 1, 0],
    [1, 2, 0],
    [2, 0, 1],
  ]) {
    const lock = resolveProfile({
      profile: profile(order.map((i) => refs[i]!)),
      catalog: catalogOf(ex),
      probedBase: base,
      allowUnsignedOffline: false,
      now: NOW,
      cairnVersion: "test",
    });
    const model = lockfileToYaml(lock).replace(/^profile_sha256: .*$/m, ""); // the profile text differs by order
    locks.add(model);
  }
  assert.equal(locks.size, 1);
  const later = resolveProfile({
    profile: profile(refs),
    catalog: catalogOf(ex),
    probedBase: base,
    allowUnsignedOffline: false,
    now: new Date(NOW.getTime() + 86_400_000),
    cairnVersion: "test",
  });
  const first = resolveProfile({
    profile: profile(refs),
    catalog: catalogOf(ex),
    probedBase: base,
    allowUnsignedOffline: false,
    now: NOW,
    cairnVersion: "test",
  });
  assert.equal(
    lockfileToYaml(later).replace(/^resolved_at: .*$/m, ""),
    lockfileToYaml(first).replace(/^resolved_at: .*$/m, ""),
    "same inputs: byte-identical except resolved_at",
  );
  assert.equal(environmentId(later), environmentId(first));
});

test("an unsigned layer anywhere makes the lockfile unsigned-offline", async () => {
  const local = exampleRegistry();
  const reg = LocalRegistry.open(local.registry);
  const built = buildLayerFromDirectory(join(local.root, "src", "numpy-2.0.1"), {
    ...toySpec(TOY_LAYERS[2]!),
    name: "scipy",
    version: "1.0",
    provides: [],
    requires: [],
  });
  reg.publishLayer(built.blob.blob, built.manifest, []);
  const catalog = catalogFromRegistries([{ registry: reg, source: { url: local.registry, keys: [local.registryKey] } }]);
  const input = { profile: profile(["python", "scipy"]), catalog, probedBase: await probedExampleBase(local), now: NOW, cairnVersion: "t" };
  assertCode(() => resolveProfile({ ...input, allowUnsignedOffline: false }), "TRUST_REFUSED");
  const lock = resolveProfile({ ...input, allowUnsignedOffline: true });
  assert.equal(lock.verification_policy, "unsigned-offline");
  assert.equal(lock.layers.find((l) => l.name === "scipy")?.signature?.status, "unsigned-offline");
  assert.equal(lock.layers.find((l) => l.name === "python")?.signature?.status, "signed");
  writeFileSync(join(local.root, "u.lock"), lockfileToYaml(lock));
  assert.match(readFileSync(join(local.root, "u.lock"), "utf8"), /verification_policy: unsigned-offline/);
});

test("property: any order of catalog insertion and of software refs gives the same lockfile", async () => {
  const base = await probedExampleBase(ex);
  const reg = LocalRegistry.open(ex.registry);
  const layers = reg.listLayers();
  const formations = reg.listFormations();
  const refs = ["python@3.12", "numpy", "formation:bio-seq@2026.03"];
  const source = { url: ex.registry, keys: [ex.registryKey] };
  const resolveWith = (layerOrder: number[], refOrder: number[]): string => {
    const catalog = new Catalog();
    for (const i of layerOrder) catalog.addLayer({ doc: layers[i]!, source });
    for (const f of formations) catalog.addFormation({ doc: f, source });
    catalog.seal();
    const lock = resolveProfile({
      profile: profile(refOrder.map((i) => refs[i]!)),
      catalog,
      probedBase: base,
      allowUnsignedOffline: false,
      now: NOW,
      cairnVersion: "t",
    });
    return lockfileToYaml(lock).replace(/^profile_sha256: .*$/m, "");
  };
  const reference = resolveWith(
    layers.map((_, i) => i),
    [0, 1, 2],
  );
  const perm = (n: number) => fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n });
  fc.assert(
    fc.property(perm(layers.length), perm(refs.length), (lo, ro) => resolveWith(lo, ro) === reference),
    { numRuns: 60 },
  );
});
