/**
 * Checkpoints while recording and branches from them (issue 35 items 1-3),
 * one parent record shared by the file: a disk-root probe run that declares
 * two checkpoints, "one" after step 1 (a write-stdin: the agent holds once
 * the write's last byte is accepted, no later step run) and "echoed" once
 * stdout shows "echo one".
 *
 * - The record takes both with `savevm` into checkpoints.qcow2 while QEMU
 *   records; run.json names each with its event and instruction count,
 *   which are the counts QEMU's own snapshot table holds (`qemu-img snapshot
 *   -l`, an independent reader); the qcow2 is private and matches the digest
 *   run.json records; the replay from boot (the host's answers at the holds
 *   come from the log, nothing connected) matches the record.
 * - A branch at "one" with another tail runs that tail, names its parent and
 *   checkpoint, keeps only its start snapshot, and replays twice matching.
 * - A branch at "one" whose tail is the parent's own remaining steps gives
 *   the parent's events, assertions and outcome exactly: a branch differs
 *   from its parent only in what it declares.
 * - Refused before QEMU starts, the kit not even asked for, no run
 *   directory left: a checkpoint the parent did not take, a run recorded
 *   without checkpoints, a parent whose qcow2 or protocol stream is not its
 *   run.json's; a tail whose stdin offset does not continue the parent's or
 *   that takes the network down in a run without one (controls: the real
 *   name and tail go on to ask for the kit).
 * - A branch's replay refuses a start snapshot, prefix or tail file that is
 *   not the one run.json records, naming the field (control: the branch's
 *   own replays).
 *
 * The run takes its root from a disk (`run.root: disk`), as every real image
 * does, and icount runs with `sleep=on` (a run with checkpoints always
 * does): the probe's `sleep 2000` after step 1 is two seconds of wall time
 * in which the guest idles, and the host stops it for both checkpoints
 * inside that window whatever the machine's load.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { appendFileSync, copyFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runOutputModel, runOutputText } from "../../src/cli/run-output.ts";
import { CairnError } from "../../src/core/index.ts";
import { BRANCH_FILES, BRANCH_START_SNAPSHOT } from "../../src/vm/branch-manifest.ts";
import { recordBranch, type BranchOptions } from "../../src/vm/branch.ts";
import { checkCheckpointFile } from "../../src/vm/checkpoint-file.ts";
import { CHECKPOINT_FILE } from "../../src/vm/checkpoint-take.ts";
import { recordRun, replayRun, type Kit } from "../../src/vm/index.ts";
import type { RecordResult } from "../../src/vm/record.ts";
import { CHECKPOINTED_SLEEP_MS, writeCheckpointedProbe } from "./fixtures/checkpointed-probe.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";

const SLEEP_MS = CHECKPOINTED_SLEEP_MS;
let kit: Kit;
let rec: RecordResult;
/** The record above, as the branches' parent. */
let parent: RecordResult;
let storeDir: string;
let root: string;
const lines: string[] = [];

function tail(name: string, text: string): string {
  const f = join(root, name);
  writeFileSync(f, text);
  return f;
}

function branchOpts(over: Partial<BranchOptions>): BranchOptions {
  return { runDir: parent.runDir, checkpoint: "one", scenario: "", storeDir, runsDir: join(root, "runs"), kit, cairnVersion: "test", ...over };
}

/** The run directories in `runs` (not its marker or staging). */
function runDirs(runs: string): string[] {
  return existsSync(runs) ? readdirSync(runs).filter((n) => /^\d{8}T/.test(n)) : [];
}

