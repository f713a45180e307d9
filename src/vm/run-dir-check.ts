/**
 * What `cairn runs list` and `runs show` may believe of a run directory.
 * A run directory is a plain directory anyone with the user's rights can
 * edit: before issue 31, `runs list` printed whatever `run.json` said, so a
 * run edited from `assertions-failed` to `passed` was listed as passed.
 *
 * The cheap checks, recomputed from the directory's own files (no store,
 * no kit, no QEMU):
 *   /vm_digest         the digest of the recorded VM identity
 *   /outcome           the outcome digest of events.json and assertions.json
 *   /status            the status events.json and assertions.json give, for
 *                      every status they decide (an infrastructure failure
 *                      or a timeout may come from the kernel or from how QEMU
 *                      ended, which they do not hold)
 *   /replay_log/size   replay.log is there with the recorded size
 *   /checkpoints/file/size    a record with checkpoints: checkpoints.qcow2 is
 *                      there, a regular file, with the recorded size
 *   /checkpoints/file/sha256  and its sha256 is the recorded one, when asked
 *                      (`runs show`) or a key is given: hashing a qcow2 of
 *                      ~90 MiB per checkpoint is not cheap, so `runs list`
 *                      checks its size only, like replay.log's (a run
 *                      imported from a bundle without private members has
 *                      none: its checkpoints did not travel, not tampered)
 *   /branch/<start|prefix|scenario>/size    a branch (`cairn branch`): its
 *                      branch-start.qcow2, branch-prefix.bin and branch.json
 *                      are there, regular files, with the recorded sizes
 *   /branch/<start|prefix|scenario>/sha256  and their sha256 the recorded
 *                      ones, when hashed as the qcow2 is (`runs show`, a key)
 * and, when a key is given (`--pub`), the signed receipt: its signature and
 * every digest it binds, recomputed (run-receipt.ts `verifyReceipt`, which
 * hashes replay.log too).
 *
 * The verdict says no more than was checked:
 *   signed      a receipt signed by a given key matches the directory
 *   unverified  the cheap checks agree, no signature vouches for the files:
 *               a directory rewritten as a whole (every file and digest made
 *               consistent) is not told apart; only `cairn replay`, or a
 *               receipt, shows more
 *   tampered    a check failed (its JSON pointer is named)
 *   invalid     run.json itself is refused by the strict reader
 */
import { existsSync, lstatSync } from "node:fs";
import { join } from "node:path";
import { CairnError, hashFileBounded, isCairnError, isJsonObject, parseJsonBytes, readFileBounded, type JsonModel, type VerifyingKey } from "../core/index.ts";
import { outcomeDigest, runStatus, type AssertionResult } from "./checker.ts";
import { BRANCH_FILES, BRANCH_PREFIX_MAX_BYTES, BRANCH_SCENARIO_MAX_BYTES } from "./branch-manifest.ts";
import { CHECKPOINT_FILE_MAX_BYTES } from "./checkpoint-file.ts";
import { CHECKPOINT_FILE } from "./checkpoint-take.ts";
import type { NormalizedEvent } from "./protocol.ts";
import { RUN_READ_LIMITS } from "./replay-run.ts";
import type { RunManifest } from "./run-manifest.ts";
import { RECEIPT_FILE, verifyReceipt } from "./run-receipt.ts";
import { RUN_FILES } from "./rundir.ts";
import { readRunOrigin } from "./run-origin.ts";
import { vmDigest } from "./vmid.ts";

export type RunDirCheck = "signed" | "unverified" | "tampered" | "invalid";

export interface RunDirCheckResult {
  readonly check: RunDirCheck;
  /** The first check that failed (a JSON pointer into run.json, or a file), or the reason a receipt did not count; null otherwise. */
  readonly problem: string | null;
}

