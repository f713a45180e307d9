/**
 * The `run` section of a workload spec, parsed strictly: the scenario the
 * agent plays inside the guest (steps with triggers) and the application
 * assertions the host-side checker owns. The section is not part of the
 * workload identity; it is part of the run's recorded inputs (it travels in
 * the initramfs as /cairn/inputs, so the initramfs digest covers it).
 *
 *   run:
 *     steps:
 *       - action: start
 *       - action: write-stdin
 *         data: "ping\n"
 *         after: { output: stdout, contains: "ready" }
 *       - action: close-stdin
 *         after: { event: input-accepted }
 *     expect:
 *       - invocation: 1
 *         exit-code: 0
 *         stdout-lines: ["pong"]
 *     limits: { output-bytes: 1048576, time-ms: 60000 }
 */
import { Checker, childPath, parseSha256, type JsonModel, type Sha256Digest } from "../core/index.ts";
import { isCanonicalPath } from "../tree/index.ts";
import { parseCheckpoints, type CheckpointSpec, type StreamName } from "./checkpoint-spec.ts";
import { parseNetworkSpec, type NetworkSpec } from "./network-spec.ts";
import { IMAGE_BYTES, IMAGE_BYTES_CEILING, type GuestRoot } from "./sizing.ts";
import { EVENT_NAMES, LAUNCH_STAGES, type EventName } from "./wire.ts";

export { EVENT_NAMES };
export type { EventName };

export type { StreamName };

export type Trigger =
  | { readonly kind: "none" }
  | { readonly kind: "event"; readonly event: EventName }
  | { readonly kind: "output"; readonly stream: StreamName; readonly contains: string };

export type Step =
  | { readonly action: "start"; readonly after: Trigger }
  | { readonly action: "write-stdin"; readonly after: Trigger; readonly data: Uint8Array; readonly offset: number }
  | { readonly action: "close-stdin"; readonly after: Trigger }
  | { readonly action: "terminate"; readonly after: Trigger }
  /** `run.network` only: the guest's eth0 goes down (every route through it gone) or up again (issue 14 item 3). */
  | { readonly action: NetworkAction; readonly after: Trigger };

export type NetworkAction = "network-down" | "network-up";

export interface Expectation {
  readonly invocation: number;
  readonly exitCode?: number;
  readonly signal?: number;
  readonly stdoutLines?: readonly string[];
  readonly stderrLines?: readonly string[];
  readonly stdoutIncludes?: readonly string[];
  readonly stderrIncludes?: readonly string[];
  readonly stdoutSha256?: Sha256Digest;
  readonly stderrSha256?: Sha256Digest;
  /** The stage at which this invocation is expected to fail to launch (a launch failure not expected fails the run). */
  readonly launchFailure?: string;
}

/** Named limits of one run, each with a default (docs/runs.md lists them). */
export interface RunLimits {
  /** Output bytes per invocation, stdout and stderr together. */
  readonly outputBytes: number;
  /** Guest (virtual, icount) milliseconds per invocation. */
  readonly timeMs: number;
  /** stdin bytes queued in the agent but not yet accepted by the pipe. */
  readonly stdinQueueBytes: number;
  /** Largest output frame payload. */
  readonly frameBytes: number;
  /**
   * `vm.image-bytes` as the spec names it: the workload's file bytes, then the
   * root disk, then the whole initramfs (host, before launch). Absent: the
   * default of the root used (sizing.ts `IMAGE_BYTES`), which a spec that
   * names no number cannot know before the tree's size is.
   */
  readonly imageBytes?: number;
}

export const DEFAULT_RUN_LIMITS: RunLimits = {
  outputBytes: 16 * 1024 * 1024,
  timeMs: 60_000,
  stdinQueueBytes: 1024 * 1024,
  frameBytes: 4096,
};
/** `run.memory-mib` bounds: below 128 MiB the kernel and agent alone do not fit; above 16 GiB is not a test VM. */
export const MEMORY_MIB_RANGE = { min: 128, max: 16384 } as const;
export const MAX_FRAME_BYTES = 4096;
const MAX_STEPS = 4096;
const MAX_PATTERN = 256;

