/**
 * `cairn branch RUN --at CHECKPOINT --scenario FILE` (issue 35 item 3): a
 * new run recorded from a parent run's checkpoint, with another scenario
 * tail. The branch is a run like any other (a run directory, run.json,
 * events, a receipt, a bundle); its run.json names the parent, the
 * checkpoint and its own files (branch-manifest.ts).
 *
 * How, on QEMU 7.2 (docs/runs.md, "Branches"): the parent's command line
 * (its VM identity, rebuilt and checked exactly as a replay does), plus the
 * parent's checkpoints.qcow2 copied as the branch's drive, `-loadvm
 * CHECKPOINT` and `rr=record,rrsnapshot=cairn-branch-start`: QEMU loads the
 * checkpoint, saves it again as the branch's start and records from there.
 * The agent, in the snapshot, waits at its hold for the host's answer on the
 * input channel; the branch answers with its tail (input-channel.ts), which
 * replaces every step the parent had not run. The branch's replay needs only
 * its start snapshot (the parent's others are deleted from its copy), the
 * parent's protocol stream up to the hold (the branch's stream continues it:
 * one sequence, one stream digest), its tail file and its replay log.
 *
 * Refused before QEMU starts, naming the field: a run recorded without
 * checkpoints, a checkpoint it did not take, a tail that does not parse
 * against where the agent stood, a parent qcow2 or protocol stream that is
 * not the one its run.json records, and everything a replay of the parent
 * would refuse (the workload, the kit, the VM identity, and with
 * `--environment`, the environment the parent was recorded in: the resume
 * check of the standard's SnapshotRef, run-facts.ts).
 */
