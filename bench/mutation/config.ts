/**
 * The StrykerJS configuration of one module set (bench/mutation/sets.ts), as
 * data: stryker.ts writes it to bench/.work/mutation/<set>.conf.json and runs
 * it; tests/testing/mutation.test.ts checks its invariants (TAP runner under
 * tsx, TypeScript checker, one runner, the sandbox outside src/ and tests/).
 */
import { join, relative } from "node:path";
import { MUTATION_WORK_DIR, type MutationSet, STRYKER_TEMP_DIR } from "./sets.ts";

/** Where the checker's tsconfig of a set is written (kept in the sandbox copy, unlike the rest of bench/.work). */
export function tsconfigPath(name: string): string {
  return join(MUTATION_WORK_DIR, `${name}.tsconfig.json`);
}

/**
 * The TypeScript checker's project: the mutated files and what they import,
 * not the files that import them. A mutant keeps its module's signatures, so
 * it type-checks or not in its own file; with the whole project (500 files,
 * every dependant of core re-checked for each mutant) the checker had used 3
 * minutes of CPU after 9 minutes of the jcs run, with hardly a mutant tested.
 */
export function checkerTsconfig(set: MutationSet): { extends: string; include: string[]; files: string[] } {
  const up = relative(MUTATION_WORK_DIR, ".");
  const files = [...new Set(set.mutate.map((m) => m.replace(/:[0-9:-]+$/, "")))]; // without a line range
  return { extends: join(up, "tsconfig.json"), include: [], files: files.map((m) => join(up, m)) };
}

export function strykerConfig(name: string, set: MutationSet): Record<string, unknown> {
  return {
    testRunner: "tap",
    // node:test prints TAP when stdout is not a terminal; each test file is one Stryker "test".
    tap: { testFiles: [...set.tests], nodeArgs: ["--import", "tsx"], forceBail: true },
    checkers: ["typescript"],
    plugins: ["@stryker-mutator/*", "./bench/mutation/ignore-messages.mjs"],
    ignorers: ["error-messages"],
    tsconfigFile: tsconfigPath(name),
    typescriptChecker: { prioritizePerformanceOverAccuracy: true },
    coverageAnalysis: "perTest",
    concurrency: 1,
    // On top of 1.5x the dry run's time per file: a mutant that loops is stopped after this (counted killed, as "timeout").
    timeoutMS: 30000,
    // The dry run runs every file once with coverage; at a load average of 25-40 (issue 31) the default 5 minutes was not enough.
    dryRunTimeoutMinutes: 30,
    mutate: [...set.mutate],
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
