/**
 * `cairn branch` on the command line (issue 35 item 3), with one parent
 * record shared by the whole file: a disk-root probe run with two
 * checkpoints is recorded through `cairn run`, then `cairn branch PARENT
 * --at one --scenario TAIL --json` records a branch whose document validates
 * against cairn.cli.branch/1 and names the parent and the checkpoint;
 * `runs show` and `runs list` name where it came from; `cairn replay` of the
 * branch matches. The refusals need no VM and leave no run directory: a
 * checkpoint the parent did not take (named, with the ones it took), a run
 * recorded without checkpoints, a tail file that does not parse (its JSON
 * pointer named); the control of each is the branch above.
 *
 * The parent idles in `sleep 2000` after step 1 (icount sleep=on on a disk
 * root), so checkpoint `one` is taken whatever the load (see
 * tests/vm/checkpoint.test.ts). The branch replaces the parent's steps after
 * it: it writes `echo branched` where the parent wrote `echo two`.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { spawn } from "node:child_process";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { processExit, qemuChildren, whenUnder } from "./fixtures/events.ts";
import { checkDocument } from "../helpers/json-schemas.ts";
import { CHECKPOINTED_SLEEP_MS, writeCheckpointedProbe } from "./fixtures/checkpointed-probe.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";
import { writeRun } from "./fixtures/run-dirs.ts";

const SLEEP_MS = CHECKPOINTED_SLEEP_MS;
let root: string;
let store: string;
let runs: string;
let parent: { run_dir: string; run_id: string };
let branch: Record<string, unknown> & { run_dir: string; run_id: string };
let branchRecord: { code: number; stdout: string; stderr: string };

const common = () => ["--store", store, "--runs", runs, "--kit", TEST_KIT_DIR];
const runDirs = () => readdirSync(runs).filter((n) => !n.startsWith("."));

/** The tail after checkpoint `one` (the parent has written `echo one` and `sleep 2000`; stdin is open). */
const TAIL = [
  "steps:",
  "  - action: write-stdin",
  '    data: "echo branched\\n"',
  "    after: { output: stdout, contains: slept }",
  "  - action: close-stdin",
  "    after: { output: stdout, contains: echo branched }",
  "expect:",
  "  - exit-code: 0",
  `    stdout-lines: [ready, echo one, slept ${SLEEP_MS}, echo branched, eof]`,
  "",
].join("\n");

