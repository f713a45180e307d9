// `cairn run` reads and validates its input before any side effect (issue
// 16): a missing, special or invalid input is refused with its own code
// before the guest kit is set up (which may build the agent and write a
// kit), before the runs directory or the store is created. The kit is given
// as a foreign directory, which ensureKit refuses (ROOT_FOREIGN): before the
// fix every input below got that refusal, because the kit came first. The
// control, a valid spec, reaches the kit and gets it, which shows the kit is
// still set up once the input is good. CAIRN_HOME must hold nothing
// afterwards (the side-effect check: a checksum of the tree before and after).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, lstatSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";

/** A checksum of every path, type, mode and file content under `dir`. */
function treeSum(dir: string): string {
  const h = createHash("sha256");
  for (const rel of readdirSync(dir, { recursive: true, encoding: "utf8" }).sort()) {
    const st = lstatSync(join(dir, rel));
    h.update(`${rel}\0${st.mode}\0`);
    if (st.isFile()) h.update(readFileSync(join(dir, rel)));
  }
  return h.digest("hex");
}

function workspace() {
  const base = mkdtempSync(join(tmpdir(), "cairn-run-first-"));
  const home = join(base, "home");
  mkdirSync(home);
  const kit = join(base, "foreign-kit");
  mkdirSync(kit);
  writeFileSync(join(kit, "someone-elses.txt"), "not a kit\n");
  const before = { home: treeSum(home), kit: treeSum(kit) };
  const run = async (input: string) => {
    const r = await runCli(["run", input, "--kit", kit, "--json"], { ...process.env, CAIRN_HOME: home });
    const doc = JSON.parse(r.stdout) as { error?: { code: string } };
    return { code: doc.error?.code, exit: r.code };
  };
  const unchanged = () => {
    assert.equal(treeSum(home), before.home, "nothing was written under CAIRN_HOME");
    assert.equal(treeSum(kit), before.kit, "the kit directory is untouched");
  };
  return { base, run, unchanged };
}

const GOOD_SPEC = `schema: cairn.workload/1
source:
  binary:
    path: ./hello
    args: [world]
    user: "1000:1000"
`;

const CASES: ReadonlyArray<{ name: string; file: string; write: (p: string) => void; code: string }> = [
  { name: "a missing input", file: "missing.yaml", write: () => undefined, code: "USAGE" },
  { name: "a FIFO as the input", file: "fifo.yaml", write: (p) => execFileSync("mkfifo", [p]), code: "RUN_INVALID" },
  { name: "a directory as the input", file: "dir.yaml", write: (p) => mkdirSync(p), code: "RUN_INVALID" },
  { name: "a spec with an unknown key", file: "bad.yaml", write: (p) => writeFileSync(p, `${GOOD_SPEC}colour: red\n`), code: "MODEL_UNKNOWN_FIELD" },
  { name: "a spec that is not YAML", file: "broken.yaml", write: (p) => writeFileSync(p, "schema: [unclosed\n"), code: "YAML_SYNTAX" },
  { name: "a spec whose run section is invalid", file: "run.yaml", write: (p) => writeFileSync(p, `${GOOD_SPEC}run:\n  root: floppy\n`), code: "RUN_INVALID" },
  {
    name: "a workload lock that does not parse",
    file: "w.lock.json",
    write: (p) => writeFileSync(p, '{"schema":"cairn.workload-lock/1"}'),
    code: "WORKLOAD_LOCK_INVALID",
  },
];

for (const c of CASES) {
  test(`cairn run refuses ${c.name} (${c.code}) before the kit, the runs directory or the store`, async () => {
    const { base, run, unchanged } = workspace();
    const input = join(base, c.file);
    c.write(input);
    const r = await run(input);
    assert.equal(r.code, c.code);
    assert.notEqual(r.exit, 0);
    unchanged();
  });
}

test("control: a valid spec passes validation and reaches the kit (here refused as foreign, ROOT_FOREIGN), still writing nothing", async () => {
  const { base, run, unchanged } = workspace();
  const input = join(base, "good.yaml");
  writeFileSync(input, GOOD_SPEC);
  const r = await run(input);
  assert.equal(r.code, "ROOT_FOREIGN");
  unchanged();
});
