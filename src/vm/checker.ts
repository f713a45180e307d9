/**
 * The host-side checker: application assertions declared in the spec
 * (`run.expect`), evaluated against the agent's process and byte facts.
 * Results name what was checked and carry counts, indices and digests —
 * never output bytes — so they can go into the shareable failure bundle.
 */
import { CairnError, declareIdentity, defineScope, identityDigest, sha256, type ErrorCode, type Sha256Digest } from "../core/index.ts";
import type { DecodedProtocol, NormalizedEvent } from "./protocol.ts";
import type { Expectation } from "./scenario.ts";

export interface AssertionResult {
  readonly invocation: number;
  readonly check: string;
  readonly ok: boolean;
  readonly expected: number | string | null;
  readonly actual: number | string | null;
  /** For line checks: the first expected line (0-based) that did not match, or null. */
  readonly first_mismatch?: number | null;
}

/** Lines of a stream: split on "\n"; a trailing newline does not add an empty line. */
export function splitLines(bytes: Buffer): Buffer[] {
  if (bytes.length === 0) return [];
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x0a) {
      parts.push(bytes.subarray(start, i));
      start = i + 1;
    }
  }
  if (start < bytes.length) parts.push(bytes.subarray(start));
  return parts;
}

function linesEqual(actual: Buffer[], expected: readonly string[]): number | null {
  const n = Math.max(actual.length, expected.length);
  for (let i = 0; i < n; i++) {
    const a = actual[i];
    const e = expected[i];
    if (a === undefined || e === undefined || !a.equals(Buffer.from(e, "utf8"))) return i;
  }
  return null;
}

function linesInclude(actual: Buffer[], expected: readonly string[]): number | null {
  const have = new Set(actual.map((b) => b.toString("latin1")));
  for (let i = 0; i < expected.length; i++) {
    if (!have.has(Buffer.from(expected[i]!, "utf8").toString("latin1"))) return i;
  }
  return null;
}

export function checkAssertions(expect: readonly Expectation[], decoded: DecodedProtocol): AssertionResult[] {
  const results: AssertionResult[] = [];
  for (const e of expect) {
    const inv = e.invocation;
    const exit = decoded.events.find((x): x is Extract<NormalizedEvent, { event: "exit" }> => x.event === "exit" && x.invocation === inv);
    const streams = decoded.streams.get(inv) ?? { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };
    if (e.exitCode !== undefined) {
      const actual = exit?.kind === "exited" ? exit.code : null;
      results.push({ invocation: inv, check: "exit-code", ok: actual === e.exitCode, expected: e.exitCode, actual });
    }
    if (e.launchFailure !== undefined) {
      const failed = decoded.events.find(
        (x): x is Extract<NormalizedEvent, { event: "launch-failure" }> => x.event === "launch-failure" && x.invocation === inv,
      );
      results.push({
        invocation: inv,
        check: "launch-failure",
        ok: failed?.stage === e.launchFailure,
        expected: e.launchFailure,
        actual: failed?.stage ?? null,
      });
    }
    if (e.signal !== undefined) {
      const actual = exit?.kind === "signaled" ? exit.code : null;
      results.push({ invocation: inv, check: "signal", ok: actual === e.signal, expected: e.signal, actual });
    }
    for (const name of ["stdout", "stderr"] as const) {
      const bytes = streams[name];
      const lines = splitLines(bytes);
      const exact = name === "stdout" ? e.stdoutLines : e.stderrLines;
      if (exact !== undefined) {
        const m = linesEqual(lines, exact);
        results.push({ invocation: inv, check: `${name}-lines`, ok: m === null, expected: exact.length, actual: lines.length, first_mismatch: m });
      }
      const some = name === "stdout" ? e.stdoutIncludes : e.stderrIncludes;
      if (some !== undefined) {
        const m = linesInclude(lines, some);
        results.push({ invocation: inv, check: `${name}-includes`, ok: m === null, expected: some.length, actual: lines.length, first_mismatch: m });
      }
      const digest = name === "stdout" ? e.stdoutSha256 : e.stderrSha256;
      if (digest !== undefined) {
        const actual: Sha256Digest = sha256(bytes);
        results.push({ invocation: inv, check: `${name}-sha256`, ok: actual === digest, expected: digest, actual });
      }
    }
  }
  return results;
}