describe("cairn branch", { skip: VM_SKIP }, () => {
  before(async () => {
    await testKit();
    root = mkdtempSync(join(tmpdir(), "cairn-branch-cli-"));
    store = join(root, "store");
    runs = join(root, "runs");
    writeCheckpointedProbe(root); // spec.json: the probe with checkpoints "one" and "echoed" (fixtures/checkpointed-probe.ts)
    const r = await runCli(["run", join(root, "spec.json"), ...common(), "--json"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    parent = JSON.parse(r.stdout);
    writeFileSync(join(root, "tail.yaml"), TAIL);
    branchRecord = await runCli(["branch", parent.run_dir, "--at", "one", "--scenario", join(root, "tail.yaml"), ...common(), "--json"]);
    if (branchRecord.code === 0) branch = JSON.parse(branchRecord.stdout);
  });

  // the parent's qcow2 and the branch's start hold ~300 MB of guest state: not left behind
  after(() => {
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
  });

  it("records a branch from the parent's checkpoint: its --json validates and names the parent and the checkpoint", () => {
    assert.equal(branchRecord.code, 0, branchRecord.stdout + branchRecord.stderr);
    assert.deepEqual(checkDocument(branchRecord.stdout, "cairn.cli.branch/1").problems, [], branchRecord.stdout);
    assert.equal(branch.status, "passed", branchRecord.stdout);
    const b = branch.branch as { parent: string; checkpoint: { name: string; icount: number } };
    assert.equal(b.parent, parent.run_id);
    assert.equal(b.checkpoint.name, "one");
    const taken = (parent as unknown as { checkpoints: Array<{ name: string; icount: number }> }).checkpoints;
    assert.equal(b.checkpoint.icount, taken.find((c) => c.name === "one")!.icount, "the checkpoint's instruction count, as the parent's record took it");
    assert.equal(branch.parent_dir, parent.run_dir);
    assert.notEqual(branch.run_id, parent.run_id);
    assert.match(String(branch.replay_command), /^cairn replay /);
  });

  it("runs show (text and --json) and runs list name the parent and the checkpoint", async () => {
    assert.ok(branch !== undefined, "the branch was recorded");
    const shown = await runCli(["runs", "show", branch.run_dir, "--json"]);
    assert.equal(shown.code, 0, shown.stderr);
    const { doc, problems } = checkDocument(shown.stdout, "cairn.cli.runs-show/1");
    assert.deepEqual(problems, [], shown.stdout);
    assert.deepEqual(doc.branch, { parent: parent.run_id, checkpoint: "one", icount: (branch.branch as { checkpoint: { icount: number } }).checkpoint.icount });
    assert.equal(doc.check, "unverified", "the branch's files agree with its run.json (start, prefix, tail hashed by runs show)");
    assert.equal((doc.origin as { via: string }).via, "branch");
    const text = await runCli(["runs", "show", branch.run_dir]);
    assert.match(text.stdout, new RegExp(`^branch +of ${parent.run_id} at checkpoint one \\(instruction `, "m"));
    assert.match(text.stdout, new RegExp(`^origin +branch ${parent.run_id}@one`, "m"));
    const parentShown = JSON.parse((await runCli(["runs", "show", parent.run_dir, "--json"])).stdout);
    assert.equal(parentShown.branch, null, "control: a run from boot is no branch");
    const listed = await runCli(["runs", "list", "--runs", runs]);
    const line = listed.stdout.split("\n").find((l) => l.startsWith(branch.run_id));
    assert.match(line ?? "", new RegExp(`branch ${parent.run_id}@one$`), listed.stdout);
    const listedJson = await runCli(["runs", "list", "--runs", runs, "--json"]);
    assert.deepEqual(checkDocument(listedJson.stdout, "cairn.cli.runs-list/1").problems, []);
  });

  it("cairn replay of the branch matches", async () => {
    assert.ok(branch !== undefined, "the branch was recorded");
    const r = await runCli(["replay", branch.run_dir, "--store", store, "--kit", TEST_KIT_DIR, "--json"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const { doc, problems } = checkDocument(r.stdout, "cairn.cli.replay/1");
    assert.deepEqual(problems, [], r.stdout);
    assert.equal(doc.matches, true, r.stdout);
    assert.equal(doc.status, "passed");
  });

  it("a branch whose tail's expectations fail is a failure: exit 1, the error beside the recorded branch (cairn.cli.branch/1), a failure bundle", async () => {
    const failing = join(root, "failing-tail.yaml");
    writeFileSync(failing, TAIL.replace("echo branched, eof", "echo something else, eof"));
    const r = await runCli(["branch", parent.run_dir, "--at", "one", "--scenario", failing, ...common(), "--json"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const { doc, problems } = checkDocument(r.stdout, "cairn.cli.branch/1");
    assert.deepEqual(problems, [], r.stdout);
    const run = doc.run as { status: string; run_dir: string; branch: { parent: string } };
    assert.deepEqual([(doc.error as { code: string }).code, run.status, run.branch.parent], ["ASSERTION_FAILED", "assertions-failed", parent.run_id], r.stdout);
    assert.ok(existsSync(join(run.run_dir, "failure-bundle.json")), "the failed branch keeps its failure bundle");
  });

  it("a branch stopped by --timeout is not recorded, and the error says so without naming a file it removed", async () => {
    const before = readdirSync(runs);
    const waits = join(root, "waiting-tail.yaml");
    // output that never comes: QEMU runs until the host stops it
    writeFileSync(waits, 'steps:\n  - action: write-stdin\n    data: "echo x\\n"\n    after: { output: stdout, contains: never-printed }\n');
    const r = await runCli(["branch", parent.run_dir, "--at", "one", "--scenario", waits, ...common(), "--timeout", "1", "--json"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const e = JSON.parse(r.stdout).error as { code: string; path: string; message: string };
    assert.deepEqual([e.code, e.path], ["RUN_TIMEOUT", "--timeout"], r.stdout);
    assert.match(e.message, /not recorded/);
    assert.deepEqual(readdirSync(runs), before, "no run directory and no staging directory is left");
  });

  it("an interrupted branch (SIGINT while QEMU records it) leaves no run directory, no staging and no QEMU", {
    timeout: 900_000 /* a hang guard only */,
  }, async () => {
    const before = readdirSync(runs);
    const waits = join(root, "waiting-forever.yaml");
    writeFileSync(waits, 'steps:\n  - action: write-stdin\n    data: "echo x\\n"\n    after: { output: stdout, contains: never-printed }\n');
    const cairn = spawn(
      process.execPath,
      [join(PROJECT_ROOT, "bin", "cairn.js"), "branch", parent.run_dir, "--at", "one", "--scenario", waits, ...common(), "--timeout", "600"],
      { cwd: root, env: { ...process.env, CAIRN_HOME: join(root, "home") }, stdio: "ignore" },
    );
    const exited = new Promise<number | null>((r) => cairn.on("exit", (code) => r(code)));
    // the event: QEMU creating its files in the branch's staging directory under the runs directory
    const qemu = await whenUnder(
      runs,
      () => {
        const found = qemuChildren(cairn.pid!);
        return found.length > 0 ? found : undefined;
      },
      "QEMU recording the branch",
    );
    assert.ok(qemu.length > 0, "precondition: QEMU runs under cairn branch");
    assert.notDeepEqual(readdirSync(runs), before, "precondition: the branch is staged in the runs directory");
    cairn.kill("SIGINT");
    await exited;
    const gone = await Promise.all(qemu.map((pid) => processExit(pid, 120_000)));
    assert.deepEqual(
      qemu.filter((_, i) => !gone[i]),
      [],
      "QEMU outlived cairn branch",
    );
    assert.deepEqual(readdirSync(runs), before, "no run directory and no staging directory is left");
  });

  it("refuses a checkpoint the parent did not take, naming it and the ones it took (control: `one` above)", async () => {
    const before = runDirs();
    const r = await runCli(["branch", parent.run_dir, "--at", "nope", "--scenario", join(root, "tail.yaml"), ...common(), "--json"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const { doc, problems } = checkDocument(r.stdout, "cairn.cli.error/1");
    assert.deepEqual(problems, []);
    const e = doc.error as { code: string; path: string; message: string };
    assert.deepEqual([e.code, e.path], ["RUN_INVALID", "--at"]);
    assert.match(e.message, /"nope"/);
    assert.match(e.message, /one, echoed/);
    assert.deepEqual(runDirs(), before, "no run directory is left");
    // a name is echoed bounded and quoted: 20,000 characters with terminal escapes do not reach the terminal as they are
    const wild = "\u001b[2J\u001b]0;owned\u0007".repeat(2000);
    const w = await runCli(["branch", parent.run_dir, "--at", wild, "--scenario", join(root, "tail.yaml"), ...common()]);
    assert.equal(w.code, 1, w.stderr);
    assert.doesNotMatch(w.stderr, /\u001b|\u0007/, "no raw escape on stderr");
    assert.ok(w.stderr.length < 1000, `the message is bounded: ${w.stderr.length} characters`);
  });

  it("--serve reaches the library: refused for a parent that served nothing (control: the branch above, without it)", async () => {
    const r = await runCli(["branch", parent.run_dir, "--at", "one", "--scenario", join(root, "tail.yaml"), "--serve", root, ...common(), "--json"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const e = JSON.parse(r.stdout).error as { code: string; path: string };
    assert.deepEqual([e.code, e.path], ["RUN_INVALID", "--serve"], r.stdout);
  });

  it("refuses a run recorded without checkpoints (control: the parent above)", async () => {
    const plain = join(root, "plain", "20261201T000000Z-0000dddd");
    writeRun(plain, basename(plain), true);
    const r = await runCli(["branch", plain, "--at", "one", "--scenario", join(root, "tail.yaml"), ...common(), "--json"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const e = JSON.parse(r.stdout).error as { code: string; path: string };
    assert.deepEqual([e.code, e.path], ["RUN_INVALID", "/checkpoints"], r.stdout);
  });

  it("refuses a tail that does not parse, naming the pointer (control: the tail above)", async () => {
    const before = runDirs();
    const bad = join(root, "bad-tail.yaml");
    writeFileSync(bad, "steps:\n  - action: frobnicate\n");
    const r = await runCli(["branch", parent.run_dir, "--at", "one", "--scenario", bad, ...common(), "--json"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const e = JSON.parse(r.stdout).error as { code: string; issues?: Array<{ path: string }>; path?: string };
    assert.equal(e.code, "RUN_INVALID", r.stdout);
    const paths = [e.path, ...(e.issues ?? []).map((i) => i.path)];
    assert.ok(paths.includes("/steps/0/action"), r.stdout);
    assert.deepEqual(runDirs(), before, "no run directory is left");
    // a tail that is not even YAML: the refusal names the file (it said "input")
    const broken = join(root, "broken-tail.yaml");
    writeFileSync(broken, "steps: [\n");
    const y = await runCli(["branch", parent.run_dir, "--at", "one", "--scenario", broken, ...common(), "--json"]);
    assert.equal(y.code, 1, y.stdout + y.stderr);
    assert.ok(String(JSON.parse(y.stdout).error.message).includes(broken), y.stdout);
    assert.deepEqual(runDirs(), before, "no run directory is left");
  });
});