/** The statuses events.json and assertions.json decide alone (checker.ts runStatus); any other may come from the kernel or QEMU. */
const DECIDED_BY_EVENTS: readonly string[] = ["passed", "completed", "program-failed", "assertions-failed", "launch-failed"];

function tampered(problem: string): RunDirCheckResult {
  return { check: "tampered", problem };
}

/** A recorded list: JSON, a list of plain objects, within run.recorded-list-bytes; undefined when it is not one. */
function readList(runDir: string, name: string): Array<Record<string, JsonModel>> | undefined {
  const file = join(runDir, name);
  if (!existsSync(file)) return undefined;
  try {
    const model = parseJsonBytes(readFileBounded(file, RUN_READ_LIMITS["run.recorded-list-bytes"], "run.recorded-list-bytes"), { source: file });
    return Array.isArray(model) && model.every(isJsonObject) ? (model as Array<Record<string, JsonModel>>) : undefined;
  } catch (e) {
    if (isCairnError(e)) return undefined;
    throw e;
  }
}

export interface RunDirCheckOptions {
  /** Hash checkpoints.qcow2 against run.json's sha256 even without a key (its size is always checked). */
  readonly checkpointDigest?: boolean;
}

/**
 * checkpoints.qcow2 against run.json (the receipt binds run.json, which binds
 * the qcow2 by digest; the receipt check does not hash the qcow2, so this
 * does when `hash`). A run imported from a bundle made without private
 * members has no qcow2: its checkpoints did not travel, which is no edit
 * (nothing else run.json claims rests on them; a branch checks the file
 * before loading one).
 */
function checkCheckpoints(runDir: string, m: RunManifest, hash: boolean): RunDirCheckResult | undefined {
  if (m.checkpoints === undefined) return undefined;
  const qcow2 = join(runDir, CHECKPOINT_FILE);
  const st = lstatSync(qcow2, { throwIfNoEntry: false });
  if (st === undefined && importedRun(runDir)) return undefined;
  if (st === undefined || !st.isFile() || st.size !== m.checkpoints.file.size) return tampered("/checkpoints/file/size");
  if (hash && hashFileBounded(qcow2, CHECKPOINT_FILE_MAX_BYTES, "run.checkpoint-file-bytes").digest !== m.checkpoints.file.sha256)
    return tampered("/checkpoints/file/sha256");
  return undefined;
}

/** Each of a branch's files, its run.json field and its read bound. */
const BRANCH_CHECKS = [
  { field: "start", file: BRANCH_FILES.start, max: CHECKPOINT_FILE_MAX_BYTES, limit: "run.checkpoint-file-bytes" },
  { field: "prefix", file: BRANCH_FILES.prefix, max: BRANCH_PREFIX_MAX_BYTES, limit: "branch.prefix-bytes" },
  { field: "scenario", file: BRANCH_FILES.scenario, max: BRANCH_SCENARIO_MAX_BYTES, limit: "branch.scenario-bytes" },
] as const;

/**
 * A branch's files against run.json's `branch` (its replay checks them the
 * same way before launch, branch-manifest.ts `checkBranchFiles`): each is a
 * regular file of the recorded size, and of the recorded sha256 when `hash`.
 * Without them the branch cannot be replayed, so a missing one is an edit,
 * unless the run was imported (a bundle made without private members does
 * not carry the start snapshot or the parent's stream, as for checkpoints).
 */
function checkBranch(runDir: string, m: RunManifest, hash: boolean): RunDirCheckResult | undefined {
  if (m.branch === undefined) return undefined;
  for (const b of BRANCH_CHECKS) {
    const file = join(runDir, b.file);
    const st = lstatSync(file, { throwIfNoEntry: false });
    if (st === undefined && importedRun(runDir)) continue;
    if (st === undefined || !st.isFile() || st.size !== m.branch[b.field].size) return tampered(`/branch/${b.field}/size`);
    if (hash && hashFileBounded(file, b.max, b.limit).digest !== m.branch[b.field].sha256) return tampered(`/branch/${b.field}/sha256`);
  }
  return undefined;
}

