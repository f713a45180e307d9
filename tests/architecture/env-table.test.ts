// One table of the environment variables cairn reads (docs/README.md,
// "Environment variables cairn reads"; issue 36, item 5). The oracle reads
// src/ as text: every `env.NAME` / `env["NAME"]` read (of process.env or of a
// command's env), every quoted "CAIRN_…" name, the names a pass-through list
// (`PASS_THROUGH = [...]`) hands on, and the names the two limit families spell
// from their tables (CAIRN_REMOTE_*, CAIRN_SLURM_*). Each must have a row; a
// CAIRN_* row must name a variable that is read (no stale rows). Control: a
// planted read of a variable without a row is reported.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { REMOTE_LIMITS, remoteLimitSpelling, type RemoteLimits } from "../../src/core/limits.ts";
import { SLURM_LIMITS, slurmLimitVariable, type SlurmLimits } from "../../src/fleet/slurm-commands.ts";

const SRC = join(PROJECT_ROOT, "src");

function sources(dir: string, out: Array<{ rel: string; text: string }> = []): Array<{ rel: string; text: string }> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) sources(p, out);
    else if (e.isFile() && e.name.endsWith(".ts")) out.push({ rel: p.slice(SRC.length + 1), text: readFileSync(p, "utf8") });
  }
  return out;
}

/** The variables a source text reads, by name, each with where. */
export function variablesRead(files: ReadonlyArray<{ rel: string; text: string }>): Map<string, string> {
  const found = new Map<string, string>();
  const add = (name: string, rel: string): void => void (found.has(name) || found.set(name, rel));
  for (const { rel, text } of files) {
    for (const m of text.matchAll(/\benv(?:\?\.|\.|\[")([A-Z_][A-Z0-9_]*)\b/g)) add(m[1]!, rel);
    for (const m of text.matchAll(/["'`](CAIRN_[A-Z0-9_]+)["'`]/g)) add(m[1]!, rel);
    for (const list of text.matchAll(/\bPASS_THROUGH\s*=\s*\[([^\]]*)\]/g)) for (const m of list[1]!.matchAll(/"([A-Za-z_][A-Za-z0-9_]*)"/g)) add(m[1]!, rel);
  }
  return found;
}

/** The names in the first column of the table under the "Environment variables cairn reads" heading. */
export function tableNames(readme: string): Set<string> {
  const start = readme.indexOf("## Environment variables cairn reads");
  assert.ok(start >= 0, "docs/README.md has the section");
  const rest = readme.slice(start + 3);
  const section = rest.slice(0, rest.search(/\n## /) >= 0 ? rest.search(/\n## /) : undefined);
  const names = new Set<string>();
  for (const line of section.split("\n")) {
    if (!line.startsWith("| `")) continue;
    const first = line.split("|")[1]!;
    for (const m of first.matchAll(/`([A-Za-z_][A-Za-z0-9_]*)`/g)) names.add(m[1]!);
  }
  return names;
}

const readme = readFileSync(join(PROJECT_ROOT, "docs", "README.md"), "utf8");
const files = sources(SRC);

function computedNames(): string[] {
  return [
    ...(Object.keys(REMOTE_LIMITS) as (keyof RemoteLimits)[]).map((k) => remoteLimitSpelling(k).env),
    ...(Object.keys(SLURM_LIMITS) as (keyof SlurmLimits)[]).map((k) => slurmLimitVariable(k)),
  ];
}

function missing(read: Map<string, string>, extra: readonly string[], table: Set<string>): string[] {
  return [...[...read].map(([n, rel]) => `${n} (${rel})`), ...extra.map((n) => `${n} (a limit's variable)`)].filter(
    (s) => !table.has(s.slice(0, s.indexOf(" "))),
  );
}

test("every environment variable src/ reads has a row in docs/README.md's table", () => {
  const read = variablesRead(files);
  assert.ok(read.has("CAIRN_HOME") && read.has("CAIRN_NOW") && read.has("HTTPS_PROXY"), "control: the reads were found");
  assert.ok(computedNames().includes("CAIRN_REMOTE_IDLE_MS") && computedNames().includes("CAIRN_SLURM_POLL_MS"));
  assert.deepEqual(missing(read, computedNames(), tableNames(readme)), [], "add a row for each to docs/README.md");
});

test("every CAIRN_* row of the table names a variable cairn reads", () => {
  const known = new Set([...variablesRead(files).keys(), ...computedNames()]);
  const stale = [...tableNames(readme)].filter((n) => n.startsWith("CAIRN_") && !known.has(n));
  assert.deepEqual(stale, []);
});

test("control: a planted read without a row is reported, in each form the oracle reads", () => {
  const table = tableNames(readme);
  for (const text of [
    "const x = process.env.CAIRN_PLANTED;",
    "const x = ctx.env.CAIRN_PLANTED;",
    'const x = env["CAIRN_PLANTED"];',
    'const name = "CAIRN_PLANTED";',
  ]) {
    const read = variablesRead([{ rel: "planted.ts", text }]);
    assert.deepEqual(missing(read, [], table), ["CAIRN_PLANTED (planted.ts)"], text);
  }
  assert.deepEqual(missing(variablesRead([{ rel: "ok.ts", text: "env.CAIRN_HOME" }]), [], table), [], "control: a listed read passes");
});

test("the document table names each format as the code spells it", () => {
  // the stale `cairn.env-manifest/1` line: each format in the "five documents" table is a string of the file it names
  for (const line of readme.split("\n").filter((l) => /^\| (environment manifest|environment lockfile|workload lock|run manifest) \|/.test(l))) {
    const cells = line.split("|").map((c) => c.trim());
    const format = /`([^`]+)`/.exec(cells[2]!)![1]!;
    const code = [...cells[4]!.matchAll(/`(src\/[^`]+\.ts)`/g)].map((m) => readFileSync(join(PROJECT_ROOT, m[1]!), "utf8")).join("\n");
    assert.ok(code.includes(`"${format}"`), `${cells[1]}: ${format} is spelled in ${cells[4]}`);
  }
});
