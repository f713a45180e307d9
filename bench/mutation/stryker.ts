/**
 * Runs StrykerJS on named module sets (bench/mutation/sets.ts), one run per
 * set, niced so it only takes idle CPU, and prints per set: mutants, killed,
 * survived (each with its place and replacement), score and run time. A
 * surviving mutant is a change to a module that no covering test notices; in
 * these modules that is a refusal or an identity byte nothing checks.
 *
 *   node --import tsx bench/mutation/stryker.ts jcs digest ...   (or: all)
 *
 * Not part of the test command: a set takes minutes. Stryker works in a copy
 * of the project under .stryker-tmp/ (ignored by git and Biome), so the tree
 * itself is never edited. Test files run as `node --import tsx FILE` through
 * Stryker's TAP runner (node:test prints TAP when stdout is not a terminal),
 * and the TypeScript checker drops mutants that do not type-check.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { MUTATION_SETS, MUTATION_WORK_DIR, type MutationSet, STRYKER_TEMP_DIR } from "./sets.ts";

const ROOT = resolve(import.meta.dirname, "..", "..");

interface Mutant {
  readonly mutatorName: string;
  readonly replacement?: string;
  readonly status: string;
  readonly location: { readonly start: { readonly line: number; readonly column: number } };
}
interface Report {
  readonly files: Readonly<Record<string, { readonly mutants: readonly Mutant[] }>>;
}

/**
 * The TypeScript checker's project: the mutated files and what they import,
 * not the files that import them. A mutant keeps its module's signatures, so
 * it type-checks or not in its own file; checking the whole project (500
 * files, every dependant of core re-checked for each mutant) made the checker
 * take 50 times the CPU of the tests.
 */
function tsconfigFor(name: string, set: MutationSet): string {
  const file = join(MUTATION_WORK_DIR, `${name}.tsconfig.json`);
  const up = relative(join(ROOT, MUTATION_WORK_DIR), ROOT);
  const config = { extends: join(up, "tsconfig.json"), include: [], files: set.mutate.map((m) => join(up, m)) };
  writeFileSync(join(ROOT, file), `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

function configFor(name: string, set: MutationSet): object {
  return {
    testRunner: "tap",
    tap: { testFiles: set.tests, nodeArgs: ["--import", "tsx"], forceBail: true },
    checkers: ["typescript"],
    plugins: ["@stryker-mutator/*", "./bench/mutation/ignore-messages.mjs"],
    ignorers: ["error-messages"],
    tsconfigFile: tsconfigFor(name, set),
    typescriptChecker: { prioritizePerformanceOverAccuracy: true },
    coverageAnalysis: "perTest",
    concurrency: 1,
    timeoutMS: 60000,
    mutate: set.mutate,
    tempDirName: STRYKER_TEMP_DIR,
    cleanTempDir: true,
    // The sandbox copy leaves out build output and other benches' work, but keeps the checker's tsconfig.
    ignorePatterns: ["dist", "tests/.generated", "bench/.work/*", `!${MUTATION_WORK_DIR}`],
    reporters: ["clear-text", "json", "progress-append-only"],
    clearTextReporter: { allowColor: false, logTests: false, reportMutants: false, reportScoreTable: true },
    jsonReporter: { fileName: join(MUTATION_WORK_DIR, `${name}.json`) },
    thresholds: { high: 95, low: 90, break: null },
  };
}

function summarize(name: string, report: Report, seconds: number): string[] {
  const all = Object.values(report.files).flatMap((f) => f.mutants);
  const count = (s: string): number => all.filter((m) => m.status === s).length;
  const killed = count("Killed") + count("Timeout");
  const missed = count("Survived") + count("NoCoverage");
  const score = killed + missed === 0 ? 100 : (100 * killed) / (killed + missed);
  const lines = [
    `${name}: ${all.length} mutants, ${killed} killed (${count("Timeout")} by timeout), ${count("Survived")} survived, ` +
      `${count("NoCoverage")} not covered, ${count("CompileError")} rejected by tsc, ${count("Ignored")} ignored; ` +
      `score ${score.toFixed(1)}%, ${seconds.toFixed(0)} s`,
  ];
  for (const [file, { mutants }] of Object.entries(report.files)) {
    for (const m of mutants.filter((x) => x.status === "Survived" || x.status === "NoCoverage")) {
      lines.push(`  ${m.status} ${file}:${m.location.start.line}:${m.location.start.column} ${m.mutatorName} -> ${JSON.stringify(m.replacement ?? "")}`);
    }
  }
  return lines;
}

function main(): number {
  const args = process.argv.slice(2);
  const names = args.includes("all") ? Object.keys(MUTATION_SETS) : args;
  if (names.length === 0 || names.some((n) => MUTATION_SETS[n] === undefined)) {
    console.error(`usage: stryker.ts SET... | all\n  sets: ${Object.keys(MUTATION_SETS).join(" ")}`);
    return 2;
  }
  mkdirSync(join(ROOT, MUTATION_WORK_DIR), { recursive: true });
  const vectors = process.env.CAIRN_VECTORS ?? "/work/shared/vectors";
  const env = { ...process.env, ...(existsSync(vectors) ? { CAIRN_VECTORS: vectors } : {}) };
  const out: string[] = [];
  for (const name of names) {
    const set = MUTATION_SETS[name]!;
    const config = join(MUTATION_WORK_DIR, `${name}.conf.json`);
    writeFileSync(join(ROOT, config), `${JSON.stringify(configFor(name, set), null, 2)}\n`);
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
