/**
 * `run.checkpoints` without a VM (issue 35 items 1 and 3): the spec's
 * checkpoints parse strictly and are refused, naming the field, before
 * anything is set up (a step that does not exist, a network step, a name
 * twice, too many); a run without them keeps every guest identity, while a
 * run with them carries holds in its inputs and an input channel in its VM
 * identity; run.json's `checkpoints` parses strictly; a tampered
 * checkpoints.qcow2 is refused by size and digest. The record with
 * checkpoints and its replay are in checkpoint.test.ts.
 */
import assert from "node:assert/strict";
import { mkdtempSync, existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CairnError, parseYamlText, sha256, type JsonModel } from "../../src/core/index.ts";
import { checkCheckpointFile } from "../../src/vm/checkpoint-file.ts";
import { CHECKPOINT_FILE } from "../../src/vm/checkpoint-take.ts";
import { MAX_CHECKPOINTS, withCheckpointEvery } from "../../src/vm/checkpoint-spec.ts";
import { defaultVmIdentity, encodeInputs, parseScenario, recordRun, vmDigest } from "../../src/vm/index.ts";
import { parseRunManifest } from "../../src/vm/run-manifest.ts";
import { HOLD } from "../../src/vm/wire.ts";
import { PROBE_LAUNCH } from "./fixtures/guest.ts";

const STEPS = `
steps:
  - action: start
  - action: write-stdin
    data: "echo one\\n"
  - action: write-stdin
    data: "echo two\\n"
    after: {output: stdout, contains: one}
  - action: close-stdin
    after: {output: stdout, contains: two}
`;

const run = (checkpoints: string): unknown => parseYamlText(`${STEPS}checkpoints:\n${checkpoints}`);

function refusedAt(section: unknown, path: string, message: RegExp, code?: string): void {
  assert.throws(
    () => parseScenario(section as never),
    (e: unknown) => e instanceof CairnError && e.issues.some((i) => i.path === path && message.test(i.message) && (code === undefined || i.code === code)),
    path,
  );
}

