/**
 * What `cairn run` prints lists the checkpoints the record took (issue 35,
 * follow-up to item 1): name, the event each follows and the guest
 * instruction count, in the --json document (valid against its schema, the
 * success and the failure shape) and in the text. The recorded run is a run
 * manifest written as `cairn run` writes it (tests/vm/fixtures/run-dirs.ts);
 * tests/vm/checkpoint.test.ts prints the same from a real record.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { runOutputModel, runOutputText } from "../../src/cli/run-output.ts";
import { runStatusFailure, type RecordResult } from "../../src/vm/index.ts";
import { checkDocument } from "../helpers/json-schemas.ts";
import { assertionsOf, d, EVENTS, manifest } from "../vm/fixtures/run-dirs.ts";

const TAG = "cairn.cli.run/1";
const CHECKPOINTS = {
  file: { sha256: d("8"), size: 196_624_384 },
  taken: [
    { name: "one", after: { step: 1 }, icount: 1_234_567 },
    { name: "echoed", after: { output: "stdout" as const, contains: 'echo "one"' }, icount: 2_345_678 },
  ],
};

function recorded(checkpoints?: typeof CHECKPOINTS) {
  const m = { ...manifest("20261201-000000-abcdef", true), ...(checkpoints !== undefined ? { checkpoints } : {}) };
  return {
    runDir: "/runs/20261201-000000-abcdef",
    manifest: m,
    evaluation: { events: EVENTS, assertions: assertionsOf(true) },
    replayCommand: "cairn replay /runs/20261201-000000-abcdef",
    durations: { assembleMs: 1, imageMs: 2, qemuMs: 3456 },
  } as unknown as RecordResult;
}

const valid = (doc: object) => checkDocument(JSON.stringify(doc), TAG).problems;

describe("cairn run lists the checkpoints taken", () => {
  it("in --json: name, event and instruction count, in the order taken, valid against the schema (success and failure shapes)", () => {
    const model = runOutputModel(recorded(CHECKPOINTS));
    assert.deepEqual(model.checkpoints, [
      { name: "one", after: { step: 1 }, icount: 1_234_567 },
      { name: "echoed", after: { output: "stdout", contains: 'echo "one"' }, icount: 2_345_678 },
    ]);
    assert.deepEqual(valid({ schema: TAG, ...model }), []);
    const failure = runStatusFailure("assertions-failed", model.run_dir);
    assert.ok(failure !== undefined);
    assert.deepEqual(valid({ schema: TAG, error: failure.toJSON(), run: model }), []);
    // the schema checks what it lists: a count that is not one, an unknown event key
    const bad = { ...model, checkpoints: [{ name: "one", after: { step: 1, extra: 2 }, icount: -1 }] };
    assert.notDeepEqual(valid({ schema: TAG, ...bad }), []);
  });

  it("in the text: one line per checkpoint with its event and instruction count", () => {
    const text = runOutputText(recorded(CHECKPOINTS));
    assert.match(text, /^ckpt {5}one {2}after step 1, at instruction 1,234,567$/m, text);
    assert.match(text, /^ {9}echoed {2}after stdout contains "echo \\"one\\"", at instruction 2,345,678$/m, text);
  });

  it("control: a run without checkpoints has no such key or line, and its document is valid", () => {
    const model = runOutputModel(recorded());
    assert.equal("checkpoints" in model, false);
    assert.deepEqual(valid({ schema: TAG, ...model }), []);
    assert.doesNotMatch(runOutputText(recorded()), /ckpt|instruction/);
  });
});

/** A branch's record (`cairn branch`): run.json's `branch` names the parent and the checkpoint. */
function branched() {
  const r = recorded() as unknown as { manifest: Record<string, unknown> };
  const file = { sha256: d("8"), size: 4096 };
  r.manifest = {
    ...r.manifest,
    branch: {
      parent: { run_id: "20261130-000000-parent", outcome: d("9") },
      checkpoint: { name: "one", icount: 1_234_567, file },
      start: file,
      prefix: file,
      scenario: file,
    },
  };
  return r as unknown as RecordResult;
}

describe("cairn branch prints the parent and the checkpoint", () => {
  const BRANCH_TAG = "cairn.cli.branch/1";
  const validBranch = (doc: object) => checkDocument(JSON.stringify(doc), BRANCH_TAG).problems;

  it("in --json (cairn.cli.branch/1, success and failure shapes) and in the text; the schema requires them (control)", () => {
    const model = { ...runOutputModel(branched()), parent_dir: "/runs/20261130-000000-parent" };
    assert.deepEqual(model.branch, { parent: "20261130-000000-parent", checkpoint: { name: "one", icount: 1_234_567 } });
    assert.deepEqual(validBranch({ schema: BRANCH_TAG, ...model }), []);
    const failure = runStatusFailure("assertions-failed", model.run_dir);
    assert.ok(failure !== undefined);
    assert.deepEqual(validBranch({ schema: BRANCH_TAG, error: failure.toJSON(), run: model }), []);
    const { branch: _, ...withoutBranch } = model;
    assert.notDeepEqual(validBranch({ schema: BRANCH_TAG, ...withoutBranch }), [], "control: a branch document without its parent is refused");
    assert.match(runOutputText(branched()), /^branch {3}of 20261130-000000-parent at checkpoint one \(instruction 1,234,567\)$/m);
    assert.doesNotMatch(runOutputText(recorded()), /^branch/m, "control: a run from boot has no branch line");
  });
});
