/**
 * `cairn replay RUN_DIR`: verify the whole closure before launch, then
 * replay passively and compare exactly.
 *
 * Before QEMU starts, in this order (the first incompatible field is
 * refused, by name, never with a secret value):
 *   1. run.json parses strictly and vm_digest is the digest of vm;
 *   2. replay.log exists with the recorded size and sha256;
 *   3. the workload lock re-verifies against the store (every raw object,
 *      every re-derived identity) and its identities equal the manifest's;
 *   4. the kernel and agent the VM identity names are in the kit, by digest;
 *   5. the run's input tree (`run.inputs`) is read from the store, every
 *      file verified, and has the digest the run names; the recorded inputs
 *      and the rebuilt initramfs have the recorded digests;
 *   6. the rebuilt VM identity (current QEMU version included) equals the
 *      recorded one field by field.
 * The replay has no network, no drives, no host mounts and no host input:
 * QEMU reads only the kernel, the rebuilt initramfs and the replay log.
 */
import { existsSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { CairnError, isCairnError, parseJsonBytes, parseSha256, readFileBounded, sha256, type Progress } from "../core/index.ts";
import { describeDerivation, openVerifiedWorkload, type VerifyOptions } from "../workload/index.ts";
import { writeFailureBundle, writeFailureBundleAfter } from "./bundle.ts";
import { bootGuest, evaluate, prepareGuest, type BootResult, type Evaluation } from "./guest.ts";
import { CONSOLE_LOG_FILE, consoleFailures } from "./kernel-log.ts";
import { kitForRun, qemuVersion, requireKit, type Kit, type KitNeeds } from "./kit.ts";
import type { EnvManifest } from "../manifest/index.ts";
import { checkRunEnvironment, readRunNetwork } from "./run-facts.ts";
import { parseRunManifest, type RunManifest } from "./run-manifest.ts";
import { DEFAULT_TIMEOUT_MS, guestLaunch, workloadFacts } from "./record.ts";
import { dropImage, nextReplayDir, RUN_FILES, writeEvaluation, writeJsonPublic, writeStreams } from "./rundir.ts";
import { parseScenario } from "./scenario.ts";
import { firstListDifference } from "./replay-diff.ts";
import { BRANCH_FILES, BRANCH_START_SNAPSHOT, checkBranchFiles, startCopy } from "./branch-manifest.ts";
import { branchScenario } from "./branch-scenario.ts";
import { describeOutcome, isFailedStatus, type ReplayVerdict } from "./replay-verdict.ts";
import { loadRunInputs } from "./input-listing.ts";
import { firstNetworkDifference } from "./netid.ts";
import { REPLAY_LOG_MAX_BYTES } from "./replay-log.ts";
import { firstVmDifference, parseModuleEntries, vmDigest } from "./vmid.ts";

export interface ReplayOptions {
  readonly runDir: string;
  readonly storeDir: string;
  readonly kit: Kit;
  readonly timeoutMs?: number;
  readonly includePrivateStreams?: boolean;
  /** The environment manifest offered for the replay; required when the run recorded one (run-facts.ts `checkRunEnvironment`). */
  readonly offeredEnvironment?: EnvManifest;
  readonly allowUnpinned?: boolean;
  /** The preflight's verify: a memo key directory (a second replay of a lock skips re-deriving it) and `full`. */
  readonly verify?: VerifyOptions;
  readonly log?: (line: string) => void;
  /** Progress: phase "replay" in seconds QEMU has run (vm/guest.ts). */
  readonly progress?: Progress | undefined;
  /**
   * Called with the workload's replayed output as soon as the guest is done,
   * before the comparison, so a caller can show it even when the replay is
   * then refused as a mismatch (it is also in the replay directory's streams/).
   */
  readonly onStreams?: (streams: ReadonlyMap<number, { readonly stdout: Buffer; readonly stderr: Buffer }>) => void;
}

export interface ReplayResult {
  readonly runDir: string;
  readonly replayDir: string;
  readonly manifest: RunManifest;
  readonly evaluation: Evaluation;
  /** Both facts: the replay matches the record (always true here: a mismatch throws), and the record's status. */
  readonly verdict: ReplayVerdict;
  readonly qemuMs: number;
  /** The workload's replayed output per invocation (also in the replay directory's private streams/). */
  readonly streams: ReadonlyMap<number, { readonly stdout: Buffer; readonly stderr: Buffer }>;
}

/**
 * Bounds on what replay reads from a run directory, which is hostile input
 * like any other: a padded file must fail with a named limit, not exhaust
 * memory. Recorded logs are about 100 KB and events a few KB.
 */
export const RUN_READ_LIMITS = {
  "run.manifest-bytes": 1024 * 1024,
  "run.recorded-list-bytes": 64 * 1024 * 1024,
  "run.replay-log-bytes": REPLAY_LOG_MAX_BYTES,
} as const;

/** Stands for an http responder the record did not have: the network comparison then names the difference. */
const NO_ROOT = parseSha256(`sha256:${"0".repeat(64)}`, "/vm/network");

function refuse(code: "REPLAY_MISMATCH" | "WORKLOAD_MISMATCH" | "VM_MISMATCH", path: string, message: string, hint?: string): never {
  throw new CairnError(code, message, { path, hint: hint ?? "this run cannot be replayed on this host as it is; nothing was launched" });
}

export function readRunManifest(runDir: string): RunManifest {
  const file = join(runDir, RUN_FILES.manifest);
  if (!existsSync(file)) throw new CairnError("RUN_INVALID", `${runDir} is not a run directory (no ${RUN_FILES.manifest})`, { path: file });
  return parseRunManifest(readFileBounded(file, RUN_READ_LIMITS["run.manifest-bytes"], "run.manifest-bytes"), file);
}

/** The kernel, modules and agent a run's VM identity names. */
export function runKitNeeds(m: RunManifest): KitNeeds {
  return { kernel: m.vm.kernel, modules: parseModuleEntries(m.vm.kernel_modules, "/vm/kernel_modules"), agent: m.vm.agent };
}

/**
 * The kit in `kitDir` for replaying (or bundling) the run in `runDir`: the
 * objects the run names, by digest (kit.ts `kitForRun`), not the kit's
 * current module list, so a run imported from a bundle replays by its
 * directory from the kit the import filled.
 */
export function replayKit(kitDir: string, runDir: string, hint?: string): Kit {
  requireKit(kitDir, hint); // first: no kit is a missing prerequisite (exit 3), whatever the run directory holds
  return kitForRun(kitDir, runKitNeeds(readRunManifest(runDir)), hint);
}

/** Steps 1–6: everything that can be checked before launch. */
export async function preflight(opts: ReplayOptions) {
  const m = readRunManifest(opts.runDir);
  checkRunEnvironment(opts.runDir, opts.offeredEnvironment, opts.allowUnpinned === true);
  if (vmDigest(m.vm) !== m.vm_digest) refuse("REPLAY_MISMATCH", "/vm_digest", "vm_digest is not the digest of the recorded VM identity");
  const logPath = join(opts.runDir, RUN_FILES.replayLog);
  if (!existsSync(logPath)) refuse("REPLAY_MISMATCH", "/replay_log", "the replay log is missing", "a run directory without replay.log cannot be replayed");
  if (statSync(logPath).size !== m.replay_log.size) refuse("REPLAY_MISMATCH", "/replay_log/size", "the replay log has another size than recorded");
  if (sha256(readFileBounded(logPath, RUN_READ_LIMITS["run.replay-log-bytes"], "run.replay-log-bytes")) !== m.replay_log.sha256)
    refuse("REPLAY_MISMATCH", "/replay_log/sha256", "the replay log's digest differs from the recorded one");
  const w = await openVerifiedWorkload(join(opts.runDir, RUN_FILES.lock), opts.storeDir, opts.verify);
  opts.log?.(describeDerivation(w.derivation));
  const facts = workloadFacts(w);
  for (const k of Object.keys(m.workload) as (keyof RunManifest["workload"])[]) {
    if (facts[k] !== m.workload[k]) refuse("WORKLOAD_MISMATCH", `/workload/${k}`, `the verified workload's ${k} differs from the recorded one`);
  }
  const scenario = parseScenario(w.run);
  if (scenario.inputs !== undefined && m.run_inputs === undefined)
    refuse("REPLAY_MISMATCH", "/run_inputs", "the run section names inputs, but the run manifest records no input tree");
  if (m.run_inputs !== undefined && m.run_inputs.tree !== m.vm.run_inputs)
    refuse("REPLAY_MISMATCH", "/run_inputs/tree", "the run manifest's input tree is not the one the VM identity names");
  const runInputs = m.run_inputs !== undefined ? loadRunInputs(opts.storeDir, m.run_inputs) : undefined;
  // the served directory is not read again (a replay needs no responder): its recorded digest stands for it, as its packets are in the log
  const recordedRoot = m.vm.network?.responders.find((r) => r.kind === "http")?.root ?? undefined;
  const httpRoot = scenario.network?.http === undefined ? undefined : { digest: recordedRoot ?? NO_ROOT };
  const prepared = await prepareGuest(
    {
      tree: w.tree,
      content: w.content,
      launch: guestLaunch(w),
      scenario,
      ...(runInputs !== undefined ? { runInputs } : {}),
      ...(httpRoot ? { httpRoot } : {}),
      room: opts.runDir, // each replay boots in a directory inside the run directory
    },
    {
      kit: opts.kit,
      qemu: qemuVersion(),
      kernel: m.vm.kernel,
      modules: parseModuleEntries(m.vm.kernel_modules, "/vm/kernel_modules"),
      agent: m.vm.agent,
      // a disk-root or network run recorded before issue 35 keeps its kernel line (vmid.ts kernelCmdline)
      cmdline: m.vm.cmdline,
    },
  );
  // the network first: adding or removing run.network also changes the image, and the field is the better name
  const netDiff = firstNetworkDifference(m.vm.network, prepared.vm.network);
  if (netDiff !== undefined) refuse("VM_MISMATCH", `/vm/network${netDiff}`, `the recorded network configuration differs at /vm/network${netDiff}`);
  if (prepared.inputsDigest !== m.guest_image.inputs) refuse("REPLAY_MISMATCH", "/guest_image/inputs", "the recorded inputs (launch and scenario) differ");
  if (prepared.image.digest !== m.guest_image.initramfs)
    refuse("REPLAY_MISMATCH", "/guest_image/initramfs", "the rebuilt guest image differs from the recorded one");
  // a branch: its start snapshot, the parent's stream it continues and its tail, each by digest (branch-manifest.ts)
  const branch = m.branch === undefined ? undefined : checkBranchFiles(opts.runDir, m.branch);
  const judged = branch === undefined ? scenario : branchScenario(scenario, branch.prefix, branch.scenario, m.vm.network !== undefined);
  const diff = firstVmDifference(m.vm, prepared.vm);
  if (diff !== undefined) {
    refuse(
      "VM_MISMATCH",
      `/vm/${diff}`,
      `the VM identity differs in ${diff}`,
      diff === "qemu" ? "replay needs the QEMU build that recorded the run" : undefined,
    );
  }
  return {
    manifest: m,
    prepared,
    scenario: judged,
    logPath,
    identities: { ...facts, vm: m.vm_digest, initramfs: m.guest_image.initramfs },
    ...(branch !== undefined ? { branch } : {}),
  };
}

/** A recorded events or assertions file: a strict JSON list (compared, never interpreted). */
export function readRecordedList(file: string): unknown[] {
  if (!existsSync(file))
    throw new CairnError("RUN_INVALID", `the run directory has no ${file}`, { path: file, hint: "the run directory is incomplete; record again" });
  const model = parseJsonBytes(readFileBounded(file, RUN_READ_LIMITS["run.recorded-list-bytes"], "run.recorded-list-bytes"));
  if (!Array.isArray(model)) throw new CairnError("RUN_INVALID", `${file} is not a list`, { path: file });
  return model;
}

export async function replayRun(opts: ReplayOptions): Promise<ReplayResult> {
  const { manifest, prepared, scenario, logPath, identities, branch } = await preflight(opts);
  const recordedEvents = readRecordedList(join(opts.runDir, RUN_FILES.events));
  const recordedAssertions = readRecordedList(join(opts.runDir, RUN_FILES.assertions));
  const dir = nextReplayDir(opts.runDir);
  opts.log?.(`replaying ${manifest.run_id} into ${dir}`);
  // the record's host count of refused guest connections cannot be taken again (no responder runs): said as recorded
  for (const r of readRunNetwork(opts.runDir)?.responders ?? [])
    if (r.refused > 0)
      opts.log?.(
        `recorded: the ${r.kind} responder on port ${r.port} refused ${r.refused} guest connection(s) over responder.connections ${r.connections}; the replay log gives the guest the same closed connections`,
      );
  let boot: BootResult;
  try {
    // a branch replays from its start snapshot, loaded from a private copy (QEMU opens the drive writable)
    const from = branch === undefined ? undefined : { drive: startCopy(branch.start, dir), rrsnapshot: BRANCH_START_SNAPSHOT, prefix: branch.prefix };
    boot = await bootGuest(
      prepared,
      "replay",
      { dir, rrfile: logPath, ...(from !== undefined ? { branch: from } : {}) },
      opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      undefined,
      opts.progress,
    );
  } catch (e) {
    if (isCairnError(e)) {
      const kernel = consoleFailures(join(dir, CONSOLE_LOG_FILE));
      writeFailureBundleAfter(dir, { runId: manifest.run_id, phase: "replay", status: "infrastructure-failure", error: e, identities, kernel });
    }
    throw e;
  } finally {
    dropImage(dir);
    rmSync(join(dir, BRANCH_FILES.start), { force: true });
  }
  const evaluation = evaluate(boot.decoded, scenario, boot.kernel, boot.unfinished);
  writeEvaluation(dir, evaluation);
  // the same streams a record writes, so a replayed failure's output can be read (and compared with the record's)
  writeStreams(dir, boot.decoded.streams);
  opts.onStreams?.(boot.decoded.streams);
  let mismatch: CairnError | undefined;
  const ei = firstListDifference(recordedEvents, evaluation.events as unknown[]);
  const ai = firstListDifference(recordedAssertions, evaluation.assertions as unknown[]);
  // matches: the replay equals the record, whatever the record was; a reproduced failure (an OOM kill, an
  // exit 3) matches, and the verdict states the record's status beside it (replay-verdict.ts)
  if (ei >= 0) mismatch = new CairnError("REPLAY_MISMATCH", `replayed event ${ei} differs from the record`, { path: `/events/${ei}` });
  else if (ai >= 0) mismatch = new CairnError("REPLAY_MISMATCH", `replayed assertion ${ai} differs from the record`, { path: `/assertions/${ai}` });
  else if (evaluation.outcome !== manifest.outcome) mismatch = new CairnError("REPLAY_MISMATCH", "the replayed outcome digest differs", { path: "/outcome" });
  else if (evaluation.status !== manifest.status)
    mismatch = new CairnError("REPLAY_MISMATCH", `the replayed status (${evaluation.status}) differs from the recorded one (${manifest.status})`, {
      path: "/status",
    });
  const verdict: ReplayVerdict = {
    run_id: manifest.run_id,
    matches: mismatch === undefined,
    recorded_status: manifest.status,
    recorded_failed: isFailedStatus(manifest.status),
    // equal events and assertions: the replay's facts are the record's (a mismatch says only where they differ)
    recorded: mismatch === undefined ? describeOutcome(evaluation) : null,
  };
  writeJsonPublic(join(dir, "result.json"), { ...verdict, outcome: evaluation.outcome, status: evaluation.status });
  if (mismatch) {
    const k = evaluation.kernel[0];
    const { records, frames, bytes } = boot.decoded;
    writeFailureBundle(
      dir,
      {
        runId: manifest.run_id,
        phase: "replay",
        status: k !== undefined ? "infrastructure-failure" : "replay-mismatch",
        error: mismatch,
        identities,
        protocol: { records, frames, bytes },
        events: evaluation.events,
        assertions: evaluation.assertions,
        kernel: evaluation.kernel,
        streams: boot.decoded.streams,
      },
      opts.includePrivateStreams === true,
    );
    throw mismatch;
  }
  return { runDir: opts.runDir, replayDir: dir, manifest, evaluation, verdict, qemuMs: boot.qemu.durationMs, streams: boot.decoded.streams };
}
