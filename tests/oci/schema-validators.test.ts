// The OCI schema validators a command runs are generated ahead of time
// (scripts/oci-validators.ts writes src/oci/schema-validators.ts from ajv's
// compilation of the vendored schemas). Here: the checked-in file is exactly
// what the script generates now, and the generated functions answer as ajv's
// own run-time compilation of the same schemas does, on valid documents and
// on documents each schema refuses (the controls).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { generateValidators, VALIDATORS_PATH } from "../../scripts/oci-validators.ts";
import { registry, SCHEMA_URLS } from "../../src/oci/schema-registry.ts";
import { validateOciDocument, type OciDocumentKind } from "../../src/oci/schemas.ts";
import { CairnError, type JsonModel } from "../../src/core/index.ts";

const D = `sha256:${"a".repeat(64)}`;
const desc = (mediaType: string, size = 10): Record<string, unknown> => ({ mediaType, digest: D, size });
const manifest = {
  schemaVersion: 2,
  mediaType: "application/vnd.oci.image.manifest.v1+json",
  config: desc("application/vnd.oci.image.config.v1+json"),
  layers: [desc("application/vnd.oci.image.layer.v1.tar+gzip", 1000)],
};
const config = {
  architecture: "amd64",
  os: "linux",
  created: "2024-01-01T00:00:00Z",
  rootfs: { type: "layers", diff_ids: [D] },
  config: { Env: ["A=1"], Entrypoint: ["/bin/app"], Cmd: null },
};
const index = { schemaVersion: 2, manifests: [{ ...desc("application/vnd.oci.image.manifest.v1+json"), platform: { architecture: "amd64", os: "linux" } }] };

// Each kind: documents the schema accepts, then documents it refuses (each for another keyword).
const CASES: ReadonlyArray<readonly [OciDocumentKind, unknown, boolean]> = [
  ["layout", { imageLayoutVersion: "1.0.0" }, true],
  ["layout", { imageLayoutVersion: "2.0.0" }, false],
  ["layout", {}, false],
  ["manifest", manifest, true],
  ["manifest", { ...manifest, unknownField: 1 }, true],
  ["manifest", { ...manifest, schemaVersion: 1 }, false],
  ["manifest", { ...manifest, config: { ...manifest.config, size: -1 } }, false],
  ["manifest", { ...manifest, layers: [{ ...manifest.layers[0], digest: "not a digest" }] }, false],
  ["manifest", { ...manifest, layers: [{ ...manifest.layers[0], urls: ["no scheme"] }] }, false],
  ["manifest", { ...manifest, annotations: { a: 1 } }, false],
  ["manifest", { schemaVersion: 2 }, false],
  ["config", config, true],
  ["config", { ...config, created: "yesterday" }, false],
  ["config", { ...config, rootfs: { type: "other", diff_ids: [] } }, false],
  ["config", { ...config, config: { Entrypoint: "/bin/app" } }, false],
  ["index", index, true],
  ["index", { ...index, manifests: [{ mediaType: "x/y", digest: D }] }, false],
  ["index", { ...index, manifests: [{ ...index.manifests[0], platform: { os: "linux" } }] }, false],
];

test("src/oci/schema-validators.ts is what scripts/oci-validators.ts generates from the vendored schemas", () => {
  const generated = generateValidators();
  assert.ok(generated.includes("export const manifest = "), "control: the generation names each kind");
  assert.equal(readFileSync(VALIDATORS_PATH, "utf8"), generated, "regenerate with `node --import tsx scripts/oci-validators.ts --write`");
});

test("the generated validators accept and refuse what ajv's run-time compilation of the schemas does, with the same issues", () => {
  const ajv = registry(false);
  let refused = 0;
  for (const [kind, doc, valid] of CASES) {
    const reference = ajv.getSchema(SCHEMA_URLS[kind])!;
    assert.equal(reference(doc), valid, `ajv: ${kind} ${JSON.stringify(doc)}`);
    const expected = (reference.errors ?? []).map((e) => e.instancePath).sort();
    try {
      validateOciDocument(kind, doc as JsonModel, "doc");
      assert.ok(valid, `the generated ${kind} validator accepted ${JSON.stringify(doc)}`);
    } catch (e) {
      assert.ok(e instanceof CairnError && e.code === "OCI_SCHEMA", String(e));
      assert.ok(!valid, `the generated ${kind} validator refused ${JSON.stringify(doc)}`);
      assert.deepEqual(e.issues.map((i) => i.path).sort(), expected, `${kind}: the same issues`);
      refused++;
    }
  }
  assert.equal(refused, CASES.filter((c) => !c[2]).length, "control: every refused case was refused");
});
