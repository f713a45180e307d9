/**
 * The claims ledger is checked (issue 17, item 4): every test file (or bench,
 * script, vector file) a claim in docs/properties/*.md names exists, and every quoted test name ("…" marks a
 * prefix) is declared by a test, it or describe call in that file (or, for a
 * name quoted without a file, in a file the same row names). Every id is
 * unique across all the ledger files (issue 31: R1–R21 were in both runs.md
 * and registry.md, whose rows are now D1–D28); a row of issue 31 has the id
 * `I31-<case>` with an optional letter (`I31-2`, `I31-19b`).
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, it } from "node:test";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

const LEDGER_DIR = join(PROJECT_ROOT, "docs", "properties");
const TESTS = join(PROJECT_ROOT, "tests");
/** The test folder each ledger speaks for (a bare file name resolves there first). */
const AREA: Record<string, string[]> = {
  "architecture.md": ["architecture"],
  "manifest.md": ["manifest"],
  "oci.md": ["oci", "tree"],
  "registry.md": ["registry"],
  "runs.md": ["vm"],
  "strata.md": ["strata"],
  "workload.md": ["workload", "store"],
  "testing.md": ["testing"],
  "fleet.md": ["fleet"],
  "pictures.md": ["cli", "core", "testing", "architecture"],
};

function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === ".generated" || e.name === "node_modules") continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...testFiles(p));
    else if (e.name.endsWith(".test.ts")) out.push(relative(PROJECT_ROOT, p));
  }
  return out;
}

export interface Reference {
  readonly id: string;
  readonly file: string;
  readonly names: string[];
}

/** The (file, quoted names) references of one ledger row's test cell, in order. */
export function references(id: string, cell: string): Reference[] {
  const refs: Reference[] = [];
  const loose: string[] = [];
  for (const m of cell.matchAll(/`((?:[\w.-]+\/)*[\w.-]+\.(?:test\.ts|ts|sh|json))`|"([^"]+)"/g)) {
    if (m[1] !== undefined) {
      // a bare `index.json` is a file name in the claim's prose, not a reference
      if (m[1].endsWith(".test.ts") || m[1].includes("/")) refs.push({ id, file: m[1], names: [] });
    } else if (refs.length > 0) refs.at(-1)!.names.push(m[2]!);
    else loose.push(m[2]!);
  }
  if (loose.length > 0) refs.push({ id, file: "", names: loose });
  return refs;
}

/** Resolves a file as named in a ledger (full path, area-relative path, or bare name) to candidates. */
export function resolve(name: string, ledger: string, all: readonly string[]): string[] {
  if (!name.endsWith(".test.ts")) {
    // a bench, script or vector file the claim rests on: it must exist
    if (existsSync(join(PROJECT_ROOT, name))) return [name];
    const near = all.flatMap((f) => [join(dirname(f), name), join(dirname(f), "..", name)]);
    return [...new Set(near)].filter((f) => existsSync(join(PROJECT_ROOT, f))).slice(0, 1);
  }
  if (name.startsWith("tests/")) return all.filter((f) => f === name);
  const areas = AREA[ledger] ?? [];
  const inArea = all.filter((f) => areas.some((a) => f === `tests/${a}/${name}`));
  if (inArea.length > 0) return inArea;
  return all.filter((f) => f.endsWith(`/${name}`));
}

/**
 * True when `text` declares a test (test, it or describe) whose title starts
 * with `name`; "…" at the end is optional, "…" at the start matches anywhere
 * in the title.
 */
