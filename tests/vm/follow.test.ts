/**
 * `cairn run --follow` and the streams of a replay (issue 9, item 4).
 *
 * --follow only reads the protocol file QEMU writes, so it cannot change the
 * recording (docs/runs.md says why). Two records of one run differ in their
 * replay logs anyway (QEMU logs host-side timing), so the test compares what
 * the recording is judged by: the VM and workload identities, the exact
 * protocol stream the guest wrote, the events and the outcome, with and
 * without --follow; the followed run replays and matches; what --follow
 * printed is exactly the recorded stdout.
 *
 * A replay writes the same streams as the record into its replay directory
 * and prints them after its summary; for a run whose assertions failed, the
 * replay (which matches) shows the failure's output too.
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { runCli, runCliOnTerminal } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { buildProgram, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";

const OUTPUT = "hello from /bin/app world\ncwd=/home/app uid=1000 gid=1000\n";

interface Summary {
  run_dir: string;
  outcome: string;
  vm: string;
  workload: string;
  status: string;
}

let dir: string;
let env: NodeJS.ProcessEnv;

function json(stdout: string): Summary {
  return JSON.parse(stdout) as Summary;
}

describe("run --follow and replay streams", { skip: VM_SKIP || GCC_SKIP }, () => {
  before(async () => {
    await testKit();
    dir = mkdtempSync(join(tmpdir(), "cairn-follow-"));
    copyFileSync(join(PROJECT_ROOT, "examples", "workload", "hello.yaml"), join(dir, "hello.yaml"));
    copyFileSync(buildProgram("static"), join(dir, "hello"));
    env = { ...process.env, CAIRN_HOME: join(dir, "home"), CAIRN_KIT: TEST_KIT_DIR };
  });

  it("--follow prints the output live and records the same run as without it; the followed run replays; on a terminal both draw the seconds QEMU ran", async () => {
    const plainRun = await runCliOnTerminal(["run", join(dir, "hello.yaml"), "--json", "--quiet"], env);
    assert.deepEqual(plainRun.frames, [], "--quiet: no progress on a terminal");
    const plain = json(plainRun.stdout);
    const followed = await runCliOnTerminal(["run", join(dir, "hello.yaml"), "--follow"], env);
    assert.equal(followed.code, 0, followed.stderr);
    // progress (issue 36, item 3): phase record in whole seconds, from 0, never going down, on stderr only
    const seconds = (frames: string[], phase: string) =>
      frames.filter((f) => f.startsWith(`${phase} `)).map((f) => Number(new RegExp(`^${phase} (\\d+) seconds$`).exec(f)?.[1]));
    const recorded = seconds(followed.frames, "record");
    assert.ok(recorded.length >= 2 && recorded[0] === 0, JSON.stringify(followed.frames));
    assert.deepEqual(
      recorded,
      [...recorded].sort((a, b) => a - b),
    );
    assert.ok(!/\x1b|\r/.test(followed.stdout), "no bar on stdout");
    // the live output comes before the summary, exactly the recorded bytes, and is not printed a second time
    assert.ok(followed.stdout.startsWith(OUTPUT), followed.stdout);
    assert.ok(!followed.stdout.includes("--- invocation 1 stdout"), followed.stdout);
    const runDir = /^dir\s+(\S+)$/m.exec(followed.stdout)?.[1] ?? "";
    const m = JSON.parse(readFileSync(join(runDir, "run.json"), "utf8")) as { vm_digest: string; outcome: string; workload: { workload: string } };
    assert.equal(m.vm_digest, plain.vm);
    assert.equal(m.workload.workload, plain.workload);
    assert.equal(m.outcome, plain.outcome);
    assert.ok(readFileSync(join(runDir, "protocol.bin")).equals(readFileSync(join(plain.run_dir, "protocol.bin"))), "the guest wrote the same stream");
    assert.equal(readFileSync(join(runDir, "events.json"), "utf8"), readFileSync(join(plain.run_dir, "events.json"), "utf8"));
    assert.equal(readFileSync(join(runDir, "streams", "1.stdout"), "utf8"), OUTPUT);
    // control for issue 31 case 13: the replay of a record that did not fail exits 0 and says so
    const replay = await runCliOnTerminal(["replay", runDir], env);
    assert.equal(replay.code, 0, replay.stderr);
    assert.match(replay.stdout, /matches the record; the recorded run passed/);
    const replayed = seconds(replay.frames, "replay");
    assert.ok(replayed.length >= 2 && replayed[0] === 0 && replayed.every(Number.isSafeInteger), JSON.stringify(replay.frames));
  });

  it("control: --follow with --json is a usage error", async () => {
    const r = await runCli(["run", join(dir, "hello.yaml"), "--follow", "--json"], env);
    assert.equal(r.code, 2);
  });

  it("a replay writes and prints the workload's streams, for a failed run too", async () => {
    const failing = join(dir, "failing.yaml");
    writeFileSync(
      failing,
      `${readFileSync(join(dir, "hello.yaml"), "utf8")}run:\n  steps: [{ action: start }, { action: close-stdin }]\n  expect: [{ exit-code: 0, stdout-includes: ["goodbye"] }]\n`,
    );
    const rec = await runCli(["run", failing, "--json"], env);
    const s = json(rec.stdout) as Summary & { run: Summary };
    assert.equal(s.run.status, "assertions-failed");
    const runDir = s.run.run_dir;
    // the replay matches a record that failed: both said, exit 1 (issue 31 case 13), the output shown all the same
    const replay = await runCli(["replay", runDir], env);
    assert.equal(replay.code, 1, replay.stderr);
    assert.match(replay.stdout, /matches the record; the recorded run failed \(assertions-failed\): exit 0; 1 of 2 assertions failed \(stdout-includes\)/);
    assert.match(replay.stderr, /RECORD_FAILED/);
    // the failure's output, as `cairn run` prints it, after the summary
    assert.match(replay.stdout, /\n--- invocation 1 stdout \(\d+ bytes\) ---\nhello from \/bin\/app world\n/);
    const replayDir = /\((\S+\/replays\/\d+)\)$/m.exec(replay.stdout)?.[1] ?? "";
    assert.ok(readFileSync(join(replayDir, "streams", "1.stdout")).equals(readFileSync(join(runDir, "streams", "1.stdout"))));
    // control: --json prints one document, no streams
    const quiet = await runCli(["replay", runDir, "--json"], env);
    assert.doesNotThrow(() => JSON.parse(quiet.stdout));
  });
});
