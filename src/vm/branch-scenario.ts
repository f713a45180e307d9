/**
 * A branch's scenario tail (`cairn branch RUN --at CHECKPOINT --scenario
 * FILE`, issue 35 item 3): the steps that replace every step of the parent
 * not yet run at the checkpoint, and optionally what to expect of the whole
 * run (absent: the parent's expectations).
 *
 *   steps:
 *     - action: network-down
 *     - action: write-stdin
 *       data: "retry\n"
 *       after: { output: stdout, contains: "failed" }
 *     - action: close-stdin
 *   expect:
 *     - invocation: 1
 *       exit-code: 0
 *
 * The steps are read as continuing where the parent's agent stood at its
 * hold: invocations already started count (a write needs no new start), and
 * stdin offsets continue the current invocation's stream. The file is read
 * strictly, like a run section, and refused before anything starts.
 */
import { CairnError, Checker, childPath, parseJsonBytes, parseYamlText, type JsonModel } from "../core/index.ts";
import { decodeProtocol, DEFAULT_PROTOCOL_LIMITS } from "./protocol.ts";
import { MAX_FRAME_BYTES, parseExpect, parseSteps, type Expectation, type Scenario, type Step } from "./scenario.ts";

export interface BranchTail {
  readonly steps: readonly Step[];
  /** Absent: the parent's expectations are the branch's. */
  readonly expect?: readonly Expectation[];
}

/** Where the parent's agent stood at the hold (protocol.ts ProtocolHold). */
export interface HoldPoint {
  readonly invocations: number;
  readonly stdinOffset: number;
  /** The parent has run.network: network steps may come. */
  readonly network: boolean;
}

/** Parses a tail file's bytes (YAML or JSON) against the point it continues from. */
export function parseBranchTail(bytes: Buffer, at: HoldPoint, file: string): BranchTail {
  const text = bytes.toString("utf8");
  // a refusal names the file (the parsers say "input" otherwise)
  const unsafe: JsonModel = /^\s*[{[]/.test(text) ? parseJsonBytes(bytes, { source: file }) : (parseYamlText(text, file) as JsonModel);
  const c = new Checker("RUN_INVALID");
  const o = c.object(unsafe, "", ["steps", "expect"]);
  if (!o) {
    c.done(`invalid branch scenario ${file}`);
    throw new Error("unreachable");
  }
  const steps = parseSteps(c, c.required(o, "steps", ""), "/steps", { started: at.invocations, offset: at.stdinOffset });
  if (steps.length === 0 && Array.isArray(o.steps)) c.add("/steps", "a branch needs at least one step", "RUN_INVALID");
  steps.forEach((s, i) => {
    if (!at.network && (s.action === "network-down" || s.action === "network-up"))
      c.add(childPath("/steps", i), `"${s.action}" needs run.network, and the parent run has none`, "RUN_INVALID");
  });
  const invocations = at.invocations + steps.filter((s) => s.action === "start").length;
  const expect = o.expect === undefined ? undefined : parseExpect(c, o.expect, "/expect", Math.max(invocations, 1));
  c.done(`invalid branch scenario ${file}`, 'see docs/runs.md, "Branches"');
  return { steps, ...(expect !== undefined ? { expect } : {}) };
}

/**
 * A branch's scenario for judging its run (a replay's, or a check's): the
 * parent's, with the tail's expectations when it gives any. The tail is read
 * again against the hold that ends the branch's prefix (the last record of
 * the parent's stream the branch continues).
 */
export function branchScenario(parent: Scenario, prefix: Buffer, tailBytes: Buffer, network: boolean): Scenario {
  const holds = decodeProtocol(prefix, { ...DEFAULT_PROTOCOL_LIMITS, frameBytes: MAX_FRAME_BYTES }, { partial: true }).holds ?? [];
  const hold = holds.at(-1);
  if (hold === undefined || hold.end !== prefix.length)
    throw new CairnError("REPLAY_MISMATCH", "the branch's prefix does not end at a hold of the parent's agent", { path: "/branch/prefix" });
  const tail = parseBranchTail(tailBytes, { invocations: hold.invocation, stdinOffset: hold.stdinOffset, network }, "branch.json");
  return { ...parent, expect: tail.expect ?? parent.expect };
}
