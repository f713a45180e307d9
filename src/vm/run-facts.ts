/**
 * Two small shareable files a run directory may hold beside run.json, read
 * by receipts (run-receipt.ts):
 *
 *   environment.json  a run of an environment lockfile: its EnvironmentID,
 *                     the lockfile's sha256 and the exported image manifest
 *                     (whose source identity run.json records)
 *   cost.json         QEMU's wall time and host CPU time for the record,
 *                     non-deterministic provenance, never compared by replay
 */
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { writeFileAtomic, type Sha256Digest } from "../core/index.ts";

export const RUN_ENVIRONMENT_FILE = "environment.json";
export const RUN_COST_FILE = "cost.json";

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
