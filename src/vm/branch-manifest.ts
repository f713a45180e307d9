/**
 * What run.json records of a branch (issue 35 item 3), and the files a
 * branch's replay needs, checked by digest before QEMU starts. A branch is a
 * run recorded from a parent run's checkpoint with another scenario tail
 * (branch.ts); its run directory holds, besides a run's files:
 *
 *   branch-start.qcow2   the snapshot the branch starts from (QEMU's
 *                        `rrsnapshot`), saved as its record began; the only
 *                        snapshot it keeps (private: the guest's RAM)
 *   branch-prefix.bin    the parent's protocol stream up to its hold at the
 *                        checkpoint: the branch's stream continues it (the
 *                        agent's sequence numbers and stream digest run on),
 *                        so the two are decoded as one (private: output bytes)
 *   branch.json          the scenario tail as given (`steps`, `expect`)
 *
 * run.json's `branch` names the parent (run id, outcome), the checkpoint
 * (name, instruction count, the parent's qcow2 digest), and each file above
 * by size and sha256.
 */
import { copyFileSync, existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { CairnError, type Checker, childPath, hashFileBounded, type JsonModel, readFileBounded, parseSha256, type Sha256Digest } from "../core/index.ts";
import { CHECKPOINT_NAME } from "./checkpoint-spec.ts";
import { CHECKPOINT_FILE_MAX_BYTES } from "./checkpoint-take.ts";
import { checkStandaloneQcow2 } from "./qcow2-header.ts";

export const BRANCH_FILES = {
  start: "branch-start.qcow2",
  prefix: "branch-prefix.bin",
  scenario: "branch.json",
} as const;
/** QEMU's name for a branch's start in its qcow2 (`rrsnapshot`). */
export const BRANCH_START_SNAPSHOT = "cairn-branch-start";
/** branch.prefix-bytes: the parent's stream a branch continues (its protocol.bin up to the hold). */
export const BRANCH_PREFIX_MAX_BYTES = 1024 * 1024 * 1024;
/** branch.scenario-bytes: the scenario tail file. */
export const BRANCH_SCENARIO_MAX_BYTES = 16 * 1024 * 1024;

export interface FileRef {
  readonly sha256: Sha256Digest;
  readonly size: number;
}

export interface RunBranch {
  readonly parent: { readonly run_id: string; readonly outcome: Sha256Digest };
  readonly checkpoint: { readonly name: string; readonly icount: number; readonly file: FileRef };
  readonly start: FileRef;
  readonly prefix: FileRef;
  readonly scenario: FileRef;
}

function fileRef(c: Checker, unsafe: JsonModel | undefined, path: string): FileRef {
  const o = c.object(unsafe, path, ["sha256", "size"]) ?? {};
  let sha = "" as Sha256Digest;
  try {
    sha = parseSha256(c.required(o, "sha256", path), childPath(path, "sha256"));
  } catch {
    c.add(childPath(path, "sha256"), "expected a sha256 digest", "DIGEST_INVALID");
  }
  return { sha256: sha, size: c.integer(c.required(o, "size", path), childPath(path, "size"), { min: 1 }) ?? 0 };
}

export function parseBranchRef(c: Checker, unsafe: JsonModel): RunBranch {
  const o = c.object(unsafe, "/branch", ["parent", "checkpoint", "start", "prefix", "scenario"]) ?? {};
  const p = c.object(c.required(o, "parent", "/branch"), "/branch/parent", ["run_id", "outcome"]) ?? {};
  const k = c.object(c.required(o, "checkpoint", "/branch"), "/branch/checkpoint", ["name", "icount", "file"]) ?? {};
  let outcome = "" as Sha256Digest;
  try {
    outcome = parseSha256(c.required(p, "outcome", "/branch/parent"), "/branch/parent/outcome");
  } catch {
    c.add("/branch/parent/outcome", "expected a sha256 digest", "DIGEST_INVALID");
  }
  return {
    parent: {
      run_id: c.string(c.required(p, "run_id", "/branch/parent"), "/branch/parent/run_id", { pattern: /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/ }) ?? "",
      outcome,
    },
    checkpoint: {
      name: c.string(c.required(k, "name", "/branch/checkpoint"), "/branch/checkpoint/name", { pattern: CHECKPOINT_NAME }) ?? "",
      icount: c.integer(c.required(k, "icount", "/branch/checkpoint"), "/branch/checkpoint/icount", { min: 0 }) ?? 0,
      file: fileRef(c, c.required(k, "file", "/branch/checkpoint"), "/branch/checkpoint/file"),
    },
    start: fileRef(c, c.required(o, "start", "/branch"), "/branch/start"),
    prefix: fileRef(c, c.required(o, "prefix", "/branch"), "/branch/prefix"),
    scenario: fileRef(c, c.required(o, "scenario", "/branch"), "/branch/scenario"),
  };
}

/** The size and sha256 of a file cairn just wrote (bounded). */
export function fileRefOf(file: string, max: number, limit: string): FileRef {
  const { digest, size } = hashFileBounded(file, max, limit);
  return { sha256: digest, size };
}

/** Refuses, naming run.json's field, unless `file` is a regular file of the size and digest `ref` records. */
function checkFile(runDir: string, name: string, ref: FileRef, field: string, max: number, limit: string): string {
  const file = join(runDir, name);
  const refuse = (what: string, at: string): never => {
    throw new CairnError("REPLAY_MISMATCH", `${name} ${what}`, {
      path: `/branch/${field}/${at}`,
      hint: "the branch cannot be replayed from these files; nothing was launched",
    });
  };
  if (!existsSync(file) || !statSync(file).isFile()) refuse("is missing", "sha256");
  if (statSync(file).size !== ref.size) refuse("has another size than run.json records", "size");
  if (hashFileBounded(file, max, limit).digest !== ref.sha256) refuse("has another digest than run.json records", "sha256");
  return file;
}

export interface BranchFiles {
  readonly start: string;
  readonly prefix: Buffer;
  readonly scenario: Buffer;
}

/** A branch's three files, each checked against run.json before anything starts. */
export function checkBranchFiles(runDir: string, b: RunBranch): BranchFiles {
  const start = checkFile(runDir, BRANCH_FILES.start, b.start, "start", CHECKPOINT_FILE_MAX_BYTES, "run.checkpoint-file-bytes");
  // run.json can be made to agree with any bytes: a start naming a host file is refused before QEMU opens it
  checkStandaloneQcow2(start, "/branch/start", BRANCH_FILES.start);
  checkFile(runDir, BRANCH_FILES.prefix, b.prefix, "prefix", BRANCH_PREFIX_MAX_BYTES, "branch.prefix-bytes");
  checkFile(runDir, BRANCH_FILES.scenario, b.scenario, "scenario", BRANCH_SCENARIO_MAX_BYTES, "branch.scenario-bytes");
  return {
    start,
    prefix: readFileBounded(join(runDir, BRANCH_FILES.prefix), BRANCH_PREFIX_MAX_BYTES, "branch.prefix-bytes"),
    scenario: readFileBounded(join(runDir, BRANCH_FILES.scenario), BRANCH_SCENARIO_MAX_BYTES, "branch.scenario-bytes"),
  };
}

/**
 * A private copy of the branch's start for one replay: QEMU opens the drive
 * writable to load a snapshot from it, and the recorded file must keep its
 * digest. Copied (a reflink where the file system allows).
 */
export function startCopy(start: string, dir: string): string {
  const copy = join(dir, BRANCH_FILES.start);
  copyFileSync(start, copy);
  return copy;
}