describe("run.checkpoints", () => {
  it("parses checkpoints after a step and after an output match", () => {
    const s = parseScenario(
      run(`  - name: one
    after: {step: 1}
  - name: two-seen
    after: {output: stdout, contains: two}
`) as never,
    );
    assert.deepEqual(s.checkpoints, [
      { name: "one", after: { kind: "step", step: 1 } },
      { name: "two-seen", after: { kind: "output", stream: "stdout", contains: "two" } },
    ]);
  });

  it("a run without checkpoints keeps its inputs' bytes; with them, the holds follow the steps, one per checkpoint in order", () => {
    const without = parseScenario(parseYamlText(STEPS) as never);
    const withCk = parseScenario(run("  - {name: one, after: {step: 1}}\n  - {name: two, after: {output: stderr, contains: ok}}\n") as never);
    assert.equal("checkpoints" in without, false, "a scenario without checkpoints has no such key");
    const plain = encodeInputs(PROBE_LAUNCH, without);
    const held = encodeInputs(PROBE_LAUNCH, withCk);
    // the same steps, then: u32 count | per hold u8 kind, u8 stream, u32 step, u32 pattern length, pattern
    assert.ok(held.subarray(0, plain.length).equals(plain), "the holds are appended; everything before them is the plain run's bytes");
    const holds = Buffer.concat([
      Buffer.from([2, 0, 0, 0]),
      Buffer.from([HOLD.step, 0, 1, 0, 0, 0, 0, 0, 0, 0]),
      Buffer.from([HOLD.output, 2, 0, 0, 0, 0, 2, 0, 0, 0]),
      Buffer.from("ok"),
    ]);
    assert.ok(held.subarray(plain.length).equals(holds), held.subarray(plain.length).toString("hex"));
  });

  it("a run with checkpoints has the input channel in its VM identity (a second serial port, icount sleep=on); others keep theirs", () => {
    const parts = {
      qemu: "7.2.22 (Debian test)",
      kernel: sha256("k"),
      modules: [],
      agent: sha256("a"),
      initramfs: sha256("i"),
      treeManifest: sha256("t"),
      memoryMib: 256,
    };
    const plain = defaultVmIdentity(parts);
    assert.deepEqual([plain.serial, plain.icount_sleep], [["console"], false], "control: an initramfs run without checkpoints");
    const held = defaultVmIdentity({ ...parts, inputChannel: true });
    assert.deepEqual([held.serial, held.icount_sleep], [["console", "input"], true]);
    assert.notEqual(vmDigest(held), vmDigest(plain));
  });

  it("refuses a step that does not exist, naming it, and a network step", () => {
    refusedAt(run("  - {name: late, after: {step: 4}}\n"), "/run/checkpoints/0/after/step", /step 4 does not exist: \/run\/steps has 4 steps \(0 to 3\)/);
    // control: the last step exists
    assert.equal(parseScenario(run("  - {name: late, after: {step: 3}}\n") as never).checkpoints?.length, 1);
    const net = parseYamlText(`
steps:
  - action: start
  - action: network-down
checkpoints:
  - {name: down, after: {step: 1}}
network: {}
`);
    refusedAt(net, "/run/checkpoints/0/after/step", /network-down\) writes no record/);
  });

  it("refuses a name twice, a bad name, both kinds of event, and more than the limit", () => {
    refusedAt(run("  - {name: a, after: {step: 0}}\n  - {name: a, after: {step: 1}}\n"), "/run/checkpoints/1/name", /named twice/);
    refusedAt(run("  - {name: A/b, after: {step: 0}}\n"), "/run/checkpoints/0/name", /does not match/);
    refusedAt(run("  - {name: a, after: {step: 0, output: stdout, contains: x}}\n"), "/run/checkpoints/0/after", /either \{step\}/);
    const many = Array.from({ length: MAX_CHECKPOINTS + 1 }, (_, i) => `  - {name: c${i}, after: {step: 0}}\n`).join("");
    refusedAt(run(many), "/run/checkpoints", /limit run\.checkpoints exceeded/, "LIMIT_EXCEEDED");
    // control: the limit itself is accepted
    const enough = Array.from({ length: MAX_CHECKPOINTS }, (_, i) => `  - {name: c${i}, after: {step: 0}}\n`).join("");
    assert.equal(parseScenario(run(enough) as never).checkpoints?.length, MAX_CHECKPOINTS);
  });

  it("a record whose checkpoint names no step is refused before the kit, the runs directory or QEMU", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-ckspec-"));
    writeFileSync(join(dir, "probe"), "not run\n");
    const spec = (step: number) =>
      JSON.stringify({
        schema: "cairn.workload/1",
        source: { binary: { path: "probe", user: "1000:1000" } },
        run: { steps: [{ action: "start" }, { action: "close-stdin" }], checkpoints: [{ name: "c", after: { step } }] },
      });
    writeFileSync(join(dir, "spec.json"), spec(2));
    let kitAsked = false;
    const opts = {
      input: join(dir, "spec.json"),
      storeDir: join(dir, "store"),
      runsDir: join(dir, "runs"),
      cairnVersion: "test",
      kit: () => {
        kitAsked = true;
        return Promise.reject(new Error("no kit in this test"));
      },
    };
    await assert.rejects(recordRun(opts), (e: unknown) => e instanceof CairnError && e.issues.some((i) => i.path === "/run/checkpoints/0/after/step"));
    assert.equal(kitAsked, false);
    assert.equal(existsSync(join(dir, "runs")), false);
    // control: the same spec with an existing step gets as far as asking for the kit
    writeFileSync(join(dir, "spec.json"), spec(1));
    await assert.rejects(recordRun(opts), /no kit in this test/);
    assert.equal(kitAsked, true);
  });
});

describe("cairn run --checkpoint-every N", () => {
  it("adds a checkpoint after every Nth step, a network step's moved to the next step that writes a record; parses as run.checkpoints", () => {
    const spec: JsonModel = {
      schema: "cairn.workload/1",
      run: {
        network: { echo: { port: 7 } },
        steps: [{ action: "start" }, { action: "network-down" }, { action: "write-stdin", data: "x" }, { action: "close-stdin" }],
      },
    };
    const every = (n: number) => ((withCheckpointEvery(spec, n) as { run: { checkpoints: unknown } }).run.checkpoints as { name: string }[]).map((c) => c.name);
    assert.deepEqual(every(1), ["step-0", "step-2", "step-3"]);
    assert.deepEqual(every(2), ["step-2", "step-3"]);
    assert.deepEqual(every(4), ["step-3"]);
    assert.deepEqual(every(5), []);
    const run = (withCheckpointEvery(spec, 1) as { run: never }).run;
    assert.deepEqual(
      parseScenario(run).checkpoints?.map((c) => [c.name, c.after]),
      [
        ["step-0", { kind: "step", step: 0 }],
        ["step-2", { kind: "step", step: 2 }],
        ["step-3", { kind: "step", step: 3 }],
      ],
    );
    // no steps: the default scenario's two
    assert.deepEqual(
      (withCheckpointEvery({ schema: "cairn.workload/1" }, 1) as { run: { checkpoints: { name: string }[] } }).run.checkpoints.map((c) => c.name),
      ["step-0", "step-1"],
    );
  });

  it("refuses a spec that declares checkpoints already, and a workload lock, before the kit", async () => {
    const spec: JsonModel = { schema: "cairn.workload/1", run: { checkpoints: [{ name: "a", after: { step: 0 } }] } };
    assert.throws(
      () => withCheckpointEvery(spec, 1),
      (e: unknown) => e instanceof CairnError && e.code === "USAGE" && e.path === "--checkpoint-every",
    );
    const dir = mkdtempSync(join(tmpdir(), "cairn-every-"));
    writeFileSync(join(dir, "w.lock.json"), "{}");
    let asked = false;
    await assert.rejects(
      recordRun({
        input: join(dir, "w.lock.json"),
        storeDir: join(dir, "store"),
        runsDir: join(dir, "runs"),
        cairnVersion: "test",
        checkpointEvery: 1,
        kit: () => {
          asked = true;
          return Promise.reject(new Error("no kit"));
        },
      }),
      (e: unknown) => e instanceof CairnError && e.code === "USAGE" && /workload lock/.test(e.message),
    );
    assert.equal(asked, false);
  });
});