export function declares(text: string, name: string): boolean {
  const infix = name.startsWith("…");
  const wanted = name.replace(/^…/, "").replace(/(…|\.\.\.)$/, "");
  for (const m of text.matchAll(/\b(?:test|it|describe)\(\s*(["'`])((?:\\.|(?!\1).)*)\1/g)) {
    const title = m[2]!.replace(/\\(.)/g, "$1");
    if (infix ? title.includes(wanted) : title.startsWith(wanted)) return true;
  }
  return false;
}

/** A claim's id: a letter prefix and a number (`S12`, `R3b`), or an issue's row (`I31-19`, `I31-19b`). */
export const CLAIM_ID = /^(?:[A-Z]+\d+|I\d+-\d+)[a-z]?$/;
/** Any id in a ledger's first column, measured rows (`R-B1`, `O-M1`) included: the uniqueness check covers these too. */
const ANY_ID = /^[A-Z][A-Z\d]*(?:-[A-Z\d]+)*[a-z]?$/;

/** The rows of ledger texts (file name → text): `| id | claim | test | status |`. */
export function ledgerRows(texts: ReadonlyMap<string, string>, idPattern = CLAIM_ID): { ledger: string; id: string; cell: string }[] {
  const out: { ledger: string; id: string; cell: string }[] = [];
  for (const [ledger, text] of texts) {
    for (const line of text.split("\n")) {
      const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
      if (cells.length < 6 || !idPattern.test(cells[1]!)) continue;
      out.push({ ledger, id: cells[1]!, cell: cells[3]! });
    }
  }
  return out;
}

function ledgerTexts(): Map<string, string> {
  const files = readdirSync(LEDGER_DIR).filter((f) => f.endsWith(".md") && f !== "README.md");
  return new Map(files.map((f) => [f, readFileSync(join(LEDGER_DIR, f), "utf8")]));
}

function rows(): { ledger: string; id: string; cell: string }[] {
  return ledgerRows(ledgerTexts());
}

/** Every id used by more than one row, in any ledger file, as "id: ledger, ledger". */
export function duplicateIds(texts: ReadonlyMap<string, string>): string[] {
  const seen = new Map<string, string[]>();
  for (const r of ledgerRows(texts, ANY_ID)) seen.set(r.id, [...(seen.get(r.id) ?? []), r.ledger]);
  return [...seen].filter(([, where]) => where.length > 1).map(([id, where]) => `${id}: ${where.sort().join(", ")}`);
}

/**
 * Every row of a claims table (one headed `| id | …`) whose first cell is no
 * id the checks recognise, as "ledger: id": such a row is neither checked for
 * its tests nor for a unique id (issue 32's `I32-peer` rows were silently
 * skipped so). Other tables (measurements) are not claims tables.
 */
export function unrecognisedRows(texts: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const [ledger, text] of texts) {
    let claims = false;
    for (const line of text.split("\n")) {
      if (!line.trimStart().startsWith("|")) {
        claims = false;
        continue;
      }
      const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
      if (cells[1] === "id") claims = true;
      if (!claims || cells[1] === "id" || /^:?-+:?$/.test(cells[1] ?? "")) continue;
      if (!ANY_ID.test(cells[1] ?? "")) out.push(`${ledger}: ${cells[1]}`);
    }
  }
  return out;
}

/** Every broken reference, as "ledger id: what is missing". */
export function brokenReferences(ledgerRows: { ledger: string; id: string; cell: string }[], all: readonly string[], read: (f: string) => string): string[] {
  const broken: string[] = [];
  for (const { ledger, id, cell } of ledgerRows) {
    const refs = references(id, cell);
    const named = refs.filter((r) => r.file !== "").flatMap((r) => resolve(r.file, ledger, all));
    for (const r of refs) {
      const candidates = r.file === "" ? named : resolve(r.file, ledger, all);
      if (r.file !== "" && candidates.length === 0) {
        broken.push(`${ledger} ${id}: no test file ${r.file}`);
        continue;
      }
      for (const n of r.names) {
        if (!candidates.some((f) => declares(read(f), n))) broken.push(`${ledger} ${id}: no test "${n}" in ${candidates.join(", ") || "(no file named)"}`);
      }
    }
  }
  return broken;
}

describe("claims ledger", () => {
  const all = testFiles(TESTS);
  const read = (f: string) => readFileSync(join(PROJECT_ROOT, f), "utf8");

  it("every id is unique across all ledger files (control: a planted duplicate in another file, and one in the same file, are caught)", () => {
    const texts = ledgerTexts();
    assert.ok(texts.size >= 9, "the ledger files were read");
    assert.deepEqual(duplicateIds(texts), []);
    const row = (id: string) => `| ${id} | a claim | \`tests/vm/protocol.test.ts\` | checked |\n`;
    const planted = new Map(texts);
    planted.set("runs.md", `${texts.get("runs.md")}${row("D3")}${row("I99-19")}${row("I99-19b")}`);
    planted.set("registry.md", `${texts.get("registry.md")}${row("I99-19")}${row("R-B1")}`);
    assert.deepEqual(duplicateIds(planted).sort(), ["D3: registry.md, runs.md", "I99-19: registry.md, runs.md", "R-B1: registry.md, registry.md"]);
  });

  it("every ledger row has an id the checks recognise (control: lowercase and malformed ids are caught)", () => {
    assert.deepEqual(unrecognisedRows(ledgerTexts()), []);
    const row = (id: string) => `| ${id} | a claim | \`tests/vm/protocol.test.ts\` | checked |\n`;
    const planted = new Map([
      [
        "strata.md",
        `| id | claim | test | status |\n|---|---|---|---|\n${row("S1")}${row("I32-peer")}${row("i31-2")}${row("R-B1")}${row("I32-6a")}\n| size | a | b | c |\n|---|---|---|---|\n| large: 8 MB | 1 | 2 | 3 |\n`,
      ],
    ]);
    assert.deepEqual(unrecognisedRows(planted), ["strata.md: I32-peer", "strata.md: i31-2"]);
  });

  it("an issue-31 row (I31-<case>) is a claim like any other: its tests are checked (control: a missing one is caught)", () => {
    const texts = new Map([
      [
        "runs.md",
        '| I31-19b | a claim | `tests/vm/no-such.test.ts` | checked |\n| I31-19c | c | `tests/testing/ledger.test.ts` "every id is unique…" | checked |\n',
      ],
    ]);
    const found = ledgerRows(texts);
    assert.deepEqual(
      found.map((r) => r.id),
      ["I31-19b", "I31-19c"],
    );
    assert.deepEqual(brokenReferences(found, all, read), ["runs.md I31-19b: no test file tests/vm/no-such.test.ts"]);
    for (const id of ["I31-2", "I31-19b", "S12", "SF3a"]) assert.match(id, CLAIM_ID);
    for (const id of ["I31-", "i31-2", "I31-2-3", "R-B1", "id"]) assert.doesNotMatch(id, CLAIM_ID);
  });

  it("every claim names at least one test file", () => {
    const without = rows().filter((r) => references(r.id, r.cell).every((ref) => ref.file === ""));
    assert.deepEqual(
      without.map((r) => `${r.ledger} ${r.id}`),
      [],
    );
  });

  it("every named test file and test name exists (control: a planted missing file and a planted missing name are caught)", () => {
    assert.ok(rows().length > 100, "the ledgers were read");
    assert.deepEqual(brokenReferences(rows(), all, read), []);
    const planted = [
      { ledger: "runs.md", id: "X1", cell: "`tests/vm/no-such.test.ts`" },
      { ledger: "runs.md", id: "X2", cell: '`protocol.test.ts` "no test is called this…"' },
      { ledger: "runs.md", id: "X3", cell: '`protocol.test.ts` "applies the named frame and stream limits"' },
      { ledger: "runs.md", id: "X4", cell: '`protocol.test.ts` "applies the named…", "…frame and stream limits"' },
      { ledger: "runs.md", id: "X5", cell: "`bench/no-such/run.ts`" },
    ];
    assert.deepEqual(brokenReferences(planted, all, read), [
      "runs.md X1: no test file tests/vm/no-such.test.ts",
      'runs.md X2: no test "no test is called this…" in tests/vm/protocol.test.ts',
      "runs.md X5: no test file bench/no-such/run.ts",
    ]);
  });
});
