// A launch failure fails the run unless the spec expected exactly that stage
// for that invocation; other assertions passing must not hide it.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CairnError, generateSigningKey, type Sha256Digest } from "../../src/core/index.ts";
import { evaluate } from "../../src/vm/guest.ts";
import {
  checkAssertions,
  decodeProtocol,
  outcomeDigest,
  signReceipt,
  defaultVmIdentity,
  vmDigest,
  DEFAULT_PROTOCOL_LIMITS,
  parseRunManifest,
  parseScenario,
  RUN_STATUS_ERRORS,
  RUN_STATUSES,
  runStatus,
  runStatusFailure,
  type DecodedProtocol,
  type NormalizedEvent,
} from "../../src/vm/index.ts";
import { REPLAY_LOG_VERSION, replayLogWhole, stoppedByHost } from "../../src/vm/replay-log.ts";
import { assertCode } from "../helpers/errors.ts";
import { StreamWriter } from "./fixtures/records.ts";

function decoded(events: NormalizedEvent[]): DecodedProtocol {
  return { events, streams: new Map([[1, { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) }]]), records: events.length, frames: 0, bytes: 0 };
}

const failed = decoded([{ invocation: 1, event: "launch-failure", stage: "credentials", errno: 1 } as NormalizedEvent]);

describe("run status with launch failures", () => {
  it("an unexpected launch failure is launch-failed even when every other assertion passes", () => {
    const results = checkAssertions([{ invocation: 1, stdoutLines: [] }], failed);
    assert.ok(
      results.every((r) => r.ok),
      "the stdout assertion itself passes",
    );
    assert.equal(runStatus(failed.events, results), "launch-failed");
    assert.equal(runStatus(failed.events, []), "launch-failed");
  });

  it("an expected launch failure at that stage passes (control); at another stage it fails the assertion", () => {
    const ok = checkAssertions(parseScenario({ steps: [{ action: "start" }], expect: [{ "launch-failure": "credentials" }] }).expect, failed);
    assert.equal(runStatus(failed.events, ok), "passed");
    const wrong = checkAssertions(parseScenario({ steps: [{ action: "start" }], expect: [{ "launch-failure": "exec" }] }).expect, failed);
    assert.equal(runStatus(failed.events, wrong), "assertions-failed");
  });

  it("an unknown stage name in the spec is refused", () => {
    assert.throws(
      () => parseScenario({ steps: [{ action: "start" }], expect: [{ "launch-failure": "nope" }] }),
      (e: unknown) => e instanceof CairnError && e.issues.some((i) => i.code === "MODEL_VALUE" && i.path === "/run/expect/0/launch-failure"),
    );
  });
});

// Issue 31, case 16: only a run whose assertions were checked may say `passed`.
const exitWith = (kind: "exited" | "signaled", code: number) =>
  decoded([
    { invocation: 1, event: "start" },
    {
      invocation: 1,
      event: "exit",
      kind,
      code,
      stdout: { bytes: 0, sha256: `sha256:${"0".repeat(64)}` },
      stderr: { bytes: 0, sha256: `sha256:${"0".repeat(64)}` },
    } as NormalizedEvent,
    { invocation: 0, event: "final", status: "ok", invocations: 1 },
  ]);

