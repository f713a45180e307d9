/**
 * Issue 32 items 1 and 3 for registry documents: a layer manifest and a
 * formation in the registry are the seed's LayerManifest and Formation (seed
 * 002), with cairn's DSSE envelope beside each (`.dsse`), bound so an edit to
 * either file is refused. The field names are checked against the seed's
 * struct tags as written in tests/strata/seed-tags.ts, not cairn's table.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Checker, parseEnvelope, parseJsonBytes } from "../../src/core/index.ts";
import { LocalRegistry, formationOf, toSpecLayerManifest } from "../../src/strata/index.ts";
import { FORMATION, LAYER_MANIFEST } from "../../src/strata/spec/schema.ts";
import { readStruct } from "../../src/strata/spec/struct-wire.ts";
import { specManifestDifference } from "../../src/strata/layer-spec.ts";
import type { LayerManifest } from "../../src/strata/spec/types.ts";
import { assertCode } from "../helpers/errors.ts";
import { exampleRegistry } from "./fixtures.ts";
import { seedFields } from "./seed-tags.ts";

const NUMPY = "numpy-2.0.1-none-noarch";

function jsonFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith(".json"))
    .map((n) => join(dir, n));
}

test("every layer manifest and formation in a registry is the seed's document, only the seed's field names, with cairn's signature beside it", () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const layers = jsonFiles(join(ex.registry, "layers"));
  const formations = jsonFiles(join(ex.registry, "formations"));
  assert.ok(layers.length >= 7 && formations.length >= 1, "the example registry's layers and formation");
  for (const [files, type, schema] of [
    [layers, "LayerManifest", LAYER_MANIFEST],
    [formations, "Formation", FORMATION],
  ] as const) {
    for (const f of files) {
      const model = parseJsonBytes(readFileSync(f), { source: f });
      const names = Object.keys(model as object);
      const unknown = names.filter((n) => !seedFields(type).includes(n));
      assert.deepEqual(unknown, [], `${f} uses only the seed's ${type} fields`);
      const c = new Checker("LAYER_INVALID");
      readStruct(c, model, "", schema);
      c.done(f); // the strict reader finds nothing wrong
      const env = parseEnvelope(parseJsonBytes(readFileSync(`${f}.dsse`)));
      assert.equal(env.signatures[0]?.keyid, ex.registryKey.keyId);
      assert.equal((model as { signed_by: string }).signed_by, ex.registryKey.keyId, "signed_by names the envelope's signer");
    }
  }
  // The layer document is exactly the lockfile's mapping of the signed manifest (one definition: toSpecLayerManifest).
  const c = new Checker("LAYER_INVALID");
  const numpy = readStruct(c, parseJsonBytes(readFileSync(reg.layerPath(NUMPY))), "", LAYER_MANIFEST) as unknown as LayerManifest;
  assert.equal(specManifestDifference(numpy, toSpecLayerManifest(reg.readLayer(NUMPY).value)), undefined);
  assert.match(numpy.sha256, /^[0-9a-f]{64}$/, "bare hex, as the seed writes digests");
  // The formation's members are software refs in the mapping form (Go's JSON encoding of SoftwareRef); its record pins them by id and sha256.
  const f = reg.listFormations()[0]!;
  const seedFormation = parseJsonBytes(readFileSync(reg.formationPath(f.value.name, f.value.version))) as { layers: unknown[]; provides: unknown[] };
  assert.deepEqual(
    seedFormation.layers.map((x) => ({ ...(x as object) })),
    f.value.layers.map((l) => ({ name: l.name, version: l.version })),
  );
  assert.ok(f.value.layers.every((l) => l.id.startsWith(`${l.name}-${l.version}-`) && /^sha256:/.test(l.sha256)));
  assert.ok(seedFormation.provides.length > 0);
});

test("an edited layer manifest or formation document, or one without its signature, is refused on every read; control: the published pair reads", () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const f = reg.listFormations()[0]!.value;
  assert.equal(reg.readLayer(NUMPY).value.id, NUMPY, "control");
  assert.equal(reg.readFormation(f.name, f.version).value.name, f.name, "control");

  const path = reg.layerPath(NUMPY);
  const original = readFileSync(path);
  const edited = JSON.parse(original.toString()) as { version: string; provides: { name: string; version: string }[] };
  edited.provides = [{ name: "numpy", version: "9.9" }];
  writeFileSync(path, `${JSON.stringify(edited, null, 2)}\n`);
  const e = assertCode(() => reg.readLayer(NUMPY), "REGISTRY_INVALID");
  assert.match(e.message, /field "provides" differs/);
  assertCode(() => reg.listLayers(), "REGISTRY_INVALID");
  // Another layer's document in its place: refused too.
  writeFileSync(path, readFileSync(reg.layerPath("python-3.12.4-gnu-x86_64")));
  assertCode(() => reg.readLayer(NUMPY), "REGISTRY_INVALID");
  // The same fields re-indented: the bytes are the document, so refused.
  writeFileSync(path, JSON.stringify(JSON.parse(original.toString())));
  assert.match(assertCode(() => reg.readLayer(NUMPY), "REGISTRY_INVALID").message, /formatting differs/);
  // A huge document is refused by its size, without being parsed to name a field.
  writeFileSync(path, `[${"0,".repeat(4 << 20)}0]`);
  assert.match(assertCode(() => reg.readLayer(NUMPY), "REGISTRY_INVALID").message, /its size differs/);
  writeFileSync(path, original);
  assert.equal(reg.readLayer(NUMPY).value.id, NUMPY, "control: restored");

  const fpath = reg.formationPath(f.name, f.version);
  const fdoc = JSON.parse(readFileSync(fpath, "utf8")) as { layers: unknown[] };
  fdoc.layers = [...fdoc.layers].reverse();
  writeFileSync(fpath, `${JSON.stringify(fdoc, null, 2)}\n`);
  assert.match(assertCode(() => reg.readFormation(f.name, f.version), "REGISTRY_INVALID").message, /field "layers" differs/);
  assertCode(() => reg.listFormations(), "REGISTRY_INVALID");

  // A signature that is a symlink (to the real one, elsewhere) is refused, never followed; control: the file itself reads.
  const sig = reg.layerSignaturePath(NUMPY);
  renameSync(sig, join(ex.registry, "elsewhere.dsse"));
  symlinkSync(join(ex.registry, "elsewhere.dsse"), sig);
  assertCode(() => reg.readLayer(NUMPY), "REGISTRY_INVALID");
  rmSync(sig);
  renameSync(join(ex.registry, "elsewhere.dsse"), sig);
  assert.equal(reg.readLayer(NUMPY).value.id, NUMPY, "control: the signature file itself");

  // A document whose signature was removed is not read as unsigned: it is refused.
  writeFileSync(join(ex.registry, "layers", "stray-1.0-none-noarch.json"), original);
  assert.match(assertCode(() => reg.readLayer("stray-1.0-none-noarch"), "REGISTRY_INVALID").message, /no signature beside it/);
});

test("a formation record's member names and provides must be its members'; control: formationOf's record publishes", () => {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const ok = formationOf(reg, "pair", "1", ["python-3.12.4-gnu-x86_64", NUMPY]);
  assert.deepEqual(
    ok.layers.map((l) => `${l.name}@${l.version}`),
    ["python@3.12.4", "numpy@2.0.1"],
  );
  assertCode(() => reg.publishFormation({ ...ok, layers: [{ ...ok.layers[0]!, version: "3.11.9" }, ok.layers[1]!] }, [ex.registryKey]), "LAYER_INVALID");
  assertCode(() => reg.publishFormation({ ...ok, provides: [] }, [ex.registryKey]), "LAYER_INVALID");
  reg.publishFormation(ok, [ex.registryKey]);
  assert.equal(reg.readFormation("pair", "1").value.layers.length, 2);
});

test("a cairn.registry/1 directory (cairn's records alone) is refused by its marker; control: cairn.registry/2 opens", () => {
  const ex = exampleRegistry();
  const marker = join(ex.registry, "cairn-registry.json");
  assert.equal(JSON.parse(readFileSync(marker, "utf8")).format, "cairn.registry/2");
  LocalRegistry.open(ex.registry); // control
  writeFileSync(marker, `${JSON.stringify({ format: "cairn.registry/1" })}\n`);
  assert.match(assertCode(() => LocalRegistry.open(ex.registry), "REGISTRY_INVALID").message, /names another format/);
});