/**
 * What a run's status may say (docs/runs.md "Run status" has the table):
 * `passed` only when the spec declared assertions and every one held;
 * `completed` / `program-failed` for a run that declared none (every
 * invocation exited 0, or one did not: a non-zero exit, a signal);
 * `assertions-failed`, `launch-failed`; `infrastructure-failure` (the agent
 * or the guest kernel reported one, or QEMU ended without the agent's
 * status: a panic, a crash, an invalid protocol stream); `timeout` (the host
 * stopped QEMU at `--timeout`). An interrupted or unrecorded run has no
 * status: it leaves no run directory (run-staging.ts).
 */
export type RunStatus = "passed" | "completed" | "program-failed" | "assertions-failed" | "launch-failed" | "infrastructure-failure" | "timeout";

/** Every status, in the order docs/runs.md lists them (the run manifest's reader accepts exactly these). */
export const RUN_STATUSES: readonly RunStatus[] = [
  "passed",
  "completed",
  "program-failed",
  "assertions-failed",
  "launch-failed",
  "infrastructure-failure",
  "timeout",
];

/** The error each status that is not a success fails `cairn run` with (null: exit 0); one table for every caller. */
export const RUN_STATUS_ERRORS: Readonly<Record<RunStatus, ErrorCode | null>> = {
  passed: null,
  completed: null,
  "program-failed": "RUN_PROGRAM_FAILED",
  "assertions-failed": "ASSERTION_FAILED",
  "launch-failed": "RUN_LAUNCH_FAILED",
  "infrastructure-failure": "RUN_INFRASTRUCTURE",
  timeout: "RUN_TIMEOUT",
};

/** The typed failure a recorded run of `status` reports (undefined for `passed` and `completed`), naming its run directory. */
export function runStatusFailure(status: RunStatus, runDir: string, detail?: string): CairnError | undefined {
  const code = RUN_STATUS_ERRORS[status];
  if (code === null) return undefined;
  return new CairnError(code, `the run was recorded but did not pass: ${status}${detail !== undefined ? ` (${detail})` : ""}`, {
    path: runDir,
    hint: "see failure-bundle.json in the run directory (shareable) and streams/ (private); the run still replays",
  });
}

/** `kernel`: what the guest kernel reported (kernel-log.ts); any entry is an infrastructure failure. */
export function runStatus(events: readonly NormalizedEvent[], results: readonly AssertionResult[], kernel: readonly unknown[] = []): RunStatus {
  if (kernel.length > 0) return "infrastructure-failure";
  if (events.some((e) => e.event === "infra-failure" || (e.event === "final" && e.status !== "ok"))) return "infrastructure-failure";
  if (results.some((r) => !r.ok)) return "assertions-failed";
  // A launch failure fails the run unless the spec expected exactly it for that invocation.
  const expected = (inv: number) => results.some((r) => r.invocation === inv && r.check === "launch-failure" && r.ok);
  if (events.some((e) => e.event === "launch-failure" && !expected(e.invocation))) return "launch-failed";
  // Nothing was checked: the run says what its programs did, never "passed" (a program that exited 127 passed before).
  if (results.length === 0) return events.every((e) => e.event !== "exit" || (e.kind === "exited" && e.code === 0)) ? "completed" : "program-failed";
  return "passed";
}

export const OUTCOME_SCHEMA = "cairn.outcome/1";

export const OUTCOME_IDENTITY = declareIdentity({
  name: "outcome digest",
  tag: OUTCOME_SCHEMA,
  algorithm: "sha256",
  framing: "tag-nul-jcs",
  role: "identity",
  definedIn: "src/vm/checker.ts",
});

/**
 * What the outcome digest covers, as fields of its model `{events,
 * assertions}` and of the decoded protocol the events come from. Frame
 * boundaries, sequence numbers and timings never reach a normalized event,
 * and host paths are never in the protocol.
 */
export const OUTCOME_SCOPE = defineScope({
  identity: OUTCOME_SCHEMA,
  covers: {
    "/events": "the normalized events: lifecycle, stdin offsets, exit status, per-stream byte counts and digests, cleanup",
    "/assertions": "the checker's results for every expectation of the spec",
  },
  excludes: {
    "/streams": "the output bytes themselves (private); their counts and digests are covered through the exit events",
    "/records": "how many protocol records carried the events: framing, not outcome",
    "/frames": "how many frames the stream was cut into: framing, not outcome",
    "/bytes": "the protocol stream's length: framing, not outcome",
  },
});

/** The outcome digest: sha256("cairn.outcome/1\0" || JCS({events, assertions})). */
export function outcomeDigest(events: readonly NormalizedEvent[], assertions: readonly AssertionResult[]): Sha256Digest {
  return identityDigest(OUTCOME_IDENTITY, { events, assertions });
}
