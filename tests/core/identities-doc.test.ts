/**
 * docs/identities.md's table is generated from the identity declarations and
 * scopes in the code, and this test fails when the two drift. Run with
 * CAIRN_UPDATE_DOCS=1 to rewrite the table after changing a declaration.
 *
 * It also fails when a declaration is not reachable from an area's index
 * (so the table would silently miss it): the number of `declareIdentity(`
 * calls in src/ must equal the number of declarations collected.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as core from "../../src/core/index.ts";
import * as manifest from "../../src/manifest/index.ts";
import * as store from "../../src/store/index.ts";
import * as strata from "../../src/strata/index.ts";
import * as vm from "../../src/vm/index.ts";
import * as workload from "../../src/workload/index.ts";
import * as tree from "../../src/tree/index.ts";
import * as oci from "../../src/oci/index.ts";
import * as fleet from "../../src/fleet/index.ts";
import { isIdentityDeclaration, type IdentityDeclaration, type IdentityScope } from "../../src/core/index.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

const AREAS = { core, tree, oci, manifest, store, strata, vm, workload, fleet };
const DOC = join(PROJECT_ROOT, "docs/identities.md");
const BEGIN = "<!-- identity-table: generated from the declarations by tests/core/identities-doc.test.ts -->";
const END = "<!-- /identity-table -->";

function isScope(v: unknown): v is IdentityScope {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o.identity === "string" && typeof o.covers === "object" && typeof o.excludes === "object";
}

function collect(): { decls: IdentityDeclaration[]; scopes: IdentityScope[] } {
  const decls = new Set<IdentityDeclaration>();
  const scopes = new Set<IdentityScope>();
  for (const area of Object.values(AREAS)) {
    for (const v of Object.values(area)) {
      if (isIdentityDeclaration(v)) decls.add(v);
      else if (isScope(v)) scopes.add(v);
    }
  }
  return { decls: [...decls], scopes: [...scopes] };
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

const fields = (o: Readonly<Record<string, string>>): string => {
  const keys = Object.keys(o);
  return keys.length === 0 ? "nothing else is in the model" : keys.map((k) => `\`${k}\``).join(", ");
};

const FRAMING: Record<string, string> = {
  "tag-nul-jcs": "tag NUL JCS",
  "tag-nul-binary": "tag NUL framed bytes",
  "jcs-schema-field": "JCS, tag in `schema`",
  "jcs-tag-field": "JCS, tag in `tag`",
  "jcs-own-schema": "JCS of a model carrying `schema`",
  jcs: "JCS (untagged)",
};

export function renderTable(): string {
  const { decls, scopes } = collect();
  const rows = ["| name | tag | role | algorithm | framing | covers | does not cover | defined in |", "|---|---|---|---|---|---|---|---|"];
  const order = (d: IdentityDeclaration) => `${d.role === "identity" ? 0 : 1}${d.definedIn}${d.name}`;
  for (const d of [...decls].sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0))) {
    const scope = d.role === "identity" ? scopes.find((s) => s.identity === d.tag) : undefined;
    const covers = scope
      ? fields(scope.covers)
      : d.role === "integrity"
        ? "the whole input (for a document: every field but the digest itself)"
        : "every entry, by the framing (see the file's doc comment)";
    const excludes = scope ? fields(scope.excludes) : "—";
    rows.push(`| ${d.name} | \`${d.tag}\` | ${d.role} | ${d.algorithm} | ${FRAMING[d.framing]} | ${covers} | ${excludes} | \`${d.definedIn}\` |`);
  }
  const records = scopes.filter((s) => !decls.some((d) => d.tag === s.identity));
  if (records.length > 0) {
    rows.push(
      "",
      "Scope tables of records that carry identities but are not hashed themselves (`covers` = what is checked):",
      "",
      "| record | checked | not checked |",
      "|---|---|---|",
    );
    for (const s of records) rows.push(`| \`${s.identity}\` | ${fields(s.covers)} | ${fields(s.excludes)} |`);
  }
  return rows.join("\n");
}

test("every declareIdentity call in src/ is reachable from an area index", () => {
  const calls = sourceFiles(join(PROJECT_ROOT, "src"))
    .filter((f) => !f.endsWith(join("core", "identity.ts")))
    .reduce((n, f) => n + (readFileSync(f, "utf8").match(/declareIdentity\(/g)?.length ?? 0), 0);
  const { decls, scopes } = collect();
  assert.equal(decls.length, calls, "export every identity declaration from its area's index.ts");
  // every scope belongs to a declaration or is a listed record, and no two scopes share an identity
  assert.equal(new Set(scopes.map((s) => s.identity)).size, scopes.length);
  // control: the collector really finds declarations and scopes
  assert.ok(decls.length >= 10 && scopes.length >= 8);
});

test("every declaration names the file that declares it (definedIn survives moves)", () => {
  for (const d of collect().decls) {
    const file = join(PROJECT_ROOT, d.definedIn);
    assert.ok(existsSync(file), `${d.name}: definedIn ${d.definedIn} does not exist`);
    assert.match(readFileSync(file, "utf8"), /declareIdentity\(/, `${d.name}: ${d.definedIn} declares no identity`);
  }
});

test("docs/identities.md's table is the table the declarations generate", () => {
  const doc = readFileSync(DOC, "utf8");
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  assert.ok(start >= 0 && end > start, "the doc keeps the generated-table markers");
  const current = doc.slice(start + BEGIN.length, end).trim();
  const expected = renderTable();
  if (process.env.CAIRN_UPDATE_DOCS === "1" && current !== expected) {
    writeFileSync(DOC, `${doc.slice(0, start + BEGIN.length)}\n${expected}\n${doc.slice(end)}`);
    return;
  }
  assert.equal(current, expected, "run CAIRN_UPDATE_DOCS=1 node --import tsx --test tests/core/identities-doc.test.ts");
  // control: a changed declaration would change the table
  assert.notEqual(expected.replace("blake3", "sha256"), expected);
});
