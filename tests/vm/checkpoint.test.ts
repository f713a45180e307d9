/**
 * Checkpoints while recording (issue 35 item 1), one record and one replay:
 * a run whose spec declares two checkpoints (after step 1; after its stdout
 * shows the flood) records them with `savevm` into checkpoints.qcow2 while
 * QEMU records; run.json names each with its event and instruction count,
 * which are the counts QEMU's own snapshot table holds (`qemu-img snapshot
 * -l`, an independent reader); the qcow2 is private and matches the digest
 * run.json records; and the replay from boot, which runs the plain command
 * line, matches the record.
 *
 * The run takes its root from a disk (`run.root: disk`), as every real image
 * does, so QEMU's blkreplay drive is there when `savevm` runs, and icount
 * runs with `sleep=on`: the probe's `sleep 2000` after step 1 is then two
 * seconds of wall time in which the guest idles, and the host stops it for
 * both checkpoints inside that window whatever the machine's load (under
 * `sleep=off` an idle guest races through its virtual time, and a checkpoint
 * could land after the workload ended: it would be reported as missed,
 * never as taken, and this test would fail).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runOutputModel, runOutputText } from "../../src/cli/run-output.ts";
import { checkCheckpointFile } from "../../src/vm/checkpoint-file.ts";
import { CHECKPOINT_FILE } from "../../src/vm/checkpoint-take.ts";
import { recordRun, replayRun, type Kit } from "../../src/vm/index.ts";
import type { RecordResult } from "../../src/vm/record.ts";
import { probePath } from "./fixtures/programs.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";

const SLEEP_MS = 2000;
let kit: Kit;
let rec: RecordResult;
let storeDir: string;
let root: string;
const lines: string[] = [];

describe("checkpoints while recording", { skip: VM_SKIP }, () => {
  before(async () => {
    kit = await testKit();
    root = mkdtempSync(join(tmpdir(), "cairn-ckpt-"));
    copyFileSync(probePath("static"), join(root, "probe"));
    const spec = {
      schema: "cairn.workload/1",
      source: { binary: { path: "probe", user: "1000:1000" } },
      run: {
        root: "disk",
        steps: [
          { action: "start" },
          { action: "write-stdin", data: `echo one\nsleep ${SLEEP_MS}\n`, after: { output: "stdout", contains: "ready" } },
          { action: "write-stdin", data: "echo two\n", after: { output: "stdout", contains: "slept" } },
          { action: "close-stdin", after: { output: "stdout", contains: "echo two" } },
        ],
        expect: [{ "exit-code": 0, "stdout-lines": ["ready", "echo one", `slept ${SLEEP_MS}`, "echo two", "eof"] }],
        checkpoints: [
          { name: "one", after: { step: 1 } },
          { name: "echoed", after: { output: "stdout", contains: "echo one" } },
        ],
      },
    };
    writeFileSync(join(root, "spec.json"), JSON.stringify(spec));
    storeDir = join(root, "store");
    rec = await recordRun({ input: join(root, "spec.json"), storeDir, runsDir: join(root, "runs"), kit, cairnVersion: "test", log: (l) => lines.push(l) });
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
});