describe("run status without assertions (issue 31, case 16)", () => {
  it("a program that exited 127 with nothing checked is program-failed, never passed; one killed by a signal too", () => {
    assert.equal(runStatus(exitWith("exited", 127).events, []), "program-failed");
    assert.equal(runStatus(exitWith("signaled", 9).events, []), "program-failed");
  });

  it("control: exit 0 with nothing checked is completed; with a held assertion it is passed", () => {
    assert.equal(runStatus(exitWith("exited", 0).events, []), "completed");
    const held = checkAssertions(parseScenario({ steps: [{ action: "start" }], expect: [{ "exit-code": 127 }] }).expect, exitWith("exited", 127));
    assert.equal(runStatus(exitWith("exited", 127).events, held), "passed", "the spec expected 127 and got it");
  });

  it("every status has one row: exit 0 only for passed and completed, a typed error naming the run directory otherwise", () => {
    assert.deepEqual(Object.keys(RUN_STATUS_ERRORS).sort(), [...RUN_STATUSES].sort());
    assert.equal(runStatusFailure("passed", "/r"), undefined);
    assert.equal(runStatusFailure("completed", "/r"), undefined);
    const e = runStatusFailure("program-failed", "/r");
    assert.equal(e?.code, "RUN_PROGRAM_FAILED");
    assert.equal(e?.exitCode, 1);
    assert.equal(e?.path, "/r");
    assert.equal(runStatusFailure("timeout", "/r")?.code, "RUN_TIMEOUT");
    assert.equal(runStatusFailure("infrastructure-failure", "/r")?.code, "RUN_INFRASTRUCTURE");
  });

  it("an unfinished guest (host timeout, QEMU ended without the agent's status) checks no assertion and says how it ended", () => {
    const scenario = parseScenario({ steps: [{ action: "start" }], expect: [{ "exit-code": 0 }] });
    const partial = decoded([{ invocation: 1, event: "start" }]);
    const timeout = evaluate(partial, scenario, [], new CairnError("RUN_TIMEOUT", "stopped"));
    assert.deepEqual([timeout.status, timeout.assertions, timeout.events], ["timeout", [], partial.events]);
    const panic = evaluate(partial, scenario, [{ reason: "panic", line: "Kernel panic - not syncing: x" }], new CairnError("RUN_TIMEOUT", "stopped"));
    assert.equal(panic.status, "infrastructure-failure", "a kernel panic before the timeout is what happened");
    assert.equal(evaluate(partial, scenario, [], new CairnError("RUN_INFRASTRUCTURE", "no status")).status, "infrastructure-failure");
    // control: the same stream finished is judged by its assertions
    assert.equal(evaluate(exitWith("exited", 0), scenario, []).status, "passed");
  });
});

