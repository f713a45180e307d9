import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { explainScope } from "../../src/strata/index.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

test("docs/strata.md's scope table places every lockfile field as the code does", () => {
  const { hashed: HASHED, excluded: EXCLUDED } = explainScope();
  const doc = readFileSync(join(PROJECT_ROOT, "docs/strata.md"), "utf8");
  for (const obj of ["lockfile", "base", "layer"] as const) {
    const row = doc.split("\n").find((l) => l.startsWith(`| ${obj} |`));
    assert.ok(row, `a scope row for ${obj}`);
    const [, , covered, excluded] = row.split("|");
    for (const f of HASHED[obj]!) assert.ok(covered!.includes(`\`${f}\``), `${obj}.${f} listed as covered`);
    for (const f of Object.keys(EXCLUDED[obj]!)) assert.ok(excluded!.includes(`\`${f}\``), `${obj}.${f} listed as not covered`);
  }
});