export interface Scenario {
  readonly steps: readonly Step[];
  readonly expect: readonly Expectation[];
  readonly limits: RunLimits;
  /**
   * `run.verify-tree`: what the agent checks of the template before the first
   * start. Absent (`metadata`): every path, type, mode, owner, size and symlink
   * target. `content`: also every file's SHA-256, hashed in the guest.
   */
  readonly verifyTree?: "content";
  /** `run.memory-mib`: guest RAM. Absent: sized from the guest image (guest.ts `defaultMemoryMib`). */
  readonly memoryMib?: number;
  /**
   * `run.root`: where the guest's workload template lives. `initramfs`: in
   * guest RAM, copied per start; `disk`: a read-only EROFS disk, overlaid per
   * start. Absent: chosen from the tree's size (guest.ts `chooseRoot`).
   */
  readonly root?: GuestRoot;
  /**
   * `run.proc: true`: the workload's root gets /proc (processes of its own
   * uid only, `hidepid=2`) and a read-only /sys. `run.urandom: true`: its
   * /dev gets `random` and `urandom`. Both off by default; either is written
   * into the guest image (`/cairn/overlay`), so the image digest in the VM
   * identity covers it.
   */
  readonly proc?: true;
  readonly urandom?: true;
  /**
   * `run.inputs`: host files or directories copied into the run's input
   * tree (run-inputs.ts) and seen by the workload at `to`. Absent: none.
   */
  readonly inputs?: readonly RunInput[];
  /** `run.network` (network-spec.ts): one NIC and the host responders the guest may reach. */
  readonly network?: NetworkSpec;
  /**
   * `run.checkpoints` (checkpoint-spec.ts): where the host saves the VM while
   * recording. Not in the guest image: a host-side act, ignored by replay.
   */
  readonly checkpoints?: readonly CheckpointSpec[];
}

/** One `run.inputs` entry: `from` a host path (relative to the spec's directory), `to` an absolute path in the workload's root. */
export interface RunInput {
  readonly from: string;
  readonly to: string;
}

/** `run.inputs`: at most this many entries (a fixed limit). */
export const MAX_RUN_INPUTS = 64;
/** Where no input may go: the runtime overlay owns these (initramfs.ts), whether or not `run.proc` is set. */
const OVERLAY_OWNED = ["/tmp", "/dev", "/proc", "/sys"];

export type { GuestRoot };
export const GUEST_ROOTS: readonly GuestRoot[] = ["initramfs", "disk"];

/** Used when a spec has no `run` section: start once, close stdin, expect exit code 0. */
export const DEFAULT_SCENARIO: Scenario = {
  steps: [
    { action: "start", after: { kind: "none" } },
    { action: "close-stdin", after: { kind: "none" } },
  ],
  expect: [{ invocation: 1, exitCode: 0 }],
  limits: DEFAULT_RUN_LIMITS,
};

const STEP_KEYS = ["action", "after", "data", "offset"];
const EXPECT_KEYS = [
  "invocation",
  "exit-code",
  "signal",
  "stdout-lines",
  "stderr-lines",
  "stdout-includes",
  "stderr-includes",
  "stdout-sha256",
  "stderr-sha256",
  "launch-failure",
];
const LIMIT_KEYS = ["output-bytes", "time-ms", "stdin-queue-bytes", "frame-bytes", "image-bytes"];

function parseTrigger(c: Checker, v: JsonModel | undefined, path: string): Trigger {
  if (v === undefined) return { kind: "none" };
  const o = c.object(v, path, ["event", "output", "contains"]);
  if (!o) return { kind: "none" };
  if (o.event !== undefined) {
    if (o.output !== undefined || o.contains !== undefined) c.add(path, "a trigger is either {event} or {output, contains}", "MODEL_VALUE");
    const e = c.string(o.event, childPath(path, "event"));
    if (e !== undefined && !(EVENT_NAMES as readonly string[]).includes(e)) {
      c.add(childPath(path, "event"), `unknown event; expected one of ${EVENT_NAMES.join(", ")}`, "MODEL_VALUE");
      return { kind: "none" };
    }
    return e === undefined ? { kind: "none" } : { kind: "event", event: e as EventName };
  }
  const stream = c.requiredString(o, "output", path, { pattern: /^(stdout|stderr)$/ });
  const contains = c.requiredString(o, "contains", path, { nonEmpty: true });
  if (contains !== undefined && Buffer.byteLength(contains) > MAX_PATTERN) {
    c.add(childPath(path, "contains"), `limit run.pattern-bytes exceeded (${MAX_PATTERN})`, "LIMIT_EXCEEDED");
  }
  if (stream === undefined || contains === undefined) return { kind: "none" };
  return { kind: "output", stream: stream as StreamName, contains };
}

