/**
 * Refusal mutants, without a mutation-testing dependency: every `throw` in a
 * module is switched off in turn (`throw x` becomes `void x`, so the check
 * runs but refuses nothing) and the given test files are run; a mutant is
 * killed when they fail. This is the class of mutant where a survivor is a
 * security bug (a check that no test needs); StrykerJS (see README.md) would
 * add operator, literal and condition mutants.
 *
 *   node --import tsx bench/mutation/refusals.ts src/vm/protocol.ts tests/vm/protocol.test.ts [more tests...]
 *
 * It edits the module in place and restores it afterwards (also on Ctrl-C):
 * run it on a clean tree, and not while another test run uses the tree.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";

const [module, ...tests] = process.argv.slice(2);
if (module === undefined || tests.length === 0) {
  console.error("usage: refusals.ts MODULE TEST_FILE...");
  process.exit(2);
}
const original = readFileSync(module, "utf8");
const restore = (): void => writeFileSync(module, original);
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    restore();
    process.exit(130);
  });
}

const lines = original.split("\n");
/** Lines with a `throw` in code (not in a comment). */
const sites = lines.flatMap((line, i) => {
  const code = line.replace(/\/\/.*$/, "");
  return /\bthrow\s/.test(code) && !/^\s*\*/.test(line) ? [i] : [];
});

const run = (): boolean => {
  const r = spawnSync(process.execPath, ["--import", "tsx", "--test", ...tests], { stdio: "ignore", timeout: 300_000 });
  return r.status === 0;
};

const t0 = Date.now();
if (!run()) {
  console.error("the tests fail on the unmutated module: nothing to measure");
  process.exit(1);
}
const survivors: string[] = [];
try {
  for (const i of sites) {
    const mutated = [...lines];
    mutated[i] = lines[i]!.replace(/\bthrow\s/, "void ");
    writeFileSync(module, mutated.join("\n"));
    const killed = !run();
    console.log(`${killed ? "killed  " : "SURVIVED"} ${module}:${i + 1}  ${lines[i]!.trim().slice(0, 100)}`);
    if (!killed) survivors.push(`${module}:${i + 1}`);
  }
} finally {
  restore();
}
const killed = sites.length - survivors.length;
console.log(
  `\n${module}: ${killed} of ${sites.length} refusal mutants killed (${((100 * killed) / Math.max(1, sites.length)).toFixed(1)}%) in ${((Date.now() - t0) / 1000).toFixed(0)} s`,
);
if (survivors.length > 0) console.log(`survivors (each needs a test, or a reason it is equivalent): ${survivors.join(", ")}`);
