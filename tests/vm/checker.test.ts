// The host-side checker (src/vm/checker.ts) on hand-built decoded protocols:
// each assertion kind passes on the matching facts and fails on each kind of
// difference, and the run status follows the documented precedence. Written
// to kill StrykerJS survivors (bench/mutation/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { sha256 } from "../../src/core/index.ts";
import { checkAssertions, outcomeDigest, runStatus, splitLines } from "../../src/vm/checker.ts";
import type { DecodedProtocol, NormalizedEvent } from "../../src/vm/protocol.ts";

const facts = (b: string) => ({ bytes: Buffer.byteLength(b), sha256: sha256(b) });

function decoded(events: NormalizedEvent[], streams: [number, string, string][]): DecodedProtocol {
  return {
    events,
    streams: new Map(streams.map(([i, o, e]) => [i, { stdout: Buffer.from(o), stderr: Buffer.from(e) }])),
    records: 0,
    frames: 0,
    bytes: 0,
  };
}

const exited = (invocation: number, code: number, out = "", err = ""): NormalizedEvent => ({
  invocation,
  event: "exit",
  kind: "exited",
  code,
  stdout: facts(out),
  stderr: facts(err),
});
const signaled = (invocation: number, code: number): NormalizedEvent => ({
  invocation,
  event: "exit",
  kind: "signaled",
  code,
  stdout: facts(""),
  stderr: facts(""),
});
const final: NormalizedEvent = { invocation: 0, event: "final", status: "ok", invocations: 2 };

test("splitLines: no bytes is no lines; a trailing newline adds none; empty lines between are kept", () => {
  assert.deepEqual(splitLines(Buffer.alloc(0)), []);
  assert.deepEqual(splitLines(Buffer.from("\n")).map(String), [""]);
  assert.deepEqual(splitLines(Buffer.from("a")).map(String), ["a"]);
  assert.deepEqual(splitLines(Buffer.from("a\nb")).map(String), ["a", "b"]);
  assert.deepEqual(splitLines(Buffer.from("\n\na\n")).map(String), ["", "", "a"]);
});

test("exit code and signal: matched only against the exit of their own invocation and kind", () => {
  // Each invocation's start comes first: the check must find the exit event, not the invocation's first event.
  const d = decoded([{ invocation: 1, event: "start" }, exited(1, 3), { invocation: 2, event: "start" }, signaled(2, 9), final], []);
  const r = checkAssertions(
    [
      { invocation: 1, exitCode: 3, signal: 9 },
      { invocation: 2, exitCode: 9, signal: 9 },
      { invocation: 3, exitCode: 0 },
    ],
    d,
  );
  assert.deepEqual(
    r.map((x) => [x.invocation, x.check, x.ok, x.expected, x.actual]),
    [
      [1, "exit-code", true, 3, 3],
      [1, "signal", false, 9, null],
      [2, "exit-code", false, 9, null],
      [2, "signal", true, 9, 9],
      [3, "exit-code", false, 0, null],
    ],
  );
});

test("a launch failure matches the stage of its own invocation; another invocation's does not count", () => {
  const d = decoded([{ invocation: 2, event: "start" }, { invocation: 2, event: "launch-failure", stage: "exec", errno: 2 }, final], []);
  const r = checkAssertions(
    [
      { invocation: 2, launchFailure: "exec" },
      { invocation: 1, launchFailure: "exec" },
      { invocation: 2, launchFailure: "chdir" },
    ],
    d,
  );
  assert.deepEqual(
    r.map((x) => [x.invocation, x.ok, x.actual]),
    [
      [2, true, "exec"],
      [1, false, null],
      [2, false, "exec"],
    ],
  );
});

test("line checks: exact lines name the first mismatch (a missing or extra line too); includes needs every line", () => {
  const d = decoded([exited(1, 0), final], [[1, "a\nb\nc\n", "x\n"]]);
  const check = (e: Parameters<typeof checkAssertions>[0][number]) =>
    checkAssertions([e], d).map((x) => [x.check, x.ok, x.expected, x.actual, x.first_mismatch]);
  assert.deepEqual(check({ invocation: 1, stdoutLines: ["a", "b", "c"] }), [["stdout-lines", true, 3, 3, null]]);
  assert.deepEqual(check({ invocation: 1, stdoutLines: ["a", "B", "c"] }), [["stdout-lines", false, 3, 3, 1]]);
  assert.deepEqual(check({ invocation: 1, stdoutLines: ["a", "b"] }), [["stdout-lines", false, 2, 3, 2]]);
  assert.deepEqual(check({ invocation: 1, stdoutLines: ["a", "b", "c", "d"] }), [["stdout-lines", false, 4, 3, 3]]);
  assert.deepEqual(check({ invocation: 1, stderrLines: ["x"] }), [["stderr-lines", true, 1, 1, null]]);
  assert.deepEqual(check({ invocation: 1, stderrLines: ["a"] }), [["stderr-lines", false, 1, 1, 0]]);
  assert.deepEqual(check({ invocation: 1, stdoutIncludes: ["c", "a"] }), [["stdout-includes", true, 2, 3, null]]);
  assert.deepEqual(check({ invocation: 1, stdoutIncludes: ["a", "x"] }), [["stdout-includes", false, 2, 3, 1]]);
  assert.deepEqual(check({ invocation: 1, stderrIncludes: ["x"] }), [["stderr-includes", true, 1, 1, null]]);
  assert.deepEqual(check({ invocation: 1, stderrIncludes: ["c"] }), [["stderr-includes", false, 1, 1, 0]]);
});