/**
 * Parses a step list. `from`: where the agent stands when these steps begin
 * (a branch's tail, branch-scenario.ts): how many starts came before, and
 * the stdin offset the current invocation has reached; a run's own steps
 * begin at boot (none, 0).
 */
export function parseSteps(c: Checker, v: JsonModel | undefined, path: string, from = { started: 0, offset: 0 }): Step[] {
  const given = c.array(v, path);
  const list = given ?? [];
  if (list.length > MAX_STEPS) c.add(path, `limit run.steps exceeded (${list.length} > ${MAX_STEPS})`, "LIMIT_EXCEEDED");
  const steps: Step[] = [];
  let started = from.started;
  let offset = from.offset;
  list.forEach((item, i) => {
    if (item === null) return; // c.array named it
    const p = childPath(path, i);
    const o = c.object(item, p, STEP_KEYS);
    if (!o) return;
    const action = c.requiredString(o, "action", p, {
      pattern: /^(start|write-stdin|close-stdin|terminate|network-down|network-up)$/,
    });
    let after = parseTrigger(c, o.after, childPath(p, "after"));
    if (action !== "write-stdin" && (o.data !== undefined || o.offset !== undefined)) {
      c.add(p, `"data" and "offset" belong to write-stdin steps only`, "MODEL_VALUE");
    }
    if (action === "start") {
      // a restart waits for the previous invocation's cleanup unless told otherwise
      if (started > 0 && o.after === undefined) after = { kind: "event", event: "cleanup-complete" };
      started++;
      offset = 0;
      steps.push({ action, after });
    } else if (action === "network-down" || action === "network-up") {
      // the network belongs to the boot, not to an invocation: allowed before the first start too
      steps.push({ action, after });
    } else if (action !== undefined) {
      if (started === 0) c.add(childPath(p, "action"), `"${action}" before any start`, "MODEL_VALUE");
      if (action === "write-stdin") {
        const text = c.requiredString(o, "data", p, { nonEmpty: true });
        const data = Buffer.from(text ?? "", "utf8");
        if (o.offset !== undefined) {
          const declared = c.integer(o.offset, childPath(p, "offset"), { min: 0 });
          if (declared !== undefined && declared !== offset) {
            c.add(childPath(p, "offset"), `stdin offset ${declared} does not continue the stream (expected ${offset})`, "MODEL_VALUE");
          }
        }
        steps.push({ action, after, data, offset });
        offset += data.length;
      } else {
        steps.push({ action: action as "close-stdin" | "terminate", after });
      }
    }
  });
  // network steps belong to the boot and may come first; the first other step must be a start
  // (a step before it was named "… before any start" above; a list of network steps alone is named here, once)
  if (
    started === 0 &&
    from.started === 0 &&
    list.length > 0 &&
    steps.length === list.length &&
    steps.every((s) => s.action === "network-down" || s.action === "network-up")
  )
    c.add(childPath(path, 0), "the first step must be a start", "MODEL_VALUE");
  if (given !== undefined && list.length === 0)
    c.add(path, "a scenario needs at least one step (leave steps out for the default: start, close-stdin)", "MODEL_VALUE");
  return steps;
}

function lines(c: Checker, v: JsonModel | undefined, path: string): string[] | undefined {
  return v === undefined ? undefined : c.stringArray(v, path);
}

function digest(c: Checker, v: JsonModel | undefined, path: string): Sha256Digest | undefined {
  if (v === undefined) return undefined;
  try {
    return parseSha256(v, path);
  } catch {
    c.add(path, "expected a sha256:<64 hex> digest", "DIGEST_INVALID");
    return undefined;
  }
}

