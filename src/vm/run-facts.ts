/**
 * Two small shareable files a run directory may hold beside run.json, read
 * by receipts (run-receipt.ts):
 *
 *   environment.json  a run of an environment lockfile: its EnvironmentID,
 *                     the lockfile's sha256, the exported image manifest
 *                     (whose source identity run.json records) and the
 *                     names of variables set with --env (`run_env`)
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
/**
 * network.json: a `run.network` record's host facts, for each responder its
 * port, kind, the `responder.connections` bound and how many guest
 * connections the gate refused at it (issue 31). What the guest saw of a
 * refusal (a connection closed before any byte) is in the replay log, so a
 * replay shows the workload the same refusals; the host count cannot be taken
 * again at replay (no responder runs), so it is recorded here, shareable and
 * carried by bundles; like cost.json it is a host fact of the record, not
 * bound by the receipt.
 */
export const RUN_NETWORK_FILE = "network.json";
export const RUN_COST_FILE = "cost.json";
export const RUN_ENV_MANIFEST_FILE = "environment-manifest.json";
const ENV_MANIFEST_MAX_BYTES = 16 * 1024 * 1024;

export interface RunEnvironment {
  readonly environment_id: Sha256Digest;
  readonly lockfile_sha256: Sha256Digest;
  readonly image_manifest: Sha256Digest;
  /**
   * The names of the variables the run set over the lockfile's env (`--env`,
   * `source.lockfile.env`), sorted by bytes; absent when none. Their values
   * are in the launch identity (run.json `/workload/launch`), never here.
   */
  readonly run_env?: readonly string[];
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

export interface RunNetworkFacts {
  readonly responders: ReadonlyArray<{ readonly port: number; readonly kind: string; readonly connections: number; readonly refused: number }>;
}

export function writeRunNetwork(runDir: string, facts: RunNetworkFacts): void {
  writeFileAtomic(join(runDir, RUN_NETWORK_FILE), `${JSON.stringify(facts, null, 2)}\n`, { mode: 0o644 });
}

/** The recorded network facts, when the run has them (a run without `run.network`, or one recorded before issue 31, has none). */
export function readRunNetwork(runDir: string): RunNetworkFacts | undefined {
  const path = join(runDir, RUN_NETWORK_FILE);
  if (!existsSync(path)) return undefined;
  const m = parseJsonBytes(readFileBounded(path, 64 * 1024, "run.network-facts-bytes")) as unknown;
  const rs = (m as { responders?: unknown } | null)?.responders;
  if (!Array.isArray(rs)) throw new CairnError("RUN_INVALID", `${path} is not a run's network facts`, { path });
  return {
    responders: rs.map((r: unknown, i) => {
      const o = r as Record<string, unknown>;
      const int = (k: string) => {
        const v = o?.[k];
        if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)
          throw new CairnError("RUN_INVALID", `${path}: /responders/${i}/${k} must be a non-negative integer`, { path });
        return v;
      };
      return { port: int("port"), kind: String(o?.kind), connections: int("connections"), refused: int("refused") };
    }),
  };
}
