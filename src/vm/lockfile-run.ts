/**
 * `cairn run env.lock --cmd ...`: an environment lockfile run directly. The
 * lockfile is exported (strata's `exportLock`: verified as `lock verify`
 * does, base re-probed, every layer checked) into a private staging
 * directory, together with a workload spec naming the exported image by
 * manifest digest; `recordRun` then assembles that spec like any OCI spec,
 * so the run's workload lock, raw closure and replay are those of an OCI
 * workload whose manifest carries the EnvironmentID and the lockfile digest
 * (its annotations are covered by the manifest digest, the source identity).
 * The staging directory is removed when the run is recorded or refused: the
 * store holds everything replay needs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isJsonObject, parseYamlBytes, readFilePrefix, writeFileAtomic } from "../core/index.ts";
import { exportLock, LOCKFILE_FORMAT, type ExportLockOptions, type ExportResult } from "../strata/index.ts";
import { writeRunEnvironment } from "./run-facts.ts";
import { recordRun, type RecordOptions, type RecordResult } from "./record.ts";

/** Enough of a file to see whether it is an environment lockfile (its `format` is the first key cairn writes; the rest is never needed here). */
const SNIFF_BYTES = 64 * 1024;

/** True when `path` holds an environment lockfile (`format: cairn.lock/1`), not a workload spec or workload lock. */
export function isEnvironmentLockfile(path: string): boolean {
  const head = readFilePrefix(path, SNIFF_BYTES);
  if (head === undefined) return false;
  const first = head.toString("utf8").split("\n", 1)[0]?.trim();
  if (first === `format: ${LOCKFILE_FORMAT}`) return true;
  try {
    const m = parseYamlBytes(head);
    return isJsonObject(m) && m.format === LOCKFILE_FORMAT;
  } catch {
    return false;
  }
}

export interface LockfileRunOptions extends Omit<RecordOptions, "input"> {
  /** What `exportLock` takes, minus where to write: the image goes to private staging. */
  readonly export: Omit<ExportLockOptions, "outDir">;
}

export interface LockfileRunResult extends RecordResult {
  readonly exported: ExportResult;
}

/** Exports the lockfile, then records the exported image as an OCI workload. */
export async function recordLockfileRun(opts: LockfileRunOptions): Promise<LockfileRunResult> {
  const staging = mkdtempSync(join(opts.export.tmpDir ?? tmpdir(), "cairn-lockfile-run-"));
  try {
    const exported = await exportLock({ ...opts.export, outDir: join(staging, "image") });
    const spec = join(staging, "workload.yaml");
    writeFileAtomic(
      spec,
      ["schema: cairn.workload/1", "source:", "  oci:", "    layout: ./image", `    manifest: "${exported.layout.manifest.digest}"`, ""].join("\n"),
      { mode: 0o600 },
    );
    const { export: _export, ...record } = opts;
    const r = await recordRun({ ...record, input: spec });
    writeRunEnvironment(r.runDir, {
      environment_id: exported.environmentId,
      lockfile_sha256: exported.lockfileSha256,
      image_manifest: exported.layout.manifest.digest,
    });
    return { ...r, exported };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
