// docs/manifest.md states the class of every property; this keeps it in step with FIELD_SCOPE.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FIELD_SCOPE } from "../../src/manifest/scope.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

function documentedClasses(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const start = text.indexOf("<!-- field-table");
  for (const line of text.slice(start).split("\n").slice(1)) {
    if (line.trim() === "") break;
    const m = /^\| `([^`]+)` \| (identity|excluded|refused) \|/.exec(line);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

test("docs/manifest.md documents the class of every property, exactly as FIELD_SCOPE", () => {
  const doc = documentedClasses(readFileSync(join(PROJECT_ROOT, "docs", "manifest.md"), "utf8"));
  const code = new Map(Object.entries(FIELD_SCOPE).map(([k, v]) => [k, v.class as string]));
  assert.deepEqual([...doc.entries()].sort(), [...code.entries()].sort());
  // Control: the parser sees a disagreement.
  assert.equal(documentedClasses("<!-- field-table -->\n| `image` | refused | x |\n").get("image"), "refused");
});
