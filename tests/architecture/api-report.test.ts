// The public surface is a reviewed diff: api/cairn.api.md is regenerated from
// src/index.ts with the TypeScript checker and must equal the checked-in copy
// (update it with `node --import tsx scripts/api-report.ts --write`). The
// package root stays small: namespaces and the typed error.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

test("no public signature names a type the package does not export", () => {
  assert.deepEqual([...report.unexported], [], "export each named type (export type in the area's public.ts) or stop naming it");
});

test("control: a signature naming an unexported type is reported; a function body, a private member and exported types are not", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-api-fixture-"));
  try {
    writeFileSync(join(dir, "index.ts"), 'export * as area from "./area.ts";\n');
    writeFileSync(
      join(dir, "area.ts"),
      [
        "interface Hidden { readonly a: number }",
        "interface InBody { readonly c: number }",
        "interface Secret { readonly d: number }",
        "export interface Shown { readonly b: number; readonly nested?: Hidden }",
        "export function takes(x: Hidden): Shown { return { b: x.a }; }",
        "export function inferred() { const h: Hidden = { a: 1 }; return h; }",
        "export function body(): Shown { const local: InBody = { c: 1 }; return { b: local.c }; }",
        "export class Box { #s: Secret = { d: 1 }; private t: Secret = { d: 2 }; get value(): number { return this.#s.d + this.t.d; } }",
        "",
      ].join("\n"),
    );
    const fixture = buildApiReport(join(dir, "index.ts"));
    assert.deepEqual(
      fixture.unexported.map((u) => u.replace(/ \(.*\)$/, "")),
      ["area.Shown -> Hidden", "area.inferred -> Hidden", "area.takes -> Hidden"],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
