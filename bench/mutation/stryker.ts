/**
 * Runs StrykerJS on named module sets (bench/mutation/sets.ts), one run per
 * set, niced so it only takes idle CPU, and prints per set: mutants, killed,
 * survived (each with its place and replacement), score and run time. A
 * surviving mutant is a change to a module that no covering test notices; in
 * these modules that is a refusal or an identity byte nothing checks.
 *
 *   node --import tsx bench/mutation/stryker.ts jcs digest ...   (or: all)
 *   node --import tsx bench/mutation/stryker.ts --report jcs ...  (summaries of the last runs)
 *   node --import tsx bench/mutation/stryker.ts --lines 65,174-178 json   (only those lines' mutants)
 *
 * Not part of the test command: a set takes minutes. Stryker works in a copy
 * of the project under .stryker-tmp/ (ignored by git and Biome), so the tree
 * itself is never edited. Test files run as `node --import tsx FILE` through
 * Stryker's TAP runner (node:test prints TAP when stdout is not a terminal),
 * and the TypeScript checker drops mutants that do not type-check.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { strykerConfig, tsconfigPath, checkerTsconfig } from "./config.ts";
import { MUTATION_SETS, MUTATION_WORK_DIR, type MutationSet } from "./sets.ts";

const ROOT = resolve(import.meta.dirname, "..", "..");

interface Mutant {
  readonly mutatorName: string;
  readonly replacement?: string;
  readonly status: string;
  readonly location: { readonly start: Position; readonly end: Position };
}
interface Position {
  readonly line: number;
  readonly column: number;
}
interface Report {
  readonly files: Readonly<Record<string, { readonly source: string; readonly mutants: readonly Mutant[] }>>;
}

/** The source text a mutant replaces (lines and columns are 1-based). */
function original(source: string, m: Mutant): string {
  const lines = source.split("\n");
  const { start, end } = m.location;
  const text =
    start.line === end.line
      ? lines[start.line - 1]!.slice(start.column - 1, end.column - 1)
      : [lines[start.line - 1]!.slice(start.column - 1), ...lines.slice(start.line, end.line - 1), lines[end.line - 1]!.slice(0, end.column - 1)].join("\n");
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

function summarize(name: string, report: Report, seconds: number): string[] {
  const all = Object.values(report.files).flatMap((f) => f.mutants);
  const count = (s: string): number => all.filter((m) => m.status === s).length;
  const killed = count("Killed") + count("Timeout");
  const missed = count("Survived") + count("NoCoverage");
  const score = killed + missed === 0 ? 100 : (100 * killed) / (killed + missed);
  const lines = [
    `${name}: ${all.length} mutants, ${killed} killed (${count("Timeout")} by timeout), ${count("Survived")} survived, ` +
      `${count("NoCoverage")} not covered, ${count("CompileError")} rejected by tsc, ${count("RuntimeError")} errored (RuntimeError), ${count("Ignored")} ignored; ` +
      `score ${score.toFixed(1)}%${Number.isNaN(seconds) ? "" : `, ${seconds.toFixed(0)} s`}`,
  ];
  for (const [file, { source, mutants }] of Object.entries(report.files)) {
    for (const m of mutants.filter((x) => x.status === "Survived" || x.status === "NoCoverage")) {
      const at = `${file}:${m.location.start.line}:${m.location.start.column}`;
      lines.push(`  ${m.status} ${at} ${m.mutatorName}: ${JSON.stringify(original(source, m))} -> ${JSON.stringify(m.replacement ?? "")}`);
    }
  }
  return lines;
}

/** `--report SET...`: the summaries of the JSON reports already in bench/.work/mutation, without running anything. */
function report(names: readonly string[]): number {
  for (const name of names) {
    const file = join(ROOT, MUTATION_WORK_DIR, `${name}.json`);
    if (!existsSync(file)) {
      console.log(`${name}: no report (not run)`);
      continue;
    }
    const lines = summarize(name, JSON.parse(readFileSync(file, "utf8")) as Report, Number.NaN);
    console.log(lines.join("\n"));
  }
  return 0;
}

/**
 * `--lines 65,174-178 SET`: only the mutants on those lines of the set's
 * (single) module, to confirm that new tests kill the survivors of a full
 * run without repeating it. The report goes to `<set>.lines.json`.
 */
function withLines(name: string, set: MutationSet, spec: string): { name: string; set: MutationSet } {
  const file = set.mutate[0]!;
  const ranges = spec.split(",").map((r) => (r.includes("-") ? r : `${r}-${r}`));
  return { name: `${name}.lines`, set: { ...set, mutate: ranges.map((r) => `${file}:${r}`) } };
}

function main(): number {
  let argv = process.argv.slice(2);
  const onlyReport = argv[0] === "--report";
  let lineSpec: string | undefined;
  if (argv[0] === "--lines") {
    lineSpec = argv[1];
    argv = argv.slice(2);
  }
  const args = onlyReport ? argv.slice(1) : argv;
  const names = args.includes("all") ? Object.keys(MUTATION_SETS) : args;
  if (names.length === 0 || names.some((n) => MUTATION_SETS[n] === undefined)) {
    console.error(`usage: stryker.ts [--report | --lines L,M-N] SET... | all\n  sets: ${Object.keys(MUTATION_SETS).join(" ")}`);
    return 2;
  }
  if (onlyReport) return report(names);
  mkdirSync(join(ROOT, MUTATION_WORK_DIR), { recursive: true });
  const vectors = process.env.CAIRN_VECTORS ?? "/work/shared/vectors";
  const env = { ...process.env, ...(existsSync(vectors) ? { CAIRN_VECTORS: vectors } : {}) };
  const out: string[] = [];
  for (const setName of names) {
    const { name, set } = lineSpec === undefined ? { name: setName, set: MUTATION_SETS[setName]! } : withLines(setName, MUTATION_SETS[setName]!, lineSpec);
    const config = join(MUTATION_WORK_DIR, `${name}.conf.json`);
    writeFileSync(join(ROOT, tsconfigPath(name)), `${JSON.stringify(checkerTsconfig(set), null, 2)}\n`);
    writeFileSync(join(ROOT, config), `${JSON.stringify(strykerConfig(name, set), null, 2)}\n`);
    const stryker = join("node_modules", "@stryker-mutator", "core", "bin", "stryker.js");
    const started = process.hrtime.bigint();
    // nice/ionice: the run only takes CPU and disk time nothing else wants.
    const run = spawnSync("nice", ["-n", "19", "ionice", "-c3", process.execPath, stryker, "run", config], { cwd: ROOT, env, stdio: "inherit" });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (run.status !== 0) {
      out.push(`${name}: stryker exited with ${run.status ?? run.signal}`);
      continue;
    }
    const report = JSON.parse(readFileSync(join(ROOT, MUTATION_WORK_DIR, `${name}.json`), "utf8")) as Report;
    const lines = summarize(name, report, seconds);
    writeFileSync(join(ROOT, MUTATION_WORK_DIR, `${name}.summary.txt`), `${lines.join("\n")}\n`);
    out.push(...lines);
  }
  console.log(out.join("\n"));
  return out.some((l) => l.includes("stryker exited")) ? 1 : 0;
}

process.exitCode = main();
