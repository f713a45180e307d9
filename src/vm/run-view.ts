/**
 * What a picture of a run shows (`cairn runs show RUN --html` and
 * `--trace`), read once from the run directory through the readers `runs
 * show`, `replay` and receipts use, so a page never says more than they do:
 *
 *   - the summary and its check (run-summary.ts `describeRun`: a tampered
 *     directory is shown as tampered, nothing it says believed);
 *   - the timeline: every entry of events.json in order, each with its
 *     invocation and what it was (a step's effect, an outcome, a fault, the
 *     end). The guest's events carry no time (they are deterministic facts),
 *     so the timeline's axis is their order, and the page says so; the run's
 *     measures are beside it: guest instructions (from the replay log,
 *     deterministic) and the record's host wall and CPU time (cost.json,
 *     not deterministic);
 *   - per invocation its exit and stream sizes and digests; the bytes only
 *     with `private` (the streams are private files, 0600), as an excerpt of
 *     at most `picture.excerpt-bytes` that says how much it leaves out;
 *   - the identities, each with what it covers and does not, in the words of
 *     its scope in the code (the same source as docs/identities.md);
 *   - each replay: its verdict as `runs list` gives it, and for one that did
 *     not match, the first field that differs, found by the comparison
 *     `cairn replay` decides by (replay-diff.ts), with both values.
 */
