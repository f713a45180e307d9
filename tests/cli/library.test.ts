// The package is importable by name with types: `import { ... } from "cairn"`
// resolves through package.json "exports" to the built library (dist/, built
// by `npm ci`'s prepare step and by the test script).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

test("import from \"cairn\" resolves to the built library with type declarations", async () => {
  assert.ok(existsSync(join(PROJECT_ROOT, "dist", "index.d.ts")), "dist/index.d.ts is built");
  const lib = (await import("cairn")) as Record<string, unknown>;
  for (const name of ["canonicalize", "parseDigest", "blake3", "signEnvelope", "verifyEnvelope", "CairnError"]) {
    assert.equal(typeof lib[name], "function", name);
  }
});