describe("run.json checkpoints and checkpoints.qcow2", () => {
  const vm = defaultVmIdentity({
    qemu: "7.2.22 (Debian test)",
    kernel: sha256("k"),
    modules: [],
    agent: sha256("a"),
    initramfs: sha256("i"),
    treeManifest: sha256("t"),
    memoryMib: 256,
  });
  const manifest = (checkpoints: unknown) =>
    Buffer.from(
      JSON.stringify({
        schema: "cairn.run/1",
        run_id: "r1",
        status: "passed",
        workload: Object.fromEntries(["workload", "source", "fs", "launch", "derived"].map((k) => [k, sha256(k)]).concat([["source_kind", "binary"]])),
        guest_image: { initramfs: sha256("i"), size: 1, inputs: sha256("n") },
        vm,
        vm_digest: vmDigest(vm),
        replay_log: { sha256: sha256("l"), size: 1 },
        outcome: sha256("o"),
        checkpoints,
        recorded: { at: "2026-01-01T00:00:00.000Z", cairn_version: "t" },
      }),
    );

  it("parses strictly: an unknown key in a checkpoint is named", () => {
    const file = { sha256: sha256("q"), size: 3 };
    const good = { file, taken: [{ name: "one", after: { step: 1 }, icount: 42 }] };
    const issues = (ck: unknown): string[] => {
      try {
        parseRunManifest(manifest(ck), "run.json");
        return [];
      } catch (e) {
        return (e as CairnError).issues.map((i) => i.path).filter((p) => p.startsWith("/checkpoints"));
      }
    };
    assert.deepEqual(issues(good), []);
    assert.deepEqual(parseRunManifest(manifest(good), "run.json").checkpoints, good);
    assert.deepEqual(issues({ file, taken: [{ name: "one", after: { step: 1 }, icount: 42, at: 1 }] }), ["/checkpoints/taken/0/at"]);
    assert.deepEqual(issues({ file, taken: [{ name: "one", after: { step: -1 }, icount: 42 }] }), ["/checkpoints/taken/0/after/step"]);
  });

  it("a checkpoints.qcow2 of another size or digest is refused, naming the field; the recorded one passes", () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-ckfile-"));
    // a qcow2 header (magic, version 3, no backing file: qcow2-header.ts reads it) and then any bytes
    const header = Buffer.alloc(104);
    header.write("QFI\xfb", 0, "latin1");
    header.writeUInt32BE(3, 4);
    const bytes = Buffer.concat([header, Buffer.from("qcow2 bytes")]);
    writeFileSync(join(dir, CHECKPOINT_FILE), bytes);
    const m = { run_id: "r1", checkpoints: { file: { sha256: sha256(bytes), size: bytes.length }, taken: [] } } as never;
    assert.equal(checkCheckpointFile(dir, m), join(dir, CHECKPOINT_FILE));
    writeFileSync(join(dir, CHECKPOINT_FILE), Buffer.concat([header, Buffer.from("qcow2 bytez")]));
    assert.throws(
      () => checkCheckpointFile(dir, m),
      (e: unknown) => e instanceof CairnError && e.code === "REPLAY_MISMATCH" && e.path === "/checkpoints/file/sha256",
    );
    writeFileSync(join(dir, CHECKPOINT_FILE), Buffer.concat([header, Buffer.from("qcow2 bytes!")]));
    assert.throws(
      () => checkCheckpointFile(dir, m),
      (e: unknown) => e instanceof CairnError && e.path === "/checkpoints/file/size",
    );
    assert.throws(
      () => checkCheckpointFile(dir, { run_id: "r1" } as never),
      (e: unknown) => e instanceof CairnError && e.code === "RUN_INVALID" && /without checkpoints/.test(e.message),
    );
  });
});