import { closeSync, existsSync, fstatSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import {
  CairnError,
  canonicalize,
  checkLimit,
  isCairnError,
  isJsonObject,
  openForRead,
  parseJsonBytes,
  readFileBounded,
  readFullyAt,
  type IdentityDeclaration,
  type IdentityScope,
} from "../core/index.ts";
import { FS_IDENTITY } from "../tree/index.ts";
import {
  LAUNCH_IDENTITY,
  LAUNCH_IDENTITY_SCOPE,
  SOURCE_IDENTITY,
  SOURCE_IDENTITY_SCOPE,
  WORKLOAD_IDENTITY,
  WORKLOAD_IDENTITY_SCOPE,
} from "../workload/index.ts";
import { afterText } from "./checkpoint-spec.ts";
import { OUTCOME_IDENTITY, OUTCOME_SCOPE } from "./checker.ts";
import { firstListDifference, valueAt } from "./replay-diff.ts";
import { guestInstructions } from "./replay-log.ts";
import { readRecordedList, readRunManifest, RUN_READ_LIMITS } from "./replay-run.ts";
import { readRunNetwork, type RunNetworkFacts } from "./run-facts.ts";
import { firstDifference, readRunCost } from "./run-receipt.ts";
import { describeRun, type DescribeOptions, type ReplayShown, type RunSummary } from "./run-summary.ts";
import { RUN_FILES } from "./rundir.ts";
import { VM_IDENTITY, VM_IDENTITY_SCOPE } from "./vmid.ts";

/** Bounds of a picture: a run's events are drawn one mark each, and an excerpt is a preview, not the stream. */
export const PICTURE_LIMITS = {
  /** Events drawn on one timeline; a run with more is refused, naming the limit (a page of 10^6 marks helps nobody). */
  "picture.events": 20_000,
  /** Bytes of each private stream shown as an excerpt (with `private` only). */
  "picture.excerpt-bytes": 4096,
} as const;

/** What an event on the timeline was: the effect of a scenario step, an invocation's outcome, a fault, or the run's end. */
export type TimelineKind = "step" | "outcome" | "fault" | "end" | "other";

export interface TimelineItem {
  /** Its position in events.json (the record's `/events/<index>`). */
  readonly index: number;
  readonly invocation: number;
  readonly event: string;
  readonly kind: TimelineKind;
  /** The event in words ("exit 0 (stdout 12 B, stderr 0 B)"). */
  readonly label: string;
  /** The event as recorded (canonical JSON). */
  readonly json: string;
}

export interface StreamShown {
  readonly bytes: number | null;
  readonly sha256: string | null;
  /** With `private`: the first bytes as text; null otherwise or when the file is absent. */
  readonly excerpt: string | null;
  /** Bytes the excerpt shows (0 without one). */
  readonly shown: number;
}

export interface InvocationShown {
  readonly invocation: number;
  /** Index of its first and last event on the timeline. */
  readonly first: number;
  readonly last: number;
  /** How it ended, in words, or "no exit recorded". */
  readonly ended: string;
  readonly stdout: StreamShown;
  readonly stderr: StreamShown;
}

export interface IdentityShown {
  readonly name: string;
  readonly tag: string;
  readonly digest: string;
  /** [field, why] pairs of its scope; one pseudo-entry for an identity framed as a whole. */
  readonly covers: ReadonlyArray<readonly [string, string]>;
  readonly excludes: ReadonlyArray<readonly [string, string]>;
}

export interface ReplayPicture {
  /** The replay directory's number (replays/N). */
  readonly n: number;
  readonly verdict: ReplayShown;
  /** For a replay that did not match (or whose claimed match its files contradict): the first field that differs, else null. */
  readonly difference: { readonly pointer: string; readonly recorded: string; readonly replayed: string; readonly event: number | null } | null;
  /** What could not be compared, in words (its files unreadable, no result); null when nothing. */
  readonly note: string | null;
}

export interface RunView {
  readonly summary: RunSummary;
  /** When a replay is drawn: its number and the status its result.json gives (null when it left none). */
  readonly replay: { readonly n: number; readonly status: string | null } | null;
  readonly items: readonly TimelineItem[];
  readonly invocations: readonly InvocationShown[];
  readonly assertions: ReadonlyArray<{
    readonly invocation: number;
    readonly check: string;
    readonly ok: boolean;
    readonly expected: string;
    readonly actual: string;
  }>;
  /** Checkpoints the record took (run.json `/checkpoints/taken`), each at its guest instruction count; empty without. */
  readonly checkpoints: ReadonlyArray<{ readonly name: string; readonly after: string; readonly icount: number }>;
  /** Guest instructions executed (replay log), null when the log is not one cairn frames exactly or is absent. */
  readonly guest_instructions: number | null;
  readonly cost: { readonly wall_ms: number | null; readonly host_cpu_ms: number | null };
  readonly network: RunNetworkFacts | null;
  readonly identities: readonly IdentityShown[];
  readonly replays: readonly ReplayPicture[];
  /** Whether private stream excerpts are included. */
  readonly private: boolean;
}

export interface RunViewOptions extends DescribeOptions {
  /** Include excerpts of the private output streams. */
  readonly private?: boolean;
  /**
   * Draw this replay (replays/N) instead of the record: its events,
   * assertions and streams on the timeline, its verdict and first
   * difference; the identities and the run's check are the record's.
   */
  readonly replay?: number;
}

const STEP_EVENTS = new Set(["start", "stdin-closed", "input-accepted", "input-rejected", "requested-termination"]);
const FAULT_EVENTS = new Set(["launch-failure", "infra-failure"]);

function kindOf(event: string): TimelineKind {
  if (STEP_EVENTS.has(event)) return "step";
  if (FAULT_EVENTS.has(event)) return "fault";
  if (event === "exit" || event === "cleanup-complete") return "outcome";
  if (event === "final") return "end";
  return "other";
}

const num = (v: unknown): string => (typeof v === "number" ? String(v) : "?");
const streamBytes = (v: unknown): string => (isJsonObject(v) ? `${num(v.bytes)} B` : "?");

/** An event in words, from its recorded fields (never trusted to have them: a missing one shows as "?"). */
function labelOf(e: Record<string, unknown>): string {
  switch (e.event) {
    case "start":
      return "start";
    case "stdin-closed":
      return "stdin closed";
    case "requested-termination":
      return "termination requested";
    case "input-accepted":
    case "input-rejected":
      return `input ${e.event === "input-accepted" ? "accepted" : "rejected"} (${num(e.length)} B at ${num(e.offset)})`;
    case "exit":
      return `${e.kind === "signaled" ? `signal ${num(e.code)}` : `exit ${num(e.code)}`} (stdout ${streamBytes(e.stdout)}, stderr ${streamBytes(e.stderr)})`;
    case "launch-failure":
      return `launch failed at ${String(e.stage)} (errno ${num(e.errno)})`;
    case "cleanup-complete":
      return `cleanup complete (${num(e.reaped)} reaped)`;
    case "infra-failure":
      return `infrastructure failure ${String(e.reason)} (${num(e.detail)})`;
    case "final":
      return `final: ${String(e.status)}, ${num(e.invocations)} invocation(s)`;
    default:
      return String(e.event);
  }
}

function timeline(events: readonly unknown[], file: string): TimelineItem[] {
  checkLimit("picture.events", events.length, PICTURE_LIMITS["picture.events"], file, "count");
  return events.map((e, index) => {
    if (!isJsonObject(e) || typeof e.event !== "string" || typeof e.invocation !== "number" || !Number.isSafeInteger(e.invocation) || e.invocation < 0)
      throw new CairnError("RUN_INVALID", `${file}: entry ${index} is not an event (an object with an invocation number and an event name)`, {
        path: `${file}#/${index}`,
      });
    return { index, invocation: e.invocation, event: e.event, kind: kindOf(e.event), label: labelOf(e), json: canonicalize(e) };
  });
}

/** The first `max` bytes of a private stream file, or null when it is absent or not a regular file. */
function excerpt(file: string, max: number): { text: string; shown: number } | null {
  if (!existsSync(file) || !lstatSync(file).isFile()) return null;
  const fd = openForRead(file);
  try {
    if (!fstatSync(fd).isFile()) return null;
    const buf = Buffer.alloc(max);
    const n = readFullyAt(fd, buf, 0);
    return { text: buf.subarray(0, n).toString("utf8"), shown: n };
  } finally {
    closeSync(fd);
  }
}

function streamOf(runDir: string, inv: number, name: "stdout" | "stderr", facts: unknown, priv: boolean): StreamShown {
  const f = isJsonObject(facts) ? facts : {};
  const bytes = typeof f.bytes === "number" ? f.bytes : null;
  const sha256 = typeof f.sha256 === "string" ? f.sha256 : null;
  const dir = join(runDir, RUN_FILES.streams);
  // a streams/ that is a symlink is not the run's: nothing is read through it (a page must not show another directory's files)
  const ours = priv && existsSync(dir) && lstatSync(dir).isDirectory();
  const ex = ours ? excerpt(join(dir, `${inv}.${name}`), PICTURE_LIMITS["picture.excerpt-bytes"]) : null;
  return { bytes, sha256, excerpt: ex?.text ?? null, shown: ex?.shown ?? 0 };
}

function invocationsOf(runDir: string, items: readonly TimelineItem[], events: readonly unknown[], priv: boolean): InvocationShown[] {
  const ids = [...new Set(items.filter((i) => i.invocation > 0).map((i) => i.invocation))].sort((a, b) => a - b);
  return ids.map((inv) => {
    const mine = items.filter((i) => i.invocation === inv);
    const exit = mine.find((i) => i.event === "exit" || i.event === "launch-failure");
    const facts = exit !== undefined && exit.event === "exit" ? (events[exit.index] as Record<string, unknown>) : {};
    return {
      invocation: inv,
      first: mine[0]!.index,
      last: mine.at(-1)!.index,
      ended: exit?.label ?? "no exit recorded",
      stdout: streamOf(runDir, inv, "stdout", facts.stdout, priv),
      stderr: streamOf(runDir, inv, "stderr", facts.stderr, priv),
    };
  });
}

function shown(decl: IdentityDeclaration, digest: string | null, scope?: IdentityScope): IdentityShown | null {
  if (digest === null) return null;
  return {
    name: decl.name,
    tag: decl.tag,
    digest,
    covers: scope !== undefined ? Object.entries(scope.covers) : [["(every entry)", "the whole tree, by its binary framing (docs/identities.md)"]],
    excludes: scope !== undefined ? Object.entries(scope.excludes) : [],
  };
}

function identitiesOf(s: RunSummary): IdentityShown[] {
  return [
    shown(WORKLOAD_IDENTITY, s.workload, WORKLOAD_IDENTITY_SCOPE),
    shown(SOURCE_IDENTITY, s.identities.source, SOURCE_IDENTITY_SCOPE),
    shown(FS_IDENTITY, s.identities.fs),
    shown(LAUNCH_IDENTITY, s.identities.launch, LAUNCH_IDENTITY_SCOPE),
    shown(VM_IDENTITY, s.vm_digest, VM_IDENTITY_SCOPE),
    shown(OUTCOME_IDENTITY, s.outcome, OUTCOME_SCOPE),
    s.inputs !== null ? { ...shown(FS_IDENTITY, s.inputs)!, name: "run inputs (canonical filesystem)" } : null,
  ].filter((x): x is IdentityShown => x !== null);
}

function replayNumbers(runDir: string): number[] {
  const base = join(runDir, RUN_FILES.replays);
  if (!existsSync(base) || !lstatSync(base).isDirectory()) return [];
  return readdirSync(base)
    .filter((n) => /^[1-9][0-9]*$/.test(n))
    .map(Number)
    .sort((a, b) => a - b);
}

/** The first field at which a replay's files differ from the record's, compared as `cairn replay` compares them. */
function replayDifference(
  runDir: string,
  replayDir: string,
  recorded: { events: unknown[]; assertions: unknown[] },
): Pick<ReplayPicture, "difference" | "note"> {
  let replayed: { events: unknown[]; assertions: unknown[] };
  try {
    replayed = {
      events: readRecordedList(join(replayDir, RUN_FILES.events)),
      assertions: readRecordedList(join(replayDir, RUN_FILES.assertions)),
    };
  } catch (e) {
    if (!isCairnError(e)) throw e;
    return { difference: null, note: `its events or assertions cannot be read (${e.code}), so where it differs is not known` };
  }
  for (const list of ["events", "assertions"] as const) {
    const i = firstListDifference(recorded[list], replayed[list]);
    if (i < 0) continue;
    const pointer = firstDifference(recorded[list][i], replayed[list][i], `/${list}/${i}`) ?? `/${list}/${i}`;
    const show = (root: unknown) => {
      const v = valueAt({ [list]: root }, pointer);
      return v === undefined ? "(absent)" : canonicalize(v);
    };
    return { difference: { pointer, recorded: show(recorded[list]), replayed: show(replayed[list]), event: list === "events" ? i : null }, note: null };
  }
  // equal events and assertions: the result's own outcome or status is what it says differs
  try {
    const r = parseJsonBytes(readFileBounded(join(replayDir, "result.json"), 64 * 1024, "run.replay-result-bytes"));
    const m = readRunManifest(runDir);
    if (isJsonObject(r)) {
      if (r.outcome !== m.outcome) return { difference: { pointer: "/outcome", recorded: m.outcome, replayed: String(r.outcome), event: null }, note: null };
      if (r.status !== m.status) return { difference: { pointer: "/status", recorded: m.status, replayed: String(r.status), event: null }, note: null };
    }
  } catch (e) {
    if (!isCairnError(e)) throw e;
  }
  return { difference: null, note: "its events and assertions equal the record's; its result says otherwise" };
}

/** Reads everything a picture of `runDir` (or of one of its replays) shows (throws the readers' typed refusals). */
export function runView(runDir: string, opts: RunViewOptions = {}): RunView {
  const summary = describeRun(runDir, opts);
  const manifest = readRunManifest(runDir);
  const numbers = replayNumbers(runDir);
  if (opts.replay !== undefined && !numbers.includes(opts.replay))
    throw new CairnError("RUN_INVALID", `the run has no replay ${opts.replay}`, { path: join(runDir, RUN_FILES.replays, String(opts.replay)) });
  // the directory whose events, assertions and streams are drawn: the record's, or the replay's
  const shownDir = opts.replay === undefined ? runDir : join(runDir, RUN_FILES.replays, String(opts.replay));
  const recorded = { events: readRecordedList(join(runDir, RUN_FILES.events)), assertions: readRecordedList(join(runDir, RUN_FILES.assertions)) };
  const events = opts.replay === undefined ? recorded.events : readRecordedList(join(shownDir, RUN_FILES.events));
  const assertionsList = opts.replay === undefined ? recorded.assertions : readRecordedList(join(shownDir, RUN_FILES.assertions));
  const items = timeline(events, opts.replay === undefined ? RUN_FILES.events : `${RUN_FILES.replays}/${opts.replay}/${RUN_FILES.events}`);
  const priv = opts.private === true;
  let instructions: number | null = null;
  try {
    const log = join(runDir, RUN_FILES.replayLog);
    if (existsSync(log)) instructions = guestInstructions(readFileBounded(log, RUN_READ_LIMITS["run.replay-log-bytes"], "run.replay-log-bytes")) ?? null;
  } catch (e) {
    if (!isCairnError(e)) throw e;
  }
  const replays = summary.replays
    .map((verdict, i): ReplayPicture => {
      const n = numbers[i]!;
      if (verdict === "matched") return { n, verdict, difference: null, note: null };
      if (verdict === "no-result") return { n, verdict, difference: null, note: "it left no result (interrupted, or refused)" };
      return { n, verdict, ...replayDifference(runDir, join(runDir, RUN_FILES.replays, String(n)), recorded) };
    })
    .filter((r) => opts.replay === undefined || r.n === opts.replay);
  let replay: RunView["replay"] = null;
  if (opts.replay !== undefined) {
    let status: string | null = null;
    try {
      const r = parseJsonBytes(readFileBounded(join(shownDir, "result.json"), 64 * 1024, "run.replay-result-bytes"));
      if (isJsonObject(r) && typeof r.status === "string") status = r.status;
    } catch (e) {
      if (!isCairnError(e)) throw e;
    }
    replay = { n: opts.replay, status };
  }
  return {
    summary,
    replay,
    items,
    invocations: invocationsOf(shownDir, items, events, priv),
    assertions: assertionsList.map((a) => {
      const o = isJsonObject(a) ? a : {};
      const text = (v: unknown) => (v === undefined ? "" : canonicalize(v));
      return {
        invocation: typeof o.invocation === "number" ? o.invocation : 0,
        check: String(o.check),
        ok: o.ok === true,
        expected: text(o.expected),
        actual: text(o.actual),
      };
    }),
    // the record's: a replay's own checkpoints and cost are not recorded
    checkpoints: (opts.replay === undefined ? (manifest.checkpoints?.taken ?? []) : []).map((c) => ({
      name: c.name,
      after: afterText(c.after),
      icount: c.icount,
    })),
    guest_instructions: instructions,
    cost: opts.replay === undefined ? readRunCost(runDir) : { wall_ms: null, host_cpu_ms: null },
    network: readRunNetwork(runDir) ?? null,
    identities: identitiesOf(summary),
    replays,
    private: priv,
  };
}
