// The package is importable by name with types: `import { workload } from
// "cairn"` and `import { ... } from "cairn/workload"` resolve through
// package.json "exports" to the built library (dist/, built by `npm ci`'s
// prepare step and by the test script), one namespace per area.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

const AREAS = ["core", "tree", "oci", "store", "manifest", "strata", "workload", "vm"] as const;

test('import from "cairn" resolves to the built library: one namespace per area, the typed error at the root', async () => {
  assert.ok(existsSync(join(PROJECT_ROOT, "dist", "index.d.ts")), "dist/index.d.ts is built");
  const lib = (await import("cairn")) as unknown as Record<string, Record<string, unknown>>;
  for (const area of AREAS) assert.equal(typeof lib[area], "object", area);
  for (const name of ["canonicalize", "parseDigest", "blake3", "signEnvelope", "verifyEnvelope", "CairnError"]) {
    assert.equal(typeof lib.core![name], "function", `core.${name}`);
  }
  assert.equal(typeof lib.workload!.assembleWorkload, "function");
  assert.equal(typeof lib.strata!.resolveProfile, "function");
  assert.equal(lib.CairnError, lib.core!.CairnError, "the root's CairnError is core's");
  // internals stay internal
  assert.equal(lib.vm!.CpioWriter, undefined);
  assert.equal(lib.core!.readFullyAt, undefined);
});

test('each area is a subpath export ("cairn/<area>") with its types, equal to the namespace', async () => {
  const lib = (await import("cairn")) as unknown as Record<string, Record<string, unknown>>;
  for (const area of AREAS) {
    assert.ok(existsSync(join(PROJECT_ROOT, "dist", area, "public.d.ts")), `dist/${area}/public.d.ts is built`);
    const sub = (await import(`cairn/${area}`)) as Record<string, unknown>;
    assert.deepEqual(Object.keys(sub).sort(), Object.keys(lib[area]!).sort(), area);
  }
});

test("the built library reads an OCI layout (its vendored schemas ship in dist/)", async () => {
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { writeConformanceLayout } = await import("../workload/fixtures/conformance.ts");
  const lib = (await import("cairn")) as unknown as typeof import("../../src/index.ts");
  const dir = mkdtempSync(join(tmpdir(), "cairn-lib-"));
  try {
    const image = writeConformanceLayout(join(dir, "layout"));
    const source = await lib.oci.readOciSource({ layoutDir: join(dir, "layout"), manifestDigest: image.manifestDigest, stagingDir: join(dir, "staging") });
    assert.ok(source.layers.length > 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