describe("what a recorded run may be (issue 31, cases 8, 9, 14)", () => {
  const header = (v: number) => [(v >>> 24) & 255, (v >>> 16) & 255, (v >>> 8) & 255, v & 255, 0, 0, 0, 0, 0, 0, 0, 0];
  const log = (...bytes: number[]) => Buffer.from([...header(REPLAY_LOG_VERSION), ...bytes]);
  it("a replay log is whole only with QEMU's version header and its end event; a zero header (QEMU killed) is not", () => {
    assert.equal(replayLogWhole(log(0, 0, 0, 0, 5, 39)), true);
    assert.equal(replayLogWhole(Buffer.from([...header(0), 0, 0, 0, 0, 5, 39])), false, "QEMU writes the header last");
    assert.equal(replayLogWhole(log(0, 0, 0, 0, 5)), false, "no end event");
    assert.equal(replayLogWhole(Buffer.alloc(0)), false);
  });

  it("a log ended by a host signal (cairn's timeout) is told from one the guest ended", () => {
    assert.equal(stoppedByHost(log(0, 0, 0, 0, 5, 14, 39)), true, "shutdown cause 4, host signal");
    assert.equal(stoppedByHost(log(0, 0, 0, 0, 5, 16, 39)), false, "control: guest shutdown");
    assert.equal(stoppedByHost(log(0, 0, 0, 0, 14, 39)), false, "14 inside an instruction count is no event");
  });

  it("the run manifest reader accepts every status and refuses another", () => {
    const d = (c: string) => `sha256:${c.repeat(64)}` as Sha256Digest;
    const vm = defaultVmIdentity({ qemu: "7.2", kernel: d("a"), modules: [], agent: d("b"), initramfs: d("c"), treeManifest: d("f"), memoryMib: 256 });
    const manifest = (status: string) =>
      Buffer.from(
        JSON.stringify({
          schema: "cairn.run/1",
          run_id: "r1",
          status,
          workload: { source_kind: "binary", workload: d("1"), source: d("2"), fs: d("3"), launch: d("4"), derived: d("5") },
          guest_image: { initramfs: d("c"), size: 1, inputs: d("6") },
          vm,
          vm_digest: vmDigest(vm),
          replay_log: { sha256: d("7"), size: 1 },
          outcome: d("8"),
          recorded: { at: "2026-12-06T00:00:00.000Z", cairn_version: "test" },
        }),
      );
    for (const s of RUN_STATUSES) assert.equal(parseRunManifest(manifest(s), "run.json").status, s);
    const bad = assertCode(() => parseRunManifest(manifest("interrupted"), "run.json"), "MODEL_VALUE");
    assert.ok(bad.issues.some((i) => i.path === "/status"));
  });

  it("receipt sign never signs a status its files contradict: run.json edited to passed, or events.json edited, is RUN_INVALID (control: as recorded)", () => {
    const d = (c: string) => `sha256:${c.repeat(64)}` as Sha256Digest;
    const vm = defaultVmIdentity({ qemu: "7.2", kernel: d("a"), modules: [], agent: d("b"), initramfs: d("c"), treeManifest: d("f"), memoryMib: 256 });
    const dir = mkdtempSync(join(tmpdir(), "cairn-receipt-status-"));
    const log = Buffer.from("log");
    const write = (status: string) =>
      writeFileSync(
        join(dir, "run.json"),
        JSON.stringify({
          schema: "cairn.run/1",
          run_id: "r1",
          status,
          workload: { source_kind: "binary", workload: d("1"), source: d("2"), fs: d("3"), launch: d("4"), derived: d("5") },
          guest_image: { initramfs: d("c"), size: 1, inputs: d("6") },
          vm,
          vm_digest: vmDigest(vm),
          replay_log: { sha256: `sha256:${createHash("sha256").update(log).digest("hex")}`, size: log.length },
          outcome: outcomeDigest([], []),
          recorded: { at: "2026-12-06T00:00:00.000Z", cairn_version: "test" },
        }),
      );
    writeFileSync(join(dir, "events.json"), "[]");
    writeFileSync(join(dir, "assertions.json"), "[]");
    writeFileSync(join(dir, "replay.log"), log);
    const key = generateSigningKey();
    const signed = () => JSON.stringify(signReceipt(dir, [key]).statement);
    write("completed");
    assert.match(signed(), /"status":"completed"/, "control");
    write("timeout");
    assert.match(signed(), /"status":"timeout"/, "a status the lists cannot decide is signed as recorded");
    write("passed");
    assertCode(() => signReceipt(dir, [key]), "RUN_INVALID", "/status");
    write("completed");
    writeFileSync(join(dir, "assertions.json"), JSON.stringify([{ invocation: 1, check: "exit-code", ok: true, expected: 0, actual: 0 }]));
    assertCode(() => signReceipt(dir, [key]), "RUN_INVALID", "/outcome");
  });

  it("a partial protocol stream decodes to its whole records; a cut-off last record ends it (control: refused without partial)", () => {
    const stream = new StreamWriter().hello().record(2, 1).bytes();
    const cut = Buffer.concat([stream, Buffer.from([40, 0, 0, 0, 3])]);
    assert.deepEqual(decodeProtocol(cut, DEFAULT_PROTOCOL_LIMITS, { partial: true }).events, [{ invocation: 1, event: "start" }]);
    assert.deepEqual(decodeProtocol(stream, DEFAULT_PROTOCOL_LIMITS, { partial: true }).events, [{ invocation: 1, event: "start" }]);
    assertCode(() => decodeProtocol(cut), "RUN_INFRASTRUCTURE", `protocol@${stream.length}/truncated`);
    assertCode(() => decodeProtocol(stream), "RUN_INFRASTRUCTURE", `protocol@${stream.length}/no-final`);
  });
});
