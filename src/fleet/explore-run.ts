/**
 * `cairn explore RUN --at CHECKPOINT --vary FILE` (issue 35 item 5): many
 * branches from one checkpoint of a recorded run, one per variation of a
 * tail (explore-file.ts), each recorded by `recordBranch` exactly as `cairn
 * branch` records one, run a few at a time on this host (`--jobs`; each is a
 * QEMU). The report says, per variation, the branch's run, its status and
 * exit codes, and whether its outcome differs from the parent's and where:
 * the first differing event (`firstListDifference`, the comparison a replay
 * decides a mismatch by), else the first differing assertion.
 *
 * What it promises: every variation is in the report, in the vary file's
 * order, whether its branch recorded or not (a refusal is reported with its
 * code and pointer, never dropped); a branch is a whole run or absent
 * (recordBranch stages each run and an interrupt removes every staging
 * directory, vm/interrupt.ts); the parent's events and assertions are the
 * ones its run.json's outcome digest names, or nothing is compared with
 * them. Why in the fleet floor: it is many runs as one, above `vm`, like a
 * campaign; it reads its variations with the campaign matrix's own pointer
 * code (matrix.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnError, checkLimit, EXPLORE_LIMITS, isCairnError, type JsonModel, type Sha256Digest } from "../core/index.ts";
import {
  firstListDifference,
  onInterrupt,
  outcomeDigest,
  readRecordedList,
  readRunManifest,
  recordBranch,
  RUN_FILES,
  type AssertionResult,
  type BranchOptions,
  type Kit,
  type NormalizedEvent,
  type RunStatus,
} from "../vm/index.ts";
import { readVaryFile, variations, type Variation } from "./explore-file.ts";

/** Branches recorded at once unless `--jobs` says otherwise: each is a QEMU, and two fit a small host. */
export const DEFAULT_EXPLORE_JOBS = 2;

export interface ExploreOptions extends Omit<BranchOptions, "scenario" | "kit" | "log"> {
  /** The vary file (explore-file.ts). */
  readonly vary: string;
  readonly kit: Kit | (() => Promise<Kit>);
  /** Branches recorded at once; default DEFAULT_EXPLORE_JOBS, at most `explore.jobs`. */
  readonly jobs?: number;
  /** Progress, each line naming the variation it is about. */
  readonly log?: (line: string) => void;
  /** Called as each variation ends (in the order they end). */
  readonly onBranch?: (row: ExploreBranch) => void;
}

/** How a branch's outcome stands against the parent's. */
export interface ExploreDifference {
  readonly from_parent: boolean;
  /** Where it first differs: `/events/N` (the first differing event), `/assertions/N`, or `/outcome`; null when it does not. */
  readonly at: string | null;
}

/** One variation's line of the report. */
export interface ExploreBranch {
  readonly variation: string;
  readonly set: readonly { readonly pointer: string; readonly value: JsonModel }[];
  /** The branch's run id and directory; null when it did not record. */
  readonly run_id: string | null;
  readonly run_dir: string | null;
  /** The run's status, or `not-recorded` (then `error` says why). */
  readonly status: RunStatus | "not-recorded";
  /** Per invocation that ended: its exit code, or `signal N`. */
  readonly exit_codes: readonly (number | string)[];
  readonly outcome: Sha256Digest | null;
  readonly differs: ExploreDifference | null;
  readonly error: { readonly code: string; readonly message: string; readonly path: string | null } | null;
}

export interface ExploreResult {
  readonly parent: { readonly run_id: string; readonly status: RunStatus; readonly outcome: Sha256Digest; readonly checkpoint: string };
  readonly vary: string;
  readonly jobs: number;
  readonly branches: readonly ExploreBranch[];
  readonly counts: { readonly variations: number; readonly recorded: number; readonly not_recorded: number; readonly differ: number };
}

/** The parent's recorded lists, checked to be the ones its outcome digest names (else the comparison would be with an edited file). */
function parentLists(runDir: string, outcome: Sha256Digest): { events: unknown[]; assertions: unknown[] } {
  const events = readRecordedList(join(runDir, RUN_FILES.events));
  const assertions = readRecordedList(join(runDir, RUN_FILES.assertions));
  if (outcomeDigest(events as NormalizedEvent[], assertions as AssertionResult[]) !== outcome)
    throw new CairnError("RUN_INVALID", "the parent's events.json and assertions.json are not the ones its outcome digest names", {
      path: "/outcome",
      hint: "the parent run directory was edited",
    });
  return { events, assertions };
}

function exitCodes(events: readonly NormalizedEvent[]): (number | string)[] {
  return events.flatMap((e) => (e.event === "exit" ? [e.kind === "exited" ? e.code : `signal ${e.code}`] : []));
}

