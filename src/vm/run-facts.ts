/**
 * Two small shareable files a run directory may hold beside run.json, read
 * by receipts (run-receipt.ts):
 *
 *   environment.json  a run of an environment lockfile: its EnvironmentID,
 *                     the lockfile's sha256 and the exported image manifest
 *                     (whose source identity run.json records)
 *   cost.json         QEMU's wall time and host CPU time for the record,
 *                     non-deterministic provenance, never compared by replay
 *   environment-manifest.json
 *                     a run made with `--environment MANIFEST`: the snapshot
 *                     reference (cairn.snapshot-ref/2: addresses, core and
 *                     extension) of the environment manifest it ran in;
 *                     private (0600: the core may hold env values). Replay
 *                     refuses unless the offered manifest passes the
 *                     manifest area's resume check against it.
 */
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { existsSync } from "node:fs";
import { CairnError, parseJsonBytes, readFileBounded, writeFileAtomic, type Sha256Digest } from "../core/index.ts";
import { checkResume, parseSnapshotRef, type EnvManifest, type ResumeResult, type SnapshotRef } from "../manifest/index.ts";

export const RUN_ENVIRONMENT_FILE = "environment.json";
export const RUN_COST_FILE = "cost.json";
export const RUN_ENV_MANIFEST_FILE = "environment-manifest.json";
const ENV_MANIFEST_MAX_BYTES = 16 * 1024 * 1024;

export interface RunEnvironment {
  readonly environment_id: Sha256Digest;
  readonly lockfile_sha256: Sha256Digest;
  readonly image_manifest: Sha256Digest;
}

/** Host CPU time of this process's reaped children, in ms (Linux: cutime + cstime of /proc/self/stat); undefined elsewhere. */
export function childrenCpuMs(): number | undefined {
  try {
    // procfs reports size 0, so the bounded reader (which trusts fstat's size) cannot read it; the file is one short line
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state); cutime and cstime are fields 16 and 17, in clock ticks (USER_HZ, 100 on Linux)
    const ticks = Number(fields[13]) + Number(fields[14]);
    return Number.isSafeInteger(ticks) ? ticks * 10 : undefined;
  } catch {
    return undefined;
  }
}

export function writeRunCost(runDir: string, cost: { wallMs: number; hostCpuMs: number | undefined }): void {
  writeFileAtomic(join(runDir, RUN_COST_FILE), `${JSON.stringify({ wall_ms: Math.round(cost.wallMs), host_cpu_ms: cost.hostCpuMs ?? null })}\n`, {
    mode: 0o644,
  });
}

export function writeRunEnvironment(runDir: string, e: RunEnvironment): void {
  writeFileAtomic(join(runDir, RUN_ENVIRONMENT_FILE), `${JSON.stringify(e, null, 2)}\n`, { mode: 0o644 });
}

export function writeRunEnvManifest(runDir: string, ref: SnapshotRef): void {
  writeFileAtomic(join(runDir, RUN_ENV_MANIFEST_FILE), `${JSON.stringify(ref, null, 2)}\n`, { mode: 0o600 });
}

/** The environment manifest a run recorded, or undefined when it was made without `--environment`. */
export function readRunEnvManifest(runDir: string): SnapshotRef | undefined {
  const file = join(runDir, RUN_ENV_MANIFEST_FILE);
  if (!existsSync(file)) return undefined;
  return parseSnapshotRef(parseJsonBytes(readFileBounded(file, ENV_MANIFEST_MAX_BYTES, "run.environment-manifest-bytes"), { source: file }));
}

/**
 * The resume rule for a replay: a run recorded with an environment manifest
 * replays only in an offered one that passes `checkResume` (RESUME_MISMATCH
 * names every differing field); none offered is refused, naming the field.
 */
export function checkRunEnvironment(runDir: string, offered: EnvManifest | undefined, allowUnpinned: boolean): ResumeResult | undefined {
  const recorded = readRunEnvManifest(runDir);
  if (recorded === undefined) {
    if (offered !== undefined) {
      throw new CairnError("USAGE", "this run was recorded without an environment manifest; --environment has nothing to check", { path: "--environment" });
    }
    return undefined;
  }
  if (offered === undefined) {
    throw new CairnError("RESUME_MISMATCH", `the run was recorded in environment ${recorded.manifest_address}; none was offered`, {
      path: "/environment_manifest/manifest_address",
      hint: "give --environment with the environment manifest (or devcontainer.json) the run is replayed in",
    });
  }
  return checkResume(recorded, offered, { allowUnpinned });
}
