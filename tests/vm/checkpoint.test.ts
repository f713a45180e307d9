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
 * The flood after step 1 keeps the guest busy for a while in host time, so
 * the host has stopped it for both checkpoints before the workload ends
 * (with nothing to do, a guest under icount sleep=off races through its
 * virtual time, and a checkpoint after the run's last event could be missed,
 * which the run reports as missed, never as taken).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { checkCheckpointFile } from "../../src/vm/checkpoint-file.ts";
import { CHECKPOINT_FILE } from "../../src/vm/checkpoint-take.ts";
import { recordRun, replayRun, type Kit } from "../../src/vm/index.ts";
import type { RecordResult } from "../../src/vm/record.ts";
import { probePath } from "./fixtures/programs.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";

const FLOOD = 4_000_000;
let kit: Kit;
let rec: RecordResult;
let storeDir: string;
const lines: string[] = [];

describe("checkpoints while recording", { skip: VM_SKIP }, () => {
  before(async () => {
    kit = await testKit();
    const root = mkdtempSync(join(tmpdir(), "cairn-ckpt-"));
    copyFileSync(probePath("static"), join(root, "probe"));
    const spec = {
      schema: "cairn.workload/1",
      source: { binary: { path: "probe", user: "1000:1000" } },
      run: {
        steps: [
          { action: "start" },
          { action: "write-stdin", data: "echo one\n", after: { output: "stdout", contains: "ready" } },
          { action: "write-stdin", data: `flood ${FLOOD}\necho two\n`, after: { output: "stdout", contains: "echo one" } },
          { action: "close-stdin", after: { output: "stdout", contains: "echo two" } },
        ],
        expect: [{ "exit-code": 0, "stdout-includes": ["echo one", "flood done", "echo two"] }],
        checkpoints: [
          { name: "one", after: { step: 1 } },
          { name: "flooding", after: { output: "stdout", contains: "xxxxxxxxxxxxxxxx" } },
        ],
      },
    };
    writeFileSync(join(root, "spec.json"), JSON.stringify(spec));
    storeDir = join(root, "store");
    rec = await recordRun({ input: join(root, "spec.json"), storeDir, runsDir: join(root, "runs"), kit, cairnVersion: "test", log: (l) => lines.push(l) });
  });

  it("records each checkpoint with its event and instruction count, as QEMU's snapshot table holds them", (t) => {
    assert.equal(rec.manifest.status, "passed", JSON.stringify(rec.evaluation.assertions));
    const ck = rec.manifest.checkpoints;
    assert.ok(ck !== undefined, lines.join("\n"));
    assert.deepEqual(
      ck.taken.map((c) => [c.name, c.after]),
      [
        ["one", { step: 1 }],
        ["flooding", { output: "stdout", contains: "xxxxxxxxxxxxxxxx" }],
      ],
    );
    assert.ok(ck.taken[0]!.icount > 0 && ck.taken[1]!.icount > ck.taken[0]!.icount, JSON.stringify(ck.taken));
    const file = join(rec.runDir, CHECKPOINT_FILE);
    assert.equal(statSync(file).mode & 0o777, 0o600, "the snapshots hold the guest's RAM: private");
    assert.equal(checkCheckpointFile(rec.runDir, rec.manifest), file);
    // qemu-img reads the qcow2's own snapshot table: TAG, VM SIZE, DATE, VM CLOCK, ICOUNT
    const table = execFileSync("qemu-img", ["snapshot", "-l", file], { encoding: "utf8" });
    for (const c of ck.taken) assert.match(table, new RegExp(`^\\d+\\s+${c.name}\\s.*\\s${c.icount}\\s*$`, "m"), table);
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
