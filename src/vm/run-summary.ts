/**
 * What `cairn runs list` and `cairn runs show` print: a summary of each run
 * directory, read from its `run.json` through the one bounded, strict
 * manifest reader (replay-run.ts `readRunManifest`) and from the replay
 * directories' `result.json`. Nothing here follows a symlink: an entry of
 * the runs directory that is not a real directory is skipped, and one
 * whose manifest is missing or refused is listed with the error's code.
 */
import { existsSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { compareBytes, ioError, isCairnError, parseJsonBytes, readFileBounded, type Sha256Digest } from "../core/index.ts";
import type { RunStatus } from "./checker.ts";
import { readRunManifest } from "./replay-run.ts";
import { RUN_FILES } from "./rundir.ts";

/** `result.json` of a replay is a few hundred bytes; anything larger is not one. */
const REPLAY_RESULT_MAX_BYTES = 64 * 1024;

export interface RunSummary {
  readonly run_id: string;
  readonly dir: string;
  readonly status: RunStatus;
  readonly recorded_at: string;
  readonly source_kind: string;
  readonly workload: Sha256Digest;
  readonly vm_digest: Sha256Digest;
  readonly outcome: Sha256Digest;
  /** Where the guest kept the tree: "disk" (with the image's size) or "initramfs". */
  readonly root: "disk" | "initramfs";
  readonly memory_mib: number;
  /** The run's input tree (`run.inputs`, its `cairn.fs/1` digest), or null without inputs. */
  readonly inputs: Sha256Digest | null;
  /** Each replay directory's verdict in order: true matched, false did not, null left no result (interrupted or refused). */
  readonly replays: ReadonlyArray<boolean | null>;
}

export interface UnreadableRun {
  readonly dir: string;
  readonly error: string;
}

function replayResults(runDir: string): Array<boolean | null> {
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
        return typeof r === "object" && r !== null && !Array.isArray(r) && (r as { matches?: unknown }).matches === true;
      } catch {
        return null;
      }
    });
}

/** The summary of one run directory (throws the manifest reader's typed refusal). */
export function describeRun(runDir: string): RunSummary {
  const m = readRunManifest(runDir);
  return {
    run_id: m.run_id,
    dir: runDir,
    status: m.status,
    recorded_at: m.recorded.at,
    source_kind: m.workload.source_kind,
    workload: m.workload.workload,
    vm_digest: m.vm_digest,
    outcome: m.outcome,
    root: m.vm.root_disk === null ? "initramfs" : "disk",
    memory_mib: m.vm.memory_mib,
    inputs: m.vm.run_inputs ?? null,
    replays: replayResults(runDir),
  };
}

/** Every run directory under `runsDir`, oldest first (run ids start with their UTC time); an absent directory has none. */
export function listRuns(runsDir: string): { runs: RunSummary[]; unreadable: UnreadableRun[] } {
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
      runs.push(describeRun(dir));
    } catch (e) {
      unreadable.push({ dir, error: isCairnError(e) ? e.code : ioError(dir, e).code });
    }
  }
  return { runs, unreadable };
}