/** Where `branch` first differs from `parent` (null: the same outcome). */
export function differenceFrom(
  parent: { events: readonly unknown[]; assertions: readonly unknown[]; outcome: Sha256Digest },
  branch: { events: readonly unknown[]; assertions: readonly unknown[]; outcome: Sha256Digest },
): ExploreDifference {
  if (branch.outcome === parent.outcome) return { from_parent: false, at: null };
  const ei = firstListDifference(parent.events, branch.events);
  if (ei >= 0) return { from_parent: true, at: `/events/${ei}` };
  const ai = firstListDifference(parent.assertions, branch.assertions);
  return { from_parent: true, at: ai >= 0 ? `/assertions/${ai}` : "/outcome" };
}

/** Records one branch per variation of the vary file and compares each with the parent. */
export async function explore(opts: ExploreOptions): Promise<ExploreResult> {
  const log = opts.log ?? (() => {});
  const jobs = opts.jobs ?? DEFAULT_EXPLORE_JOBS;
  if (!Number.isSafeInteger(jobs) || jobs < 1) throw new CairnError("USAGE", `--jobs must be a positive integer, not ${jobs}`, { path: "--jobs" });
  checkLimit("explore.jobs", jobs, EXPLORE_LIMITS["explore.jobs"], "--jobs");
  // everything that can be read without a kit first: the vary file and every variation, the parent and its checkpoint
  const file = readVaryFile(opts.vary);
  const todo = variations(file);
  const parent = readRunManifest(opts.runDir);
  // said once, before the kit, rather than once per variation by each branch's own refusal
  if (parent.branch !== undefined)
    throw new CairnError("RUN_INVALID", `run ${parent.run_id} is a branch: a branch takes no checkpoints of its own yet`, {
      path: "/branch",
      hint: `explore its parent ${parent.branch.parent.run_id} at another checkpoint`,
    });
  const taken = parent.checkpoints?.taken ?? [];
  if (!taken.some((t) => t.name === opts.checkpoint))
    throw new CairnError(
      "RUN_INVALID",
      taken.length === 0
        ? `run ${parent.run_id} was recorded without checkpoints`
        : `run ${parent.run_id} took no checkpoint "${opts.checkpoint}"; it took ${taken.map((t) => t.name).join(", ")}`,
      { path: taken.length === 0 ? "/checkpoints" : "--at", hint: "cairn runs show RUN lists a run's checkpoints" },
    );
  const lists = parentLists(opts.runDir, parent.outcome);
  const kit = typeof opts.kit === "function" ? await opts.kit() : opts.kit;
  const tails = mkdtempSync(join(tmpdir(), "cairn-explore-")); // 0700: the tails hold stdin data
  const forget = onInterrupt(() => rmSync(tails, { recursive: true, force: true }));
  const rows: ExploreBranch[] = new Array(todo.length);
  let bug: unknown;
  const one = async (v: Variation, i: number): Promise<ExploreBranch> => {
    const tail = join(tails, `${i}.json`);
    writeFileSync(tail, v.tail, { mode: 0o600 });
    log(`[${i + 1}/${todo.length}] branching: ${v.name}`);
    const base = { variation: v.name, set: v.set };
    try {
      const { kit: _k, vary: _v, jobs: _j, onBranch: _o, log: _l, ...branchOpts } = opts;
      const r = await recordBranch({ ...branchOpts, scenario: tail, kit, log: (line) => log(`[${i + 1}/${todo.length}] ${line}`) });
      return {
        ...base,
        run_id: r.manifest.run_id,
        run_dir: r.runDir,
        status: r.evaluation.status,
        exit_codes: exitCodes(r.evaluation.events),
        outcome: r.evaluation.outcome,
        differs: differenceFrom(
          { ...lists, outcome: parent.outcome },
          { events: r.evaluation.events, assertions: r.evaluation.assertions, outcome: r.evaluation.outcome },
        ),
        error: null,
      };
    } catch (e) {
      if (!isCairnError(e) || e.code === "INTERNAL") throw e;
      return {
        ...base,
        run_id: null,
        run_dir: null,
        status: "not-recorded",
        exit_codes: [],
        outcome: null,
        differs: null,
        error: { code: e.code, message: e.message, path: e.path ?? null },
      };
    }
  };
  try {
    let next = 0;
    const worker = async (): Promise<void> => {
      // a bug (not a refusal) stops the launches; the branches under way end first, so none is left half made
      while (bug === undefined && next < todo.length) {
        const i = next++;
        try {
          const row = await one(todo[i]!, i);
          rows[i] = row;
          log(`[${i + 1}/${todo.length}] ${row.status}${row.run_id !== null ? ` ${row.run_id}` : ""}: ${row.variation}`);
          opts.onBranch?.(row);
        } catch (e) {
          bug ??= e;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(jobs, todo.length) }, worker));
  } finally {
    forget();
    rmSync(tails, { recursive: true, force: true });
  }
  if (bug !== undefined) throw bug;
  const recorded = rows.filter((r) => r.run_id !== null).length;
  return {
    parent: { run_id: parent.run_id, status: parent.status, outcome: parent.outcome, checkpoint: opts.checkpoint },
    vary: file.path,
    jobs,
    branches: rows,
    counts: {
      variations: rows.length,
      recorded,
      not_recorded: rows.length - recorded,
      differ: rows.filter((r) => r.differs?.from_parent === true).length,
    },
  };
}