export function parseExpect(c: Checker, v: JsonModel | undefined, path: string, invocations: number): Expectation[] {
  const out: Expectation[] = [];
  (c.array(v, path) ?? []).forEach((item, i) => {
    if (item === null) return; // c.array named it
    const p = childPath(path, i);
    const o = c.object(item, p, EXPECT_KEYS);
    if (!o) return;
    const invocation = o.invocation === undefined ? 1 : c.integer(o.invocation, childPath(p, "invocation"), { min: 1, max: invocations });
    if (invocation === undefined) return;
    const e: { -readonly [K in keyof Expectation]: Expectation[K] } = { invocation };
    if (o["exit-code"] !== undefined) e.exitCode = c.integer(o["exit-code"], childPath(p, "exit-code"), { min: 0, max: 255 });
    if (o.signal !== undefined) e.signal = c.integer(o.signal, childPath(p, "signal"), { min: 1, max: 64 });
    e.stdoutLines = lines(c, o["stdout-lines"], childPath(p, "stdout-lines"));
    e.stderrLines = lines(c, o["stderr-lines"], childPath(p, "stderr-lines"));
    e.stdoutIncludes = lines(c, o["stdout-includes"], childPath(p, "stdout-includes"));
    e.stderrIncludes = lines(c, o["stderr-includes"], childPath(p, "stderr-includes"));
    e.stdoutSha256 = digest(c, o["stdout-sha256"], childPath(p, "stdout-sha256"));
    e.stderrSha256 = digest(c, o["stderr-sha256"], childPath(p, "stderr-sha256"));
    if (o["launch-failure"] !== undefined) {
      const stages = Object.values(LAUNCH_STAGES);
      const stage = c.string(o["launch-failure"], childPath(p, "launch-failure"));
      if (stage !== undefined && !stages.includes(stage))
        c.add(childPath(p, "launch-failure"), `unknown launch stage; expected one of ${stages.join(", ")}`, "MODEL_VALUE");
      else e.launchFailure = stage;
    }
    for (const k of Object.keys(e) as (keyof Expectation)[]) if (e[k] === undefined) delete e[k];
    out.push(e);
  });
  return out;
}

function parseLimits(c: Checker, v: JsonModel | undefined, path: string): RunLimits {
  if (v === undefined) return DEFAULT_RUN_LIMITS;
  const o = c.object(v, path, LIMIT_KEYS);
  if (!o) return DEFAULT_RUN_LIMITS;
  const get = (key: string, fallback: number, max: number): number =>
    o[key] === undefined ? fallback : (c.integer(o[key], childPath(path, key), { min: 1, max }) ?? fallback);
  // image-bytes may say up to a root disk's ceiling; with no number the root's own default applies (sizing.ts)
  const image = o["image-bytes"] === undefined ? undefined : c.integer(o["image-bytes"], childPath(path, "image-bytes"), { min: 1, max: IMAGE_BYTES_CEILING });
  return {
    outputBytes: get("output-bytes", DEFAULT_RUN_LIMITS.outputBytes, 1024 * 1024 * 1024),
    timeMs: get("time-ms", DEFAULT_RUN_LIMITS.timeMs, 24 * 3600 * 1000),
    stdinQueueBytes: get("stdin-queue-bytes", DEFAULT_RUN_LIMITS.stdinQueueBytes, 64 * 1024 * 1024),
    frameBytes: get("frame-bytes", DEFAULT_RUN_LIMITS.frameBytes, MAX_FRAME_BYTES),
    ...(image !== undefined ? { imageBytes: image } : {}),
  };
}

function parseInputs(c: Checker, v: JsonModel | undefined, path: string): RunInput[] {
  const list = c.array(v, path) ?? [];
  if (list.length > MAX_RUN_INPUTS) c.add(path, `limit run.inputs exceeded (${list.length} > ${MAX_RUN_INPUTS})`, "LIMIT_EXCEEDED");
  const out: RunInput[] = [];
  list.forEach((item, i) => {
    if (item === null) return; // c.array named it
    const p = childPath(path, i);
    const o = c.object(item, p, ["from", "to"]);
    if (!o) return;
    const from = c.requiredString(o, "from", p, { nonEmpty: true });
    const to = c.requiredString(o, "to", p, { nonEmpty: true });
    if (from?.includes("\0")) c.add(childPath(p, "from"), "a host path cannot contain NUL", "RUN_INVALID");
    if (to === undefined || from === undefined) return;
    // the guest path decides where bytes land in the workload's root: only a normalized absolute path, never "/" or the overlay's own
    if (!isCanonicalPath(to) || to === "/") {
      c.add(childPath(p, "to"), 'expected an absolute, normalized path other than "/" (no "..", ".", "//" or trailing "/")', "RUN_INVALID");
      return;
    }
    const owned = OVERLAY_OWNED.find((d) => to === d || to.startsWith(`${d}/`));
    if (owned !== undefined) {
      c.add(childPath(p, "to"), `${owned} is provided by the guest at run time; an input cannot go there`, "RUN_INVALID");
      return;
    }
    const other = out.findIndex((x) => x.to === to || x.to.startsWith(`${to}/`) || to.startsWith(`${x.to}/`));
    if (other >= 0) {
      c.add(childPath(p, "to"), `overlaps /run/inputs/${other}/to (${out[other]!.to}); each input needs its own place`, "RUN_INVALID");
      return;
    }
    out.push({ from, to });
  });
  return out;
}

