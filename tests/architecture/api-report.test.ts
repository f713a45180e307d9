// The public surface is a reviewed diff: api/cairn.api.md is regenerated from
// src/index.ts with the TypeScript checker and must equal the checked-in copy
// (update it with `node --import tsx scripts/api-report.ts --write`). The
// package root stays small: namespaces and the typed error.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { buildApiReport, REPORT_PATH } from "../../scripts/api-report.ts";

const report = buildApiReport();

test("api/cairn.api.md is the report the sources generate", () => {
  const checkedIn = readFileSync(REPORT_PATH, "utf8");
  assert.ok(report.allNames.length > 50, "control: the report lists the public names");
  assert.equal(report.text, checkedIn, "the public API changed: review it, then run `node --import tsx scripts/api-report.ts --write`");
});

test("the package root exposes namespaces and the typed error only (at most 80 names)", () => {
  assert.ok(report.rootNames.length <= 80, `${report.rootNames.length} root names`);
  assert.deepEqual([...report.rootNames], ["CairnError", "ErrorCode", "core", "isCairnError", "manifest", "oci", "store", "strata", "tree", "vm", "workload"]);
});

test("control: a changed report is a difference", () => {
  assert.notEqual(`${report.text}\nexport const added = 1;\n`, report.text);
  assert.ok(report.text.includes("namespace workload ("), "namespaces are listed with their size");
});