test("line checks compare bytes: a UTF-8 expected line matches its bytes, not a Latin-1 look-alike", () => {
  const d = decoded([exited(1, 0), final], [[1, "é\n", ""]]);
  assert.equal(checkAssertions([{ invocation: 1, stdoutIncludes: ["é"] }], d)[0]!.ok, true);
  assert.equal(checkAssertions([{ invocation: 1, stdoutLines: ["é"] }], d)[0]!.ok, true);
  const latin = decoded([exited(1, 0), final], []);
  (latin.streams as Map<number, { stdout: Buffer; stderr: Buffer }>).set(1, { stdout: Buffer.from("é\n", "latin1"), stderr: Buffer.alloc(0) });
  assert.equal(checkAssertions([{ invocation: 1, stdoutIncludes: ["é"] }], latin)[0]!.ok, false);
  assert.equal(checkAssertions([{ invocation: 1, stdoutLines: ["é"] }], latin)[0]!.ok, false);
});

test("digest checks hash the exact stream bytes; an invocation without streams hashes empty output", () => {
  const d = decoded([exited(1, 0), final], [[1, "out", "err"]]);
  const r = checkAssertions(
    [
      { invocation: 1, stdoutSha256: sha256("out"), stderrSha256: sha256("out") },
      { invocation: 2, stdoutSha256: sha256("") },
    ],
    d,
  );
  assert.deepEqual(
    r.map((x) => [x.check, x.ok, x.actual]),
    [
      ["stdout-sha256", true, sha256("out")],
      ["stderr-sha256", false, sha256("err")],
      ["stdout-sha256", true, sha256("")],
    ],
  );
  assert.deepEqual(checkAssertions([{ invocation: 2, stdoutLines: [] }], d)[0]!.ok, true);
});

test("run status: kernel reports, then infrastructure events, then failed assertions, then unexpected launch failures", () => {
  const ok = { invocation: 1, check: "exit-code", ok: true, expected: 0, actual: 0 };
  const failed = { ...ok, ok: false };
  const launch = { invocation: 2, event: "launch-failure", stage: "exec", errno: 2 } as const;
  const launchExpected = { invocation: 2, check: "launch-failure", ok: true, expected: "exec", actual: "exec" };
  assert.equal(runStatus([final], [ok]), "passed");
  assert.equal(runStatus([final], [ok], []), "passed");
  assert.equal(runStatus([final], [ok], [{}]), "infrastructure-failure");
  assert.equal(runStatus([{ invocation: 1, event: "infra-failure", reason: "x", detail: 0 }, final], [ok]), "infrastructure-failure");
  assert.equal(runStatus([{ ...final, status: "infrastructure-failure" } as NormalizedEvent], [ok]), "infrastructure-failure");
  assert.equal(runStatus([final], [ok, failed]), "assertions-failed");
  assert.equal(runStatus([launch, final], [ok]), "launch-failed");
  assert.equal(runStatus([launch, final], [ok, launchExpected]), "passed");
  // Expected for another invocation, or expected and not matched: still a failure.
  assert.equal(runStatus([launch, final], [ok, { ...launchExpected, invocation: 1 }]), "launch-failed");
  assert.equal(runStatus([launch, final], [ok, { ...launchExpected, check: "exit-code" }]), "launch-failed");
  assert.equal(runStatus([launch, final], [ok, { ...launchExpected, ok: false }]), "assertions-failed");
});

test("the outcome digest is tag NUL JCS of {events, assertions}", () => {
  const events = [exited(1, 0), final];
  const assertions = checkAssertions([{ invocation: 1, exitCode: 0 }], decoded(events, []));
  const other = outcomeDigest(events, []);
  assert.notEqual(outcomeDigest(events, assertions), other);
  assert.equal(outcomeDigest([], []), sha256(Buffer.from('cairn.outcome/1\0{"assertions":[],"events":[]}')));
});
