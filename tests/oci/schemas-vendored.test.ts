// The vendored image-spec schemas are compiled with ajv's meta-schema check
// on here, because the validators a command runs are generated with `validateSchema: false`
// (scripts/oci-validators.ts, src/oci/schema-registry.ts: generation does not re-validate the project's own,
// unmodified spec files). A damaged vendored file fails this test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { registry, SCHEMA_URLS } from "../../src/oci/schema-registry.ts";

test("every vendored schema is valid draft-04 and compiles with the meta-schema check on", () => {
  const ajv = registry(true);
  for (const [kind, url] of Object.entries(SCHEMA_URLS)) {
    const v = ajv.getSchema(url);
    assert.equal(typeof v, "function", `${kind} compiles`);
  }
  // control: the same check refuses a schema that is not draft-04
  assert.throws(() => ajv.addSchema({ type: "no-such-type" }, "https://example.invalid/bad.json"));
});
