/**
 * What `cairn runs list` and `cairn runs show` print: a summary of each run
 * directory, read from its `run.json` through the one bounded, strict
 * manifest reader (replay-run.ts `readRunManifest`), checked against the
 * directory's own files before anything it says is shown (run-dir-check.ts: an
 * edited run is listed as `tampered`, never believed), with where the run
 * came from (run-origin.ts) and the replay directories' `result.json`.
 * Nothing here follows a symlink: an entry of the runs directory that is not
 * a real directory is skipped, and one whose manifest is missing or refused
 * is listed as invalid with the error's code.
 */
import { existsSync, lstatSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { compareBytes, ioError, isCairnError, isJsonObject, parseJsonBytes, readFileBounded, type Sha256Digest, type VerifyingKey } from "../core/index.ts";
import { RUN_STATUSES, type RunStatus } from "./checker.ts";
import { readRunManifest } from "./replay-run.ts";
import { checkRunDir, replayFilesAgree, type RunDirCheck } from "./run-dir-check.ts";
import type { RunManifest } from "./run-manifest.ts";
import { readRunEnvManifest } from "./run-facts.ts";
import { readRunOrigin, type RunOrigin } from "./run-origin.ts";
import { readEnvironment, readRunCost } from "./run-receipt.ts";
import { RUN_FILES } from "./rundir.ts";

/** `result.json` of a replay is a few hundred bytes; anything larger is not one. */
const REPLAY_RESULT_MAX_BYTES = 64 * 1024;

export interface RunSummary {
  readonly run_id: string;
  readonly dir: string;
  readonly status: RunStatus;
  /** What the directory's own files confirm (run-dir-check.ts): signed, unverified or tampered. */
  readonly check: RunDirCheck;
  /** The first failed check, or why a receipt did not count; null otherwise. */
  readonly problem: string | null;
  /**
   * When `cairn run` began recording (run.json `/recorded/at`: the recording
   * host's clock, or CAIRN_NOW, taken before the guest image is built and
   * QEMU starts), so the run's start as this host saw it.
   */
  readonly recorded_at: string;
  /**
   * How long the record's QEMU ran, in ms (cost.json `wall_ms`: boot to
   * power-off, without building the guest image); null when the directory
   * has no readable cost.json (an imported run without it, or one edited).
   */
  readonly duration_ms: number | null;
  /** Where the run came from on this host (origin.json: unverified provenance), or null when unknown. */
  readonly origin: RunOrigin | null;
  readonly source_kind: string;
  readonly workload: Sha256Digest;
  /** The workload's source, fs and launch identities, as run.json records them. */
  readonly identities: { readonly source: Sha256Digest; readonly fs: Sha256Digest; readonly launch: Sha256Digest };
  readonly vm_digest: Sha256Digest;
  readonly outcome: Sha256Digest;
  /** The environment the run was made in: the lockfile's EnvironmentID and/or the environment manifest's address; null when none. */
  readonly environment: {
    readonly environment_id: Sha256Digest | null;
    readonly manifest_address: string | null;
    /** The names of the variables the run set over the lockfile's env (`--env`), as environment.json records them; empty when none. */
    readonly run_env: readonly string[];
  } | null;
  /** Where the guest kept the tree: "disk" (with the image's size) or "initramfs". */
  readonly root: "disk" | "initramfs";
  readonly memory_mib: number;
  /** The run's input tree (`run.inputs`, its `cairn.fs/1` digest), or null without inputs. */
  readonly inputs: Sha256Digest | null;
  /**
   * A branch (`cairn branch`): the parent run and the checkpoint it started
   * from, as run.json's `branch` records them (the receipt binds them; its
   * files are checked like the rest, run-dir-check.ts); null for a run
   * recorded from boot.
   */
  readonly branch: { readonly parent: string; readonly checkpoint: string; readonly icount: number } | null;
  /** Each replay directory's verdict in order (see ReplayShown: a claimed match its files contradict is not shown as one). */
  readonly replays: readonly ReplayShown[];
}

/** What each check verdict means, in the words `runs show` prints and a run's page shows (run-dir-check.ts). */
export const CHECK_MEANING: Readonly<Record<RunDirCheck | "invalid", string>> = {
  signed: "a receipt signed by the given key matches the directory",
  unverified: "its digests agree with its files; no signature vouches for them (give --pub, or replay it)",
  tampered: "a file disagrees with what run.json records: nothing it says is to be believed",
  invalid: "run.json is refused",
};

export interface UnreadableRun {
  readonly dir: string;
  /** Always "invalid": run.json is missing or refused, so nothing it says is shown. */
  readonly check: "invalid";
  readonly error: string;
}

/**
 * A replay directory's verdict as `runs list` may show it: `matched` only
 * when its result says so and its own events and assertions give the run's
 * outcome (run-dir-check.ts `replayFilesAgree`), `contradicted` when the
 * result claims a match its files do not bear out, `differs` when it says it
 * did not match, `no-result` when it left none (interrupted or refused).
 */
export type ReplayShown = "matched" | "differs" | "no-result" | "contradicted";

function replayResults(runDir: string, m: RunManifest): ReplayShown[] {
  const base = join(runDir, RUN_FILES.replays);
  if (!existsSync(base) || !lstatSync(base).isDirectory()) return [];
  return readdirSync(base)
    .filter((n) => /^[1-9][0-9]*$/.test(n))
    .map(Number)
    .sort((a, b) => a - b)
    .map((n) => {
      const file = join(base, String(n), "result.json");
      try {
        const r = parseJsonBytes(readFileBounded(file, REPLAY_RESULT_MAX_BYTES, "run.replay-result-bytes"));
        if (!isJsonObject(r)) return "no-result";
        if (r.matches !== true) return "differs";
        return replayFilesAgree(join(base, String(n)), m, r) ? "matched" : "contradicted";
      } catch {
        // unreadable (missing, a FIFO, over its bound, not JSON): no result to show
        return "no-result";
      }
    });
}

/** A side file that cannot be read is shown as unknown, not as a reason to hide the run (its check says what holds). */
function orNull<T>(read: () => T | null | undefined): T | null {
  try {
    return read() ?? null;
  } catch (e) {
    if (isCairnError(e)) return null;
    throw e;
  }
}

export interface DescribeOptions {
  /** Keys a run's receipt may be signed with (`--pub`): a receipt verified with one makes the run `signed`. */
  readonly keys?: readonly VerifyingKey[];
  /** Hash the run's checkpoints.qcow2 against run.json (`runs show`); `runs list` checks its size only. */
  readonly checkpointDigest?: boolean;
}

/** The summary of one run directory (throws the manifest reader's typed refusal). */
export function describeRun(runDir: string, opts: DescribeOptions = {}): RunSummary {
  const m = readRunManifest(runDir);
  const { check, problem } = checkRunDir(runDir, m, opts.keys, { checkpointDigest: opts.checkpointDigest === true });
  const env = orNull(() => readEnvironment(runDir));
  const envManifest = orNull(() => readRunEnvManifest(runDir));
  return {
    run_id: m.run_id,
    dir: runDir,
    status: m.status,
    check,
    problem,
    recorded_at: m.recorded.at,
    duration_ms: orNull(() => readRunCost(runDir).wall_ms),
    origin: orNull(() => readRunOrigin(runDir)),
    source_kind: m.workload.source_kind,
    workload: m.workload.workload,
    identities: { source: m.workload.source, fs: m.workload.fs, launch: m.workload.launch },
    vm_digest: m.vm_digest,
    outcome: m.outcome,
    environment:
      env === null && envManifest === null
        ? null
        : { environment_id: env?.environment_id ?? null, manifest_address: envManifest?.manifest_address ?? null, run_env: env?.run_env ?? [] },
    root: m.vm.root_disk === null ? "initramfs" : "disk",
    memory_mib: m.vm.memory_mib,
    inputs: m.vm.run_inputs ?? null,
    branch: m.branch === undefined ? null : { parent: m.branch.parent.run_id, checkpoint: m.branch.checkpoint.name, icount: m.branch.checkpoint.icount },
    replays: replayResults(runDir, m),
  };
}

/** Every run directory under `runsDir`, oldest first (run ids start with their UTC time); an absent directory has none. */
export function listRuns(runsDir: string, opts: DescribeOptions = {}): { runs: RunSummary[]; unreadable: UnreadableRun[] } {
  const runs: RunSummary[] = [];
  const unreadable: UnreadableRun[] = [];
  if (!existsSync(runsDir)) return { runs, unreadable };
  let names: string[];
  try {
    names = readdirSync(runsDir).sort(compareBytes);
  } catch (cause) {
    throw ioError(runsDir, cause); // not a directory, or gone or unreadable since the check
  }
  for (const name of names) {
    if (name.startsWith(".")) continue;
    const dir = join(runsDir, name);
    try {
      if (!lstatSync(dir).isDirectory()) continue; // the root's marker file, or a symlink: never followed
      runs.push(describeRun(dir, opts));
    } catch (e) {
      unreadable.push({ dir, check: "invalid", error: isCairnError(e) ? e.code : ioError(dir, e).code });
    }
  }
  return { runs, unreadable };
}

/** `runs list` filters; every one given must hold. */
export interface RunFilter {
  /** Any of these recorded statuses (see statusesNamed). */
  readonly status?: readonly RunStatus[];
  /** Part of the origin's path (the spec, lock, lockfile or bundle given): matched against the whole path and its file name. */
  readonly spec?: string;
  /** A digest or its leading part (at least 8 hex digits): the workload, its source, fs or launch identity, the VM digest, the outcome. */
  readonly identity?: string;
  /** An environment: the EnvironmentID or the environment manifest's address, or their leading part. */
  readonly environment?: string;
  /** Recorded at or after this time (an ISO 8601 date or date-time, UTC unless it names a zone). */
  readonly since?: Date;
  /** What the check found: signed, unverified, tampered. */
  readonly check?: RunDirCheck;
}

/** The `--status` words beyond the statuses themselves: `failed` is every status but the two a run succeeds with. */
export const RUN_STATUS_GROUPS: Readonly<Record<string, readonly RunStatus[]>> = {
  failed: RUN_STATUSES.filter((s) => s !== "passed" && s !== "completed"),
};

/** The statuses a `--status` word names (a status, or a group of RUN_STATUS_GROUPS); undefined when it names none. */
export function statusesNamed(word: string): readonly RunStatus[] | undefined {
  if ((RUN_STATUSES as readonly string[]).includes(word)) return [word as RunStatus];
  return Object.hasOwn(RUN_STATUS_GROUPS, word) ? RUN_STATUS_GROUPS[word] : undefined;
}

const hexOf = (d: string): string => d.replace(/^[a-z0-9]+:/, "");

function digestMatches(want: string, digests: ReadonlyArray<string | null | undefined>): boolean {
  const w = hexOf(want.toLowerCase());
  return digests.some((d) => typeof d === "string" && (d === want || hexOf(d).startsWith(w)));
}

/** The runs `filter` keeps, in order. Identities are matched as recorded in run.json; `check` says what of it the directory confirms. */
export function filterRuns(runs: readonly RunSummary[], filter: RunFilter): RunSummary[] {
  return runs.filter((r) => {
    if (filter.status !== undefined && !filter.status.includes(r.status)) return false;
    if (filter.check !== undefined && r.check !== filter.check) return false;
    if (filter.spec !== undefined) {
      const input = r.origin?.input;
      if (input === undefined || !(input.includes(filter.spec) || basename(input) === filter.spec)) return false;
    }
    if (
      filter.identity !== undefined &&
      !digestMatches(filter.identity, [r.workload, r.identities.source, r.identities.fs, r.identities.launch, r.vm_digest, r.outcome])
    )
      return false;
    if (filter.environment !== undefined && !digestMatches(filter.environment, [r.environment?.environment_id, r.environment?.manifest_address])) return false;
    if (filter.since !== undefined) {
      const at = Date.parse(r.recorded_at);
      if (!Number.isFinite(at) || at < filter.since.getTime()) return false;
    }
    return true;
  });
}
