/**
 * The checkpoints of a record as run.json states them, and the check of the
 * qcow2 that holds them (checkpoints.qcow2, private: it holds the guest's
 * RAM, environment values included). The file's bytes are this record's
 * only: QEMU writes the wall-clock date of each snapshot into it, and the
 * instruction count where a checkpoint lands depends on when the host
 * stopped the guest (checkpoint-take.ts), so two records of one run give
 * different files, like their replay logs. run.json binds this record's
 * bytes by size and sha256; whatever loads a checkpoint checks them first.
 */
import { existsSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { CairnError, hashFileBounded } from "../core/index.ts";
import { afterModel } from "./checkpoint-spec.ts";
import { CHECKPOINT_FILE, CHECKPOINT_FILE_MAX_BYTES, type CheckpointOutcome } from "./checkpoint-take.ts";
import type { RunCheckpoints, RunManifest } from "./run-manifest.ts";
import { checkStandaloneQcow2 } from "./qcow2-header.ts";

export { CHECKPOINT_FILE_MAX_BYTES };

/**
 * What run.json records of a record's checkpoints, or undefined when none was
 * taken (the empty qcow2 is then removed). A checkpoint declared but not
 * taken is said through `log`, never recorded as taken.
 */
export function recordedCheckpoints(
  outcome: (CheckpointOutcome & { readonly file: string }) | undefined,
  log: (line: string) => void,
): RunCheckpoints | undefined {
  if (outcome === undefined) return undefined;
  for (const m of outcome.missed) log(`checkpoint ${m.name} was not taken: ${m.reason}`);
  if (outcome.taken.length === 0) {
    rmSync(outcome.file, { force: true });
    return undefined;
  }
  for (const t of outcome.taken) log(`checkpoint ${t.name} taken at instruction ${t.icount} (guest stopped ${t.pauseMs} ms)`);
  const { digest, size } = hashFileBounded(outcome.file, CHECKPOINT_FILE_MAX_BYTES, "run.checkpoint-file-bytes");
  return { file: { sha256: digest, size }, taken: outcome.taken.map((t) => ({ name: t.name, after: afterModel(t.after), icount: t.icount })) };
}

/** Refuses, naming the field, unless the run's checkpoints.qcow2 has the size and sha256 run.json records. */
export function checkCheckpointFile(runDir: string, m: RunManifest): string {
  const recorded = m.checkpoints;
  if (recorded === undefined)
    throw new CairnError("RUN_INVALID", `run ${m.run_id} was recorded without checkpoints`, {
      path: "/checkpoints",
      hint: "record the run again with run.checkpoints in its spec",
    });
  const file = join(runDir, CHECKPOINT_FILE);
  const refuse = (field: string, what: string): never => {
    throw new CairnError("REPLAY_MISMATCH", `${CHECKPOINT_FILE} ${what}`, {
      path: `/checkpoints/file/${field}`,
      hint: "the checkpoints of this run cannot be used",
    });
  };
  if (!existsSync(file)) refuse("sha256", "is missing");
  if (statSync(file).size !== recorded.file.size) refuse("size", "has another size than recorded");
  if (hashFileBounded(file, CHECKPOINT_FILE_MAX_BYTES, "run.checkpoint-file-bytes").digest !== recorded.file.sha256)
    refuse("sha256", "has another digest than recorded");
  // run.json can be made to agree with any bytes: a qcow2 naming a host file is refused before qemu-img opens it
  checkStandaloneQcow2(file, "/checkpoints/file", CHECKPOINT_FILE);
  return file;
}