/**
 * Parses a spec's raw `run` section (`undefined` → the default scenario).
 * `path` is the JSON pointer of the section in the spec ("/run").
 */
export function parseScenario(unsafeRun: JsonModel | undefined, path = "/run"): Scenario {
  if (unsafeRun === undefined) return DEFAULT_SCENARIO;
  const c = new Checker("RUN_INVALID");
  const o = c.object(unsafeRun, path, [
    "steps",
    "expect",
    "limits",
    "verify-tree",
    "memory-mib",
    "root",
    "proc",
    "urandom",
    "inputs",
    "network",
    "checkpoints",
  ]);
  if (!o) {
    c.done("invalid run section");
    return DEFAULT_SCENARIO;
  }
  // a partial section fills in what it leaves out: without steps, the default scenario's steps (and, with
  // no expect either, its expectation), so `run: {limits: …}` is the default run under those limits
  const steps = o.steps === undefined ? [...DEFAULT_SCENARIO.steps] : parseSteps(c, o.steps, childPath(path, "steps"));
  const invocations = steps.filter((s) => s.action === "start").length;
  const expect =
    o.expect === undefined
      ? o.steps === undefined
        ? [...DEFAULT_SCENARIO.expect]
        : []
      : parseExpect(c, o.expect, childPath(path, "expect"), Math.max(invocations, 1));
  const limits = parseLimits(c, o.limits, childPath(path, "limits"));
  const verify = o["verify-tree"] === undefined ? "metadata" : c.string(o["verify-tree"], childPath(path, "verify-tree"));
  if (verify !== undefined && verify !== "metadata" && verify !== "content")
    c.add(childPath(path, "verify-tree"), 'expected "metadata" (the default) or "content"', "RUN_INVALID");
  const memory = o["memory-mib"] === undefined ? undefined : c.integer(o["memory-mib"], childPath(path, "memory-mib"), MEMORY_MIB_RANGE);
  const rootName = o.root === undefined ? undefined : c.string(o.root, childPath(path, "root"));
  const root = GUEST_ROOTS.find((r) => r === rootName);
  if (rootName !== undefined && root === undefined)
    c.add(childPath(path, "root"), 'expected "initramfs" or "disk" (absent: chosen from the tree\'s size)', "RUN_INVALID");
  const initramfsMax = IMAGE_BYTES.initramfs.ceiling;
  if (root === "initramfs" && limits.imageBytes !== undefined && limits.imageBytes > initramfsMax)
    c.add(
      childPath(childPath(path, "limits"), "image-bytes"),
      `an initramfs root lives in guest RAM and holds at most ${initramfsMax} bytes (1 GiB); use root: disk for a larger image`,
      "LIMIT_EXCEEDED",
    );
  const proc = o.proc === undefined ? false : c.boolean(o.proc, childPath(path, "proc"));
  const urandom = o.urandom === undefined ? false : c.boolean(o.urandom, childPath(path, "urandom"));
  const inputs = o.inputs === undefined ? [] : parseInputs(c, o.inputs, childPath(path, "inputs"));
  const network = parseNetworkSpec(c, o.network, childPath(path, "network"));
  steps.forEach((s, i) => {
    if (network === undefined && (s.action === "network-down" || s.action === "network-up"))
      c.add(childPath(childPath(path, "steps"), i), `"${s.action}" needs run.network (the guest has no NIC without it)`, "RUN_INVALID");
  });
  const checkpoints = o.checkpoints === undefined ? [] : parseCheckpoints(c, o.checkpoints, childPath(path, "checkpoints"), steps, childPath(path, "steps"));
  c.done("invalid run section", "see docs/runs.md for the run section's format");
  return {
    steps,
    expect,
    limits,
    ...(verify === "content" ? { verifyTree: "content" as const } : {}),
    ...(memory !== undefined ? { memoryMib: memory } : {}),
    ...(root !== undefined ? { root } : {}),
    ...(proc === true ? { proc: true as const } : {}),
    ...(urandom === true ? { urandom: true as const } : {}),
    ...(inputs.length > 0 ? { inputs } : {}),
    ...(network !== undefined ? { network } : {}),
    ...(checkpoints.length > 0 ? { checkpoints } : {}),
  };
}
