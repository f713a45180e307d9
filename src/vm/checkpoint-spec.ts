/**
 * `run.checkpoints`: the points of a recording at which cairn saves the whole
 * VM (`savevm`, checkpoint-take.ts) into a qcow2 beside the run, for branches
 * that start there instead of at boot (issue 35).
 *
 *   run:
 *     checkpoints:
 *       - name: warm
 *         after: { step: 1 }                           # once the agent reports run.steps[1] done
 *       - name: ready
 *         after: { output: stdout, contains: "ready" } # once an invocation's stdout holds the text
 *
 * A checkpoint is a host-side act: it is not in the guest image (the run's
 * initramfs, VM identity and guest inputs are the same with or without
 * checkpoints), and the replay from boot of a run with checkpoints is the
 * plain replay. What the host can promise about *where* one lands: at or after
 * its event, at the instruction count the run records for it — the guest
 * runs on while the host notices the event and stops it (docs/runs.md).
 *
 * "After step N" is judged by the record the agent writes for that step
 * (`start`, the `input-accepted`/`input-rejected` covering the write's last
 * byte, `stdin-closed`, `requested-termination`); network steps write none,
 * so a checkpoint cannot follow one, and a step that does not exist is
 * refused here, before anything is set up.
 */
import { CairnError, childPath, type Checker, type JsonModel } from "../core/index.ts";

/** A workload's output streams; defined here, the lower of the two files, and re-exported by scenario.ts (one definition). */
export type StreamName = "stdout" | "stderr";

export type CheckpointAfter =
  | { readonly kind: "step"; readonly step: number }
  | { readonly kind: "output"; readonly stream: StreamName; readonly contains: string };

export interface CheckpointSpec {
  readonly name: string;
  readonly after: CheckpointAfter;
}

/** `run.checkpoints`: at most this many (a fixed limit; each holds the guest's RAM, about 90 MiB for a 256 MiB guest). */
export const MAX_CHECKPOINTS = 16;
/** A checkpoint's name: QEMU's snapshot tag, a path-safe word (later a `cairn branch --at NAME`). */
export const CHECKPOINT_NAME = /^[a-z][a-z0-9-]{0,31}$/;
const MAX_PATTERN = 256;

/** The checkpoint's event in run.json's words: `{step: N}` or `{output, contains}`. */
export function afterModel(a: CheckpointAfter): { step: number } | { output: StreamName; contains: string } {
  return a.kind === "step" ? { step: a.step } : { output: a.stream, contains: a.contains };
}

/** The checkpoint's event in words, from run.json's model: `step 1`, `stdout contains "ready"` (runs show, cairn run). */
export function afterText(a: { readonly step: number } | { readonly output: StreamName; readonly contains: string }): string {
  return "step" in a ? `step ${a.step}` : `${a.output} contains ${JSON.stringify(a.contains)}`;
}

/** Parses `run.checkpoints` (`path` is its pointer) against the scenario's parsed steps. */
export function parseCheckpoints(
  c: Checker,
  v: JsonModel | undefined,
  path: string,
  steps: readonly { readonly action: string }[],
  stepsPath: string,
): CheckpointSpec[] {
  const list = c.array(v, path) ?? [];
  if (list.length > MAX_CHECKPOINTS) c.add(path, `limit run.checkpoints exceeded (${list.length} > ${MAX_CHECKPOINTS})`, "LIMIT_EXCEEDED");
  const out: CheckpointSpec[] = [];
  list.forEach((item, i) => {
    if (item === null) return; // c.array named it
    const p = childPath(path, i);
    const o = c.object(item, p, ["name", "after"]);
    if (!o) return;
    const name = c.requiredString(o, "name", p, { pattern: CHECKPOINT_NAME });
    if (name !== undefined && out.some((x) => x.name === name)) c.add(childPath(p, "name"), `checkpoint "${name}" is named twice`, "RUN_INVALID");
    const ap = childPath(p, "after");
    const a = c.object(c.required(o, "after", p), ap, ["step", "output", "contains"]);
    if (!a || name === undefined) return;
    if (a.step !== undefined) {
      if (a.output !== undefined || a.contains !== undefined) c.add(ap, "a checkpoint follows either {step} or {output, contains}", "RUN_INVALID");
      const step = c.integer(a.step, childPath(ap, "step"), { min: 0 });
      if (step === undefined) return;
      const target = steps[step];
      if (target === undefined) {
        c.add(
          childPath(ap, "step"),
          `step ${step} does not exist: ${stepsPath} has ${steps.length} step${steps.length === 1 ? "" : "s"} (0 to ${steps.length - 1})`,
          "RUN_INVALID",
        );
        return;
      }
      if (target.action === "network-down" || target.action === "network-up") {
        c.add(
          childPath(ap, "step"),
          `step ${step} (${target.action}) writes no record for the host to follow; checkpoint after the step that comes next`,
          "RUN_INVALID",
        );
        return;
      }
      out.push({ name, after: { kind: "step", step } });
      return;
    }
    const stream = c.requiredString(a, "output", ap, { pattern: /^(stdout|stderr)$/ });
    const contains = c.requiredString(a, "contains", ap, { nonEmpty: true });
    if (contains !== undefined && Buffer.byteLength(contains) > MAX_PATTERN)
      c.add(childPath(ap, "contains"), `limit run.pattern-bytes exceeded (${MAX_PATTERN})`, "LIMIT_EXCEEDED");
    if (stream === undefined || contains === undefined) return;
    out.push({ name, after: { kind: "output", stream: stream as StreamName, contains } });
  });
  return out;
}

/**
 * `cairn run --checkpoint-every N`: a spec's model with a checkpoint after
 * every Nth step (steps N-1, 2N-1, …; a network step writes no record, so
 * the next step that does stands for it), named `step-I` by the step's
 * index. The run section gets them as if written there, so the record, its
 * lock and its replay all see the same run section. A spec that declares
 * checkpoints already is refused: one or the other.
 */
export function withCheckpointEvery(spec: JsonModel, every: number): JsonModel {
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) return spec; // the spec parser names it
  const run = spec.run;
  const section = typeof run === "object" && run !== null && !Array.isArray(run) ? run : {};
  if (section.checkpoints !== undefined)
    throw new CairnError("USAGE", "the spec declares run.checkpoints already; --checkpoint-every adds them", { path: "--checkpoint-every" });
  const steps = Array.isArray(section.steps) ? section.steps : [{ action: "start" }, { action: "close-stdin" }];
  const checkpoints: JsonModel[] = [];
  let due = false;
  steps.forEach((s, i) => {
    if ((i + 1) % every === 0) due = true;
    const action = typeof s === "object" && s !== null && !Array.isArray(s) ? s.action : undefined;
    if (due && action !== "network-down" && action !== "network-up") {
      checkpoints.push({ name: `step-${i}`, after: { step: i } });
      due = false;
    }
  });
  return { ...spec, run: { ...section, checkpoints } };
}