/** Whether the run came from a bundle or a registry (its origin file says so; an unreadable one says nothing). */
function importedRun(runDir: string): boolean {
  try {
    const via = readRunOrigin(runDir)?.via;
    return via === "bundle" || via === "registry";
  } catch (e) {
    if (isCairnError(e)) return false;
    throw e;
  }
}

/** The cheap checks, then the receipt when `keys` are given. Throws only on I/O trouble, never on what the files say. */
export function checkRunDir(runDir: string, m: RunManifest, keys: readonly VerifyingKey[] = [], opts: RunDirCheckOptions = {}): RunDirCheckResult {
  if (vmDigest(m.vm) !== m.vm_digest) return tampered("/vm_digest");
  const events = readList(runDir, RUN_FILES.events);
  if (events === undefined) return tampered(RUN_FILES.events);
  const assertions = readList(runDir, RUN_FILES.assertions);
  if (assertions === undefined) return tampered(RUN_FILES.assertions);
  // the outcome digest is JCS over these exact models: an edited event or assertion, or an edited digest, differs
  const ev = events as unknown as NormalizedEvent[];
  const as = assertions as unknown as AssertionResult[];
  if (outcomeDigest(ev, as) !== m.outcome) return tampered("/outcome");
  if (DECIDED_BY_EVENTS.includes(m.status) && runStatus(ev, as) !== m.status) return tampered("/status");
  const log = join(runDir, RUN_FILES.replayLog);
  // lstat: a symlink or FIFO in place of the log is not the log cairn wrote
  const st = lstatSync(log, { throwIfNoEntry: false });
  if (st === undefined || !st.isFile() || st.size !== m.replay_log.size) return tampered("/replay_log/size");
  const ckpt = checkCheckpoints(runDir, m, keys.length > 0 || opts.checkpointDigest === true);
  if (ckpt !== undefined) return ckpt;
  const branch = checkBranch(runDir, m, keys.length > 0 || opts.checkpointDigest === true);
  if (branch !== undefined) return branch;
  if (keys.length === 0) return { check: "unverified", problem: null };
  const receipt = join(runDir, RECEIPT_FILE);
  if (!existsSync(receipt)) return { check: "unverified", problem: `no ${RECEIPT_FILE}` };
  try {
    verifyReceipt(receipt, keys, runDir);
    return { check: "signed", problem: null };
  } catch (e) {
    if (!(e instanceof CairnError)) throw e;
    // the receipt and the directory disagree, or a file the receipt binds is malformed: something was edited
    if (e.code === "RECEIPT_MISMATCH") return tampered(`${RECEIPT_FILE}#${e.path ?? ""}`);
    if (e.code === "RUN_INVALID") return tampered(e.path ?? RECEIPT_FILE);
    // not signed by a given key (or not a receipt): it vouches for nothing, which is not evidence of an edit
    return { check: "unverified", problem: `${RECEIPT_FILE}: ${e.code}` };
  }
}

/**
 * Whether a replay directory's own files bear out its `result.json`'s
 * "matched": its events.json and assertions.json give the run's recorded
 * outcome digest, and the result names that digest and the recorded status.
 * A result.json planted or edited to say "matched" over other files is not
 * believed. Like `unverified`, it cannot tell apart a replay directory
 * rewritten as a whole from the record's own files; only a new replay does.
 */
export function replayFilesAgree(replayDir: string, m: RunManifest, result: Record<string, unknown>): boolean {
  const events = readList(replayDir, RUN_FILES.events);
  const assertions = readList(replayDir, RUN_FILES.assertions);
  if (events === undefined || assertions === undefined) return false;
  const outcome = outcomeDigest(events as unknown as NormalizedEvent[], assertions as unknown as AssertionResult[]);
  return outcome === m.outcome && result.outcome === m.outcome && result.status === m.status;
}