import { chmodSync, copyFileSync, existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { CairnError, openRoot, readFileBounded, sha256, writeFileAtomic } from "../core/index.ts";
import { specHostScope } from "../tree/index.ts";
import type { EnvManifest } from "../manifest/index.ts";
import type { VerifyOptions } from "../workload/index.ts";
import { writeFailureBundle } from "./bundle.ts";
import { BRANCH_FILES, BRANCH_PREFIX_MAX_BYTES, BRANCH_SCENARIO_MAX_BYTES, BRANCH_START_SNAPSHOT, fileRefOf, type RunBranch } from "./branch-manifest.ts";
import { parseBranchTail, type BranchTail } from "./branch-scenario.ts";
import { checkCheckpointFile, CHECKPOINT_FILE_MAX_BYTES } from "./checkpoint-file.ts";
import { QEMU_IMG_FIX } from "./checkpoint-take.ts";
import { bootGuest, evaluate, type BootResult } from "./guest.ts";
import { runTool } from "./host.ts";
import type { Kit } from "./kit.ts";
import { withNoSpaceNamed } from "./no-space.ts";
import { decodeProtocol, DEFAULT_PROTOCOL_LIMITS, type ProtocolHold } from "./protocol.ts";
import { DEFAULT_TIMEOUT_MS, newRunId, RUNS_ROOT, type RecordResult } from "./record.ts";
import { preflight, readRunManifest } from "./replay-run.ts";
import { readHttpRoot, type HttpRoot } from "./responder-host.ts";
import { childrenCpuMs, RUN_ENV_MANIFEST_FILE, writeRunCost } from "./run-facts.ts";
import { RUN_MANIFEST_SCHEMA, type RunManifest } from "./run-manifest.ts";
import { writeRunOrigin } from "./run-origin.ts";
import { stageRun } from "./run-staging.ts";
import { dropImage, RUN_FILES, shellQuote, writeEvaluation, writeJsonPublic, writeStreams } from "./rundir.ts";
import { MAX_FRAME_BYTES, type Scenario } from "./scenario.ts";

export interface BranchOptions {
  /** The parent run's directory. */
  readonly runDir: string;
  /** The checkpoint's name (run.json `checkpoints.taken[].name`). */
  readonly checkpoint: string;
  /** The scenario tail file (branch-scenario.ts). */
  readonly scenario: string;
  readonly storeDir: string;
  readonly runsDir: string;
  /** The guest kit, or how to get it: called only once the inputs are checked. */
  readonly kit: Kit | (() => Promise<Kit>);
  readonly cairnVersion: string;
  readonly timeoutMs?: number;
  /** `--environment`: required when the parent was recorded in one, and then checked like a resume (run-facts.ts). */
  readonly offeredEnvironment?: EnvManifest;
  readonly allowUnpinned?: boolean;
  readonly verify?: VerifyOptions;
  readonly includePrivateStreams?: boolean;
  /**
   * The directory the parent's http responder served (`run.network.http.root`):
   * a branch records new traffic, so the responder serves again, and only the
   * bytes the parent served (their digest is in its VM identity). Required
   * when the parent has an http responder; refused otherwise.
   */
  readonly served?: string;
  readonly now?: () => Date;
  readonly log?: (line: string) => void;
}

/** What a branch starts from, as far as it can be checked without a kit: the parent's checkpoint, its file and stream, the tail's bytes. */
interface BranchParent {
  readonly manifest: RunManifest;
  readonly taken: NonNullable<RunManifest["checkpoints"]>["taken"][number];
  readonly stream: Buffer;
  readonly tailBytes: Buffer;
  readonly qcow2: string;
}

function refuse(path: string, message: string, hint?: string): never {
  throw new CairnError("RUN_INVALID", message, { path, ...(hint !== undefined ? { hint } : {}) });
}

function branchParent(opts: BranchOptions): BranchParent {
  const m = readRunManifest(opts.runDir);
  if (m.branch !== undefined)
    refuse(
      "/branch",
      `run ${m.run_id} is a branch: a branch takes no checkpoints of its own yet`,
      `branch its parent ${m.branch.parent.run_id} at another checkpoint`,
    );
  const qcow2 = checkCheckpointFile(opts.runDir, m); // a run without checkpoints, or a qcow2 run.json does not record, is refused here
  const taken = m.checkpoints!.taken.find((t) => t.name === opts.checkpoint);
  if (taken === undefined)
    refuse(
      "--at",
      // the name as given, bounded and quoted: it is the user's text, and may hold terminal escapes
      `run ${m.run_id} took no checkpoint ${JSON.stringify(opts.checkpoint.slice(0, 64))}; it took ${m.checkpoints!.taken.map((t) => t.name).join(", ")}`,
      "cairn runs show RUN lists a run's checkpoints",
    );
  const protocolFile = join(opts.runDir, "protocol.bin");
  if (!existsSync(protocolFile))
    refuse(
      "/protocol.bin",
      `the parent's protocol stream (protocol.bin, private) is not in ${opts.runDir}`,
      "a run imported without private members cannot be branched: bundle it with --include-private",
    );
  const stream = readFileBounded(protocolFile, BRANCH_PREFIX_MAX_BYTES, "branch.prefix-bytes");
  const tailBytes = readFileBounded(resolve(opts.scenario), BRANCH_SCENARIO_MAX_BYTES, "branch.scenario-bytes", {
    missing: "USAGE",
    notRegular: "RUN_INVALID",
  });
  return { manifest: m, taken, stream, tailBytes, qcow2 };
}

/** The agent's hold at the checkpoint (numbered in run.checkpoints' order) in the parent's stream, and the tail read from there. */
function branchPoint(at: BranchParent, scenario: Scenario, file: string): { hold: ProtocolHold; tail: BranchTail } {
  const decoded = decodeProtocol(at.stream, { ...DEFAULT_PROTOCOL_LIMITS, frameBytes: MAX_FRAME_BYTES });
  const index = (scenario.checkpoints ?? []).findIndex((c) => c.name === at.taken.name);
  const hold = (decoded.holds ?? []).find((h) => h.checkpoint === index);
  if (hold === undefined) refuse("/checkpoints/taken", `the parent's protocol stream holds no hold for checkpoint ${at.taken.name}`);
  const tail = parseBranchTail(
    at.tailBytes,
    { invocations: hold.invocation, stdinOffset: hold.stdinOffset, network: at.manifest.vm.network !== undefined },
    file,
  );
  return { hold, tail };
}

/**
 * The parent's served directory, read again for the branch's responder and
 * checked against the digest its VM identity records: a branch that served
 * other bytes would not be a branch of that run. Refused before QEMU starts.
 */
function servedRoot(m: RunManifest, unsafeDir: string | undefined): HttpRoot | undefined {
  const at = m.vm.network?.responders.findIndex((r) => r.kind === "http") ?? -1;
  const recorded = at < 0 ? undefined : m.vm.network!.responders[at]!.root;
  if (recorded === undefined || recorded === null) {
    if (unsafeDir !== undefined) refuse("--serve", `run ${m.run_id} has no http responder: there is no directory to serve`);
    return undefined;
  }
  if (unsafeDir === undefined)
    refuse(
      "--serve",
      `run ${m.run_id} served a directory over http (run.network.http.root); a branch records new traffic and needs the same directory`,
      "give the directory the parent's spec names as run.network.http.root (--serve DIR)",
    );
  const dir = resolve(unsafeDir);
  const root = readHttpRoot(".", specHostScope(dir, dir));
  if (root.digest !== recorded)
    throw new CairnError("REPLAY_MISMATCH", `${dir} is not the directory the parent served (its tree digest differs from the recorded one)`, {
      path: `/vm/network/responders/${at}/root`,
      hint: "serve the very files the parent run served",
    });
  return root;
}

/**
 * Leaves only snapshot `keep` in a qcow2. Run on the copy before the record
 * (only the checkpoint loaded stays, so the start QEMU saves reuses the freed
 * space) and after it (only the branch's start stays: the parent's
 * checkpoints are not the branch's to carry). The freed clusters are
 * discarded, so the file is sparse: about twice one snapshot's size long,
 * about one snapshot's size on disk.
 */
function keepOnly(file: string, keep: string): void {
  const listed = runTool("qemu-img", ["snapshot", "-l", file], { fix: QEMU_IMG_FIX });
  if (listed.status !== 0)
    throw new CairnError("RUN_INFRASTRUCTURE", `qemu-img could not list the branch's snapshots: ${listed.stderr.trim()}`, { path: file });
  const tags = listed.stdout
    .toString("utf8")
    .split("\n")
    .map((l) => /^\d+\s+(\S+)\s/.exec(l)?.[1])
    .filter((t): t is string => t !== undefined);
  if (!tags.includes(keep)) throw new CairnError("RUN_INFRASTRUCTURE", `the qcow2 holds no snapshot ${keep}`, { path: file });
  for (const t of tags.filter((x) => x !== keep)) {
    const d = runTool("qemu-img", ["snapshot", "-d", t, file], { fix: QEMU_IMG_FIX });
    if (d.status !== 0) throw new CairnError("RUN_INFRASTRUCTURE", `qemu-img could not delete snapshot ${t}: ${d.stderr.trim()}`, { path: file });
  }
}

export async function recordBranch(opts: BranchOptions): Promise<RecordResult> {
  const log = opts.log ?? (() => {});
  const at = branchParent(opts);
  const served = servedRoot(at.manifest, opts.served);
  const kit = typeof opts.kit === "function" ? await opts.kit() : opts.kit;
  // the parent's whole closure, kit and VM identity, exactly as its replay checks them (and its environment, when it has one)
  const pre = await preflight({
    runDir: opts.runDir,
    storeDir: opts.storeDir,
    kit,
    ...(opts.offeredEnvironment !== undefined ? { offeredEnvironment: opts.offeredEnvironment } : {}),
    ...(opts.allowUnpinned !== undefined ? { allowUnpinned: opts.allowUnpinned } : {}),
    ...(opts.verify !== undefined ? { verify: opts.verify } : {}),
    log,
  });
  // the parent's stream is the one its run.json records: its events and assertions give the recorded outcome
  const parentEval = evaluate(decodeProtocol(at.stream, { ...DEFAULT_PROTOCOL_LIMITS, frameBytes: MAX_FRAME_BYTES }), pre.scenario, []);
  if (parentEval.outcome !== at.manifest.outcome)
    throw new CairnError("REPLAY_MISMATCH", "the parent's protocol.bin is not the stream its run.json records", {
      path: "/outcome",
      hint: "the parent run directory was edited",
    });
  const { hold, tail } = branchPoint(at, pre.scenario, opts.scenario);
  const prefix = at.stream.subarray(0, hold.end);
  const scenario = { ...pre.scenario, expect: tail.expect ?? pre.scenario.expect };
  const now = (opts.now ?? (() => new Date()))();
  const runId = newRunId(now);
  openRoot(opts.runsDir, RUNS_ROOT, { create: true });
  const staging = stageRun(opts.runsDir, runId);
  try {
    const dir = staging.dir;
    const start = join(dir, BRANCH_FILES.start);
    copyFileSync(at.qcow2, start);
    chmodSync(start, 0o600);
    keepOnly(start, at.taken.name);
    writeFileAtomic(join(dir, BRANCH_FILES.prefix), prefix, { mode: 0o600 });
    writeFileAtomic(join(dir, BRANCH_FILES.scenario), at.tailBytes, { mode: 0o600 });
    writeFileAtomic(join(dir, RUN_FILES.lock), readFileSync(join(opts.runDir, RUN_FILES.lock)), { mode: 0o600 });
    const envManifest = join(opts.runDir, RUN_ENV_MANIFEST_FILE);
    if (existsSync(envManifest)) writeFileAtomic(join(dir, RUN_ENV_MANIFEST_FILE), readFileSync(envManifest), { mode: 0o600 });
    writeRunOrigin(dir, { via: "branch", input: `${resolve(opts.runDir)}@${at.taken.name}`, command: null });
    const rrfile = join(dir, RUN_FILES.replayLog);
    writeFileAtomic(rrfile, "", { mode: 0o600 });
    log(`branching ${at.manifest.run_id} at ${at.taken.name} (instruction ${at.taken.icount})`);
    const cpuBefore = childrenCpuMs();
    let boot: BootResult;
    try {
      boot = await bootGuest(
        served !== undefined ? { ...pre.prepared, httpRoot: served } : pre.prepared,
        "record",
        {
          dir,
          rrfile,
          branch: {
            drive: start,
            rrsnapshot: BRANCH_START_SNAPSHOT,
            prefix,
            record: { loadvm: at.taken.name, hold: hold.checkpoint, steps: tail.steps },
          },
        },
        opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      );
    } finally {
      dropImage(dir);
    }
    const cpuAfter = childrenCpuMs();
    // a branch the host's timeout stopped is not recorded: the error names the limit, not a file of the staging directory removed with it
    if (boot.unfinished !== undefined && boot.qemu.timedOut)
      throw new CairnError("RUN_TIMEOUT", `${boot.unfinished.message}; the branch was not recorded`, {
        path: "--timeout",
        hint: boot.unfinished.hint ?? "raise --timeout",
        cause: boot.unfinished,
      });
    keepOnly(start, BRANCH_START_SNAPSHOT);
    writeRunCost(dir, { wallMs: boot.qemu.durationMs, hostCpuMs: cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined });
    // the branch's stream is the parent's up to the hold, then its own: kept whole, as a run's protocol.bin is
    writeFileAtomic(join(dir, "protocol.bin"), boot.protocolBytes, { mode: 0o600 });
    const evaluation = evaluate(boot.decoded, scenario, boot.kernel, boot.unfinished);
    writeEvaluation(dir, evaluation);
    writeStreams(dir, boot.decoded.streams);
    const logBytes = readFileSync(rrfile);
    const branch: RunBranch = {
      parent: { run_id: at.manifest.run_id, outcome: at.manifest.outcome },
      checkpoint: { name: at.taken.name, icount: at.taken.icount, file: at.manifest.checkpoints!.file },
      start: fileRefOf(start, CHECKPOINT_FILE_MAX_BYTES, "run.checkpoint-file-bytes"),
      prefix: fileRefOf(join(dir, BRANCH_FILES.prefix), BRANCH_PREFIX_MAX_BYTES, "branch.prefix-bytes"),
      scenario: fileRefOf(join(dir, BRANCH_FILES.scenario), BRANCH_SCENARIO_MAX_BYTES, "branch.scenario-bytes"),
    };
    const p = at.manifest;
    const manifest: RunManifest = {
      schema: RUN_MANIFEST_SCHEMA,
      run_id: runId,
      status: evaluation.status,
      workload: p.workload,
      guest_image: p.guest_image,
      vm: p.vm,
      vm_digest: p.vm_digest,
      replay_log: { sha256: sha256(logBytes), size: logBytes.length },
      outcome: evaluation.outcome,
      ...(p.run_inputs !== undefined ? { run_inputs: p.run_inputs } : {}),
      branch,
      recorded: { at: now.toISOString(), cairn_version: opts.cairnVersion },
    };
    const replayCommand = `cairn replay ${shellQuote(staging.runDir)} --store ${shellQuote(resolve(opts.storeDir))}`;
    writeFileAtomic(join(dir, RUN_FILES.replayCommand), `${replayCommand}\n`, { mode: 0o644 });
    if (evaluation.status !== "passed" && evaluation.status !== "completed") {
      const { records, frames, bytes } = boot.decoded;
      writeFailureBundle(
        dir,
        {
          runId,
          phase: "record",
          status: evaluation.status,
          ...(boot.unfinished !== undefined ? { error: boot.unfinished } : {}),
          identities: pre.identities,
          protocol: { records, frames, bytes },
          events: evaluation.events,
          assertions: evaluation.assertions,
          kernel: evaluation.kernel,
          streams: boot.decoded.streams,
        },
        opts.includePrivateStreams === true,
      );
    }
    writeJsonPublic(join(dir, RUN_FILES.manifest), manifest);
    staging.publish();
    return {
      runDir: staging.runDir,
      manifest,
      evaluation,
      replayCommand,
      durations: { assembleMs: 0, imageMs: 0, qemuMs: boot.qemu.durationMs },
      imageSize: pre.prepared.image.size,
      replayLogSize: logBytes.length,
      protocolBytes: boot.protocolBytes.length,
      streams: boot.decoded.streams,
      ...(boot.unfinished !== undefined ? { unfinished: boot.unfinished } : {}),
    };
  } catch (e) {
    staging.discard();
    throw withNoSpaceNamed(e, staging.runDir, opts.runsDir);
  }
}