describe("checkpoints while recording, and branches from them", { skip: VM_SKIP }, () => {
  before(async () => {
    kit = await testKit();
    root = mkdtempSync(join(tmpdir(), "cairn-ckpt-"));
    writeCheckpointedProbe(root); // spec.json: the probe with checkpoints "one" and "echoed" (fixtures/checkpointed-probe.ts)
    storeDir = join(root, "store");
    rec = await recordRun({ input: join(root, "spec.json"), storeDir, runsDir: join(root, "runs"), kit, cairnVersion: "test", log: (l) => lines.push(l) });
    parent = rec;
  });

  // the qcow2 holds about 200 MB of guest state: not left behind in the temp dir
  after(() => {
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
  });

  it("records each checkpoint with its event and instruction count, as QEMU's snapshot table holds them", (t) => {
    assert.equal(rec.manifest.status, "passed", JSON.stringify(rec.evaluation.assertions));
    assert.notEqual(rec.manifest.vm.root_disk, null, "a disk-root run (blkreplay, icount sleep=on)");
    const ck = rec.manifest.checkpoints;
    assert.ok(ck !== undefined, lines.join("\n"));
    const said = lines.filter((l) => l.startsWith("checkpoint")).join("\n");
    assert.deepEqual(
      ck.taken.map((c) => [c.name, c.after]),
      [
        ["one", { step: 1 }],
        ["echoed", { output: "stdout", contains: "echo one" }],
      ],
      said,
    );
    assert.ok(ck.taken[0]!.icount > 0 && ck.taken[1]!.icount >= ck.taken[0]!.icount, JSON.stringify(ck.taken));
    const file = join(rec.runDir, CHECKPOINT_FILE);
    assert.equal(statSync(file).mode & 0o777, 0o600, "the snapshots hold the guest's RAM: private");
    assert.equal(checkCheckpointFile(rec.runDir, rec.manifest), file);
    // qemu-img reads the qcow2's own snapshot table: TAG, VM SIZE, DATE, VM CLOCK, ICOUNT
    const table = execFileSync("qemu-img", ["snapshot", "-l", file], { encoding: "utf8" });
    for (const c of ck.taken) assert.match(table, new RegExp(`^\\d+\\s+${c.name}\\s.*\\s${c.icount}\\s*$`, "m"), table);
    // cairn run prints them: the --json summary and its text list each checkpoint taken (tests/cli/run-output.test.ts)
    assert.deepEqual(runOutputModel(rec).checkpoints, ck.taken);
    for (const c of ck.taken) assert.match(runOutputText(rec), new RegExp(` ${c.name}  after .*, at instruction ${c.icount.toLocaleString("en-US")}$`, "m"));
    t.diagnostic(
      `record qemu ${Math.round(rec.durations.qemuMs)} ms; qcow2 ${ck.file.size} bytes; ${lines.filter((l) => l.startsWith("checkpoint")).join("; ")}`,
    );
  });

  it("the replay from boot of a run with checkpoints is unchanged and matches", async (t) => {
    const r = await replayRun({ runDir: rec.runDir, storeDir, kit });
    assert.equal(r.verdict.matches, true);
    assert.equal(r.evaluation.outcome, rec.manifest.outcome);
    assert.ok(r.streams.get(1)!.stdout.equals(rec.streams.get(1)!.stdout));
    t.diagnostic(`replay qemu ${Math.round(r.qemuMs)} ms`);
  });

  it("runs its own tail from the checkpoint, names its parent and checkpoint, keeps only its start, and replays twice matching", async (t) => {
    const file = tail(
      "three.yaml",
      `steps:\n  - action: write-stdin\n    data: "echo three\\n"\n    after: {output: stdout, contains: slept}\n  - action: close-stdin\n    after: {output: stdout, contains: "echo three"}\nexpect:\n  - stdout-lines: [ready, echo one, slept ${SLEEP_MS}, echo three, eof]\n`,
    );
    const b = await recordBranch(branchOpts({ scenario: file }));
    assert.equal(b.manifest.status, "passed", JSON.stringify(b.evaluation.assertions));
    assert.equal(b.streams.get(1)!.stdout.toString(), `ready\necho one\nslept ${SLEEP_MS}\necho three\neof\n`);
    // the stream continues the parent's: its first events are the parent's up to the hold, then the tail's write at offset 20
    assert.deepEqual(b.evaluation.events.slice(0, 3), [
      { invocation: 1, event: "start" },
      { invocation: 1, event: "input-accepted", offset: 0, length: 20 },
      { invocation: 1, event: "input-accepted", offset: 20, length: 11 },
    ]);
    const one = parent.manifest.checkpoints!.taken[0]!;
    const br = b.manifest.branch!;
    assert.deepEqual(br.parent, { run_id: parent.manifest.run_id, outcome: parent.manifest.outcome });
    assert.deepEqual(br.checkpoint, { name: "one", icount: one.icount, file: parent.manifest.checkpoints!.file });
    assert.equal(b.manifest.vm_digest, parent.manifest.vm_digest, "the parent's VM, exactly");
    const start = join(b.runDir, BRANCH_FILES.start);
    for (const f of Object.values(BRANCH_FILES)) assert.equal(statSync(join(b.runDir, f)).mode & 0o777, 0o600, f);
    const table = execFileSync("qemu-img", ["snapshot", "-l", start], { encoding: "utf8" });
    assert.deepEqual(
      [...table.matchAll(/^\d+\s+(\S+)\s/gm)].map((m) => m[1]),
      [BRANCH_START_SNAPSHOT],
      table,
    );
    assert.match(table, new RegExp(`\\s${one.icount}\\s*$`, "m"), "the start is the checkpoint's instruction");
    for (let i = 0; i < 2; i++) {
      const r = await replayRun({ runDir: b.runDir, storeDir, kit });
      assert.equal(r.verdict.matches, true);
      assert.equal(r.evaluation.outcome, b.manifest.outcome);
      assert.ok(r.streams.get(1)!.stdout.equals(b.streams.get(1)!.stdout));
      t.diagnostic(`replay ${i + 1}: qemu ${Math.round(r.qemuMs)} ms`);
    }
    t.diagnostic(`branch record qemu ${Math.round(b.durations.qemuMs)} ms; start ${statSync(start).size} bytes`);
  });

  it("a tail that is the parent's own remaining steps gives the parent's events, assertions and outcome exactly", async () => {
    const file = tail(
      "same.yaml",
      `steps:\n  - action: write-stdin\n    data: "echo two\\n"\n    after: {output: stdout, contains: slept}\n  - action: close-stdin\n    after: {output: stdout, contains: "echo two"}\n`,
    );
    const b = await recordBranch(branchOpts({ scenario: file }));
    assert.deepEqual(b.evaluation.events, parent.evaluation.events);
    assert.deepEqual(b.evaluation.assertions, parent.evaluation.assertions, "no expect in the tail: the parent's expectations");
    assert.equal(b.manifest.outcome, parent.manifest.outcome);
    assert.ok(b.streams.get(1)!.stdout.equals(parent.streams.get(1)!.stdout));
  });

  it("refuses before QEMU starts, naming it: a checkpoint not taken, a run without checkpoints, a parent's qcow2 or stream not its run.json's, a tail that does not continue the parent", async () => {
    const good = tail("good.yaml", "steps:\n  - action: close-stdin\n");
    const runs = join(root, "refused-runs");
    const tries = async (over: Partial<BranchOptions>, path: string, message: RegExp) => {
      let asked = false;
      const opts = branchOpts({
        scenario: good,
        runsDir: runs,
        kit: () => {
          asked = true;
          return Promise.reject(new Error("no kit in this test"));
        },
        ...over,
      });
      await assert.rejects(recordBranch(opts), (e: unknown) => {
        assert.ok(e instanceof CairnError, String(e));
        const at = e.path ?? e.issues.map((i) => i.path).join(" ");
        assert.ok(at.includes(path), `${at}: ${e.message}`);
        assert.match(`${e.message} ${e.issues.map((i) => i.message).join(" ")}`, message);
        return true;
      });
      assert.equal(asked, false, "the kit is not asked for");
      assert.deepEqual(runDirs(runs), [], "no run directory");
    };
    await tries({ checkpoint: "later" }, "--at", /took no checkpoint "later"; it took one, echoed/);
    // control: the real name and tail get as far as asking for the kit
    let asked = false;
    await assert.rejects(
      recordBranch(
        branchOpts({
          scenario: good,
          runsDir: runs,
          kit: () => {
            asked = true;
            return Promise.reject(new Error("no kit in this test"));
          },
        }),
      ),
      /no kit in this test/,
    );
    assert.equal(asked, true);
    // a copy of the parent to spoil (the checkpoint file is copied sparse-unaware: ~190 MB)
    const copy = join(root, "copies", parent.manifest.run_id);
    cpSync(parent.runDir, copy, { recursive: true });
    const json = join(copy, "run.json");
    const m = JSON.parse(readFileSync(json, "utf8"));
    writeFileSync(json, JSON.stringify({ ...m, checkpoints: undefined }));
    await tries({ runDir: copy }, "/checkpoints", /recorded without checkpoints/);
    writeFileSync(json, JSON.stringify(m));
    appendFileSync(join(copy, "checkpoints.qcow2"), "x");
    await tries({ runDir: copy }, "/checkpoints/file/size", /another size/);
    rmSync(join(copy, "checkpoints.qcow2"));
    copyFileSync(join(parent.runDir, "checkpoints.qcow2"), join(copy, "checkpoints.qcow2"));
    rmSync(join(copy, "protocol.bin"));
    await tries({ runDir: copy }, "/protocol.bin", /protocol stream/);
    // tails checked after the parent's closure (the kit is asked, then refused before QEMU): shown by their own errors
    const offset = tail("offset.yaml", 'steps:\n  - action: write-stdin\n    data: "x\\n"\n    offset: 0\n');
    await assert.rejects(recordBranch(branchOpts({ scenario: offset, runsDir: runs })), (e: unknown) => {
      assert.ok(e instanceof CairnError && e.issues.some((i) => i.path === "/steps/0/offset" && /expected 20/.test(i.message)), String(e));
      return true;
    });
    const net = tail("net.yaml", "steps:\n  - action: network-down\n");
    await assert.rejects(recordBranch(branchOpts({ scenario: net, runsDir: runs })), (e: unknown) => {
      assert.ok(e instanceof CairnError && e.issues.some((i) => i.path === "/steps/0"), String(e));
      return true;
    });
    assert.deepEqual(runDirs(runs), [], "no run directory");
  });

  it("a branch's replay refuses a start, prefix or tail file that is not run.json's, naming the field", async () => {
    const file = tail(
      "four.yaml",
      'steps:\n  - action: write-stdin\n    data: "echo four\\n"\n  - action: close-stdin\n    after: {output: stdout, contains: "echo four"}\n',
    );
    const b = await recordBranch(branchOpts({ checkpoint: "echoed", scenario: file }));
    assert.equal(b.manifest.status, "assertions-failed", "no expect in the tail: the parent's, which names echo two");
    assert.equal(b.streams.get(1)!.stdout.toString(), `ready\necho one\nslept ${SLEEP_MS}\necho four\neof\n`);
    const spoil = async (name: string, how: (f: string) => void, path: string) => {
      const copy = join(root, "spoilt", `${b.manifest.run_id}-${name}`);
      cpSync(b.runDir, copy, { recursive: true });
      how(join(copy, name));
      await assert.rejects(replayRun({ runDir: copy, storeDir, kit }), (e: unknown) => {
        assert.ok(e instanceof CairnError && e.code === "REPLAY_MISMATCH" && e.path === path, `${String(e)} ${(e as CairnError).path}`);
        return true;
      });
      assert.equal(existsSync(join(copy, "replays")), false, "nothing launched");
      rmSync(copy, { recursive: true, force: true });
    };
    const flip = (f: string) => {
      const bytes = readFileSync(f);
      bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 1, bytes.length - 1);
      writeFileSync(f, bytes);
    };
    await spoil(BRANCH_FILES.prefix, flip, "/branch/prefix/sha256");
    await spoil(BRANCH_FILES.scenario, flip, "/branch/scenario/sha256");
    await spoil(BRANCH_FILES.start, (f) => appendFileSync(f, "x"), "/branch/start/size");
    await spoil(BRANCH_FILES.start, (f) => rmSync(f), "/branch/start/sha256");
  });
});
