/**
 * `cairn run`: assemble or verify the workload, build the guest image, record
 * under QEMU TCG with the pinned icount, and write the run directory
 * (rundir.ts). The workload reaches this code only through
 * `openVerifiedWorkload`, so nothing unverified enters the guest.
 */
import { randomBytes } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  CairnError,
  cairnDir,
  isCairnError,
  isJsonObject,
  openRoot,
  parseJsonBytes,
  parseYamlText,
  readFileBounded,
  sha256,
  writeFileAtomic,
  type Progress,
  type RootKind,
  type Sha256Digest,
} from "../core/index.ts";
import {
  assembleWorkload,
  type RemoteOptions,
  LOCK_MAX_BYTES,
  SPEC_MAX_BYTES,
  WORKLOAD_LOCK_SCHEMA,
  describeDerivation,
  openVerifiedWorkload,
  parseWorkloadLock,
  parseWorkloadSpec,
  type VerifiedWorkload,
  type VerifyOptions,
  checkSourcePaths,
} from "../workload/index.ts";

/** A lock is small; a bigger file is not taken for one (the workload layer bounds its own read too). */
import { writeFailureBundle } from "./bundle.ts";
import { bootGuest, evaluate, prepareGuest, type BootResult, type Evaluation, type PreparedGuest } from "./guest.ts";
import { qemuVersion, type Kit } from "./kit.ts";
import type { SnapshotRef } from "../manifest/index.ts";
import { childrenCpuMs, writeRunCost, writeRunEnvironment, writeRunEnvManifest, writeRunNetwork, type RunEnvironment } from "./run-facts.ts";
import { RESPONDER_LIMITS } from "./netid.ts";
import { RUN_MANIFEST_SCHEMA, type RunCheckpoints, type RunManifest } from "./run-manifest.ts";
import { recordedCheckpoints } from "./checkpoint-file.ts";
import { checkRecordedLogSize, replayLogWhole } from "./replay-log.ts";
import { withNoSpaceNamed } from "./no-space.ts";
import { diskFullError, dropImage, RUN_FILES, shellQuote, writeEvaluation, writeJsonPublic, writeStreams } from "./rundir.ts";
import { stageRun } from "./run-staging.ts";
import { parseScenario } from "./scenario.ts";
import { withCheckpointEvery } from "./checkpoint-spec.ts";
import { readHttpRoot } from "./responder-host.ts";
import { vmDigest } from "./vmid.ts";
import type { GuestLaunch } from "./inputs.ts";
import { storeRunInputs, type RunInputsRef } from "./input-listing.ts";
import { writeRunOrigin } from "./run-origin.ts";
import type { OutputListener } from "./follow.ts";
import { readRunInputs, runHostScope, type RunInputScope, type RunInputTree } from "./run-inputs.ts";

/** run.max_input_bytes: the input of `cairn run`, a spec or a workload lock (the larger of their own limits). */
const RUN_INPUT_MAX_BYTES = Math.max(SPEC_MAX_BYTES, LOCK_MAX_BYTES);

export const DEFAULT_TIMEOUT_MS = 300_000;

/** The runs directory's marker (core/owned-root.ts): cairn creates run directories only in a directory it marked. */
export const RUNS_ROOT: RootKind = {
  what: "runs directory",
  format: "cairn.runs/1",
  marker: "cairn-runs.json",
  mode: 0o700,
  hint: "pass --runs with a new, empty or cairn-made directory",
};

/** `--runs DIR` when given, else core's one default-location rule (`cairnDir("runs", ...)`). */
export function defaultRunsDir(env: NodeJS.ProcessEnv, cwd: string, flag?: string): string {
  if (flag) return resolve(cwd, flag);
  return cairnDir("runs", env, cwd);
}

export function guestLaunch(w: VerifiedWorkload): GuestLaunch {
  const l = w.launch;
  // argv[0] is an absolute path (the launch model refuses anything else): execve'd as is
  return { path: l.argv[0]!, argv: l.argv, env: l.env, workdir: l.workdir, uid: l.uid, gid: l.gid };
}

export function workloadFacts(w: VerifiedWorkload): RunManifest["workload"] {
  return { source_kind: w.kind, ...w.identities, derived: w.derivedDigest };
}

/** A workload lock (by name or by its schema); anything else is treated as a spec. */
function isLockFile(path: string, bytes: Buffer): boolean {
  if (path.endsWith(".lock.json")) return true;
  try {
    const m = parseJsonBytes(bytes);
    return isJsonObject(m) && m.schema === WORKLOAD_LOCK_SCHEMA;
  } catch {
    return false;
  }
}

/** A run's id: its record's UTC time to the second and 8 random hex digits (a run and a branch alike). */
export function newRunId(now: Date): string {
  const t = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  return `${t}-${randomBytes(4).toString("hex")}`;
}

export interface RecordOptions {
  readonly input: string;
  readonly storeDir: string;
  readonly runsDir: string;
  /**
   * The guest kit, or how to get it (`() => ensureKit(...)`): a function is
   * called only once the input has been read and validated, so a bad input
   * is refused before a kit is set up or built.
   */
  readonly kit: Kit | (() => Promise<Kit>);
  readonly cairnVersion: string;
  readonly timeoutMs?: number;
  readonly includePrivateStreams?: boolean;
  /** `--environment MANIFEST`: the environment manifest the run is made in, recorded for replay's resume check (run-facts.ts). */
  readonly environmentManifest?: SnapshotRef;
  /** A run of an environment lockfile (lockfile-run.ts): its `environment.json`, written into the run directory before it is published. */
  readonly environment?: RunEnvironment;
  readonly now?: () => Date;
  readonly log?: (line: string) => void;
  /** Progress: the assembly's ("pull", "apply layers"), then phase "record" in seconds QEMU has run (vm/guest.ts). */
  readonly progress?: Progress | undefined;
  /** How to reach a registry when the spec names `oci.ref` (see workload assembly). */
  readonly remote?: RemoteOptions;
  /**
   * `--inputs-root DIR`: the directory the spec's host paths (`run.inputs`,
   * `run.network.http.root`) may come from. Without it they stay inside the
   * spec's directory, named by relative paths (vm/run-inputs.ts).
   */
  readonly inputsRoot?: string;
  /**
   * The directory the spec's relative host paths start from, when the spec
   * read here is a copy written elsewhere (a spec naming an environment
   * lockfile is re-written into staging). Default: the input's directory.
   */
  readonly inputsBase?: string;
  /** `--follow`: the workload's output as the guest writes it (unverified until the run ends; follow.ts). */
  readonly onOutput?: OutputListener;
  /**
   * How the workload is verified before the run. With `memoKeyDir`, an
   * assembly here writes a verify memo and the verify uses one when it holds
   * (workload/verify-memo.ts); `full` re-derives anyway. Default: re-derive.
   */
  readonly verify?: VerifyOptions;
  /**
   * The spec's bytes when the spec recorded is a variant of the file at
   * `input` that lives nowhere on disk (a campaign's matrix point): read,
   * checked and assembled as if they were the file's, host paths relative to
   * its directory. Default: the file's bytes.
   */
  readonly specBytes?: Buffer;
  /** The file the user gave, when `input` is one cairn wrote for it (a lockfile run's exported spec); recorded in origin.json. */
  readonly origin?: string;
  /** `--checkpoint-every N`: a checkpoint after every Nth step of the spec's run section (checkpoint-spec.ts `withCheckpointEvery`). */
  readonly checkpointEvery?: number;
}

export interface RecordResult {
  readonly runDir: string;
  readonly manifest: RunManifest;
  readonly evaluation: Evaluation;
  readonly replayCommand: string;
  readonly durations: { readonly assembleMs: number; readonly imageMs: number; readonly qemuMs: number };
  readonly imageSize: number;
  readonly replayLogSize: number;
  readonly protocolBytes: number;
  /** The workload's exact output per invocation (also in the private streams/ directory). */
  readonly streams: ReadonlyMap<number, { readonly stdout: Buffer; readonly stderr: Buffer }>;
  /** How the guest failed to end through its agent (status `timeout` or `infrastructure-failure`), when it did not. */
  readonly unfinished?: CairnError;
}

export async function recordRun(given: RecordOptions): Promise<RecordResult> {
  const opts = given.checkpointEvery === undefined ? given : withEveryStep(given, given.checkpointEvery);
  const log = opts.log ?? (() => {});
  const now = (opts.now ?? (() => new Date()))();
  const runId = newRunId(now);
  const input = resolve(opts.input);
  // the one bounded reader: a FIFO, a device or a symlink given as the input is refused, never waited on or read without end
  const inputBytes =
    opts.specBytes ??
    readFileBounded(input, RUN_INPUT_MAX_BYTES, "run.max_input_bytes", {
      missing: "USAGE",
      notRegular: "RUN_INVALID",
      notRegularHint: "give a workload spec (.yaml/.json) or a workload lock, as a regular file",
    });
  // Validated before any side effect (the kit, the runs directory, the
  // store): a bad input fails fast and leaves nothing behind. Assembly and
  // openVerifiedWorkload read the input again and check it again in full.
  const inputIsLock = opts.specBytes === undefined && isLockFile(input, inputBytes);
  if (inputIsLock) parseWorkloadLock(inputBytes, input);
  const earlySpec = inputIsLock ? undefined : parseWorkloadSpec(inputBytes, input);
  // the spec's source (a program, an image layout) lies beneath its directory or --inputs-root, checked before
  // the kit: a spec from someone else never makes cairn read, store or bundle a host file elsewhere
  if (earlySpec !== undefined) checkSourcePaths({ specPath: input, hostRoot: opts.inputsBase === undefined ? opts.inputsRoot : undefined }, earlySpec.source);
  const early = earlySpec === undefined ? undefined : parseScenario(earlySpec.run);
  // run.inputs are read from the host here, once, before anything else happens (relative to the spec's
  // directory and beneath it, or beneath --inputs-root)
  const hostPaths: RunInputScope = { base: opts.inputsBase ?? dirname(input), ...(opts.inputsRoot !== undefined ? { root: opts.inputsRoot } : {}) };
  const runInputs: RunInputTree | undefined = early?.inputs !== undefined ? readRunInputs(early.inputs, hostPaths) : undefined;
  const kit = typeof opts.kit === "function" ? await opts.kit() : opts.kit;
  openRoot(opts.runsDir, RUNS_ROOT, { create: true });
  // everything goes into private staging, published under the run id only whole (run-staging.ts)
  const staging = stageRun(opts.runsDir, runId);
  try {
    const r = await recordInto(staging.dir, staging.runDir, runId, now, inputIsLock, inputBytes, input, hostPaths, runInputs, kit, opts, log);
    staging.publish();
    return r;
  } catch (e) {
    staging.discard();
    // a full file system is said as one, naming the file that could not be written where the run would have been
    const file = e instanceof CairnError && e.path?.startsWith(staging.dir) ? staging.runDir + e.path.slice(staging.dir.length) : staging.runDir;
    throw withNoSpaceNamed(e, file, opts.runsDir);
  }
}

/** The options with the spec's bytes made to declare a checkpoint every `every` steps (only a spec: a lock's run section is fixed). */
function withEveryStep(opts: RecordOptions, every: number): RecordOptions {
  const input = resolve(opts.input);
  const bytes = opts.specBytes ?? readFileBounded(input, RUN_INPUT_MAX_BYTES, "run.max_input_bytes", { missing: "USAGE", notRegular: "RUN_INVALID" });
  if (opts.specBytes === undefined && isLockFile(input, bytes))
    throw new CairnError("USAGE", "--checkpoint-every needs a workload spec: a workload lock's run section is fixed", { path: "--checkpoint-every" });
  const text = bytes.toString("utf8");
  const model = /^\s*[{[]/.test(text) ? parseJsonBytes(bytes) : parseYamlText(text, input);
  return { ...opts, specBytes: Buffer.from(JSON.stringify(withCheckpointEvery(model, every))) };
}

/** The whole record, written into `dir` (the staging directory of `runDir`). */
async function recordInto(
  dir: string,
  runDir: string,
  runId: string,
  now: Date,
  inputIsLock: boolean,
  inputBytes: Buffer,
  input: string,
  hostPaths: RunInputScope,
  earlyInputs: RunInputTree | undefined,
  kit: Kit,
  opts: RecordOptions,
  log: (line: string) => void,
): Promise<RecordResult> {
  let runInputs = earlyInputs;
  const lockPath = join(dir, RUN_FILES.lock);
  const t0 = performance.now();
  if (inputIsLock) {
    writeFileAtomic(lockPath, inputBytes, { mode: 0o600, overwrite: false });
  } else {
    log(`assembling ${opts.input}`);
    const assembled = await assembleWorkload({
      specPath: input,
      storeDir: opts.storeDir,
      lockOut: lockPath,
      cairnVersion: opts.cairnVersion,
      now: () => now,
      remote: opts.remote,
      memoKeyDir: opts.verify?.memoKeyDir,
      specBytes: opts.specBytes,
      // the spec's source lies beneath its directory or --inputs-root; a spec cairn wrote itself for an environment
      // lockfile (inputsBase set) names only its own exported image beside it
      hostRoot: opts.inputsBase === undefined ? opts.inputsRoot : undefined,
      progress: opts.progress,
    });
    // what the spec's policies left out of the tree is said here too, not only by `workload assemble` and `workload check`
    const { skipped, droppedXattrs } = assembled.listing;
    if (skipped.length > 0) log(`policy devices: skip left out ${skipped.length} device node(s) and FIFO(s) (cairn workload check lists them)`);
    if (droppedXattrs.length > 0) log(`policy xattrs: drop dropped the xattrs of ${droppedXattrs.length} member(s) (cairn workload check lists them)`);
  }
  const w = await openVerifiedWorkload(lockPath, opts.storeDir, opts.verify);
  log(describeDerivation(w.derivation));
  const scenario = parseScenario(w.run);
  // a lock given directly: its spec's run.inputs are relative to the lock's directory
  if (inputIsLock && scenario.inputs !== undefined) runInputs = readRunInputs(scenario.inputs, hostPaths);
  const t1 = performance.now();
  // the served directory is read once, here, relative to the input; the responder serves only these bytes
  const http = scenario.network?.http;
  const httpRoot = http === undefined ? undefined : readHttpRoot(http.unsafeRoot, runHostScope(hostPaths));
  const prepared = await prepareGuest(
    {
      tree: w.tree,
      content: w.content,
      launch: guestLaunch(w),
      scenario,
      ...(runInputs !== undefined ? { runInputs } : {}),
      ...(httpRoot ? { httpRoot } : {}),
      room: opts.runsDir, // the staging directory is made there and removed on a refusal, so the message names the runs directory
    },
    { kit, qemu: qemuVersion() },
  );
  // published only once the guest is built from them: a replay finds them in the store by digest
  const inputsRef = runInputs !== undefined ? storeRunInputs(opts.storeDir, runInputs) : undefined;
  const t2 = performance.now();
  writeRunOrigin(dir, { via: "run", input: opts.origin ?? input, command: [...w.launch.argv] });
  log(`recording (guest image ${prepared.image.size} bytes, VM ${vmDigest(prepared.vm)})`);
  const rrfile = join(dir, RUN_FILES.replayLog);
  writeFileAtomic(rrfile, "", { mode: 0o600 });
  let boot: BootResult;
  const cpuBefore = childrenCpuMs();
  try {
    boot = await bootGuest(prepared, "record", { dir, rrfile }, opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, opts.onOutput, opts.progress);
    // QEMU does not report a failed write of its log: a run on a full disk may lack its tail, whatever it says
    const full = diskFullError(dir, undefined, dirname(runDir));
    if (full !== undefined) throw full;
  } catch (caught) {
    // a full disk is the root cause of whatever QEMU's cut-short output looked like
    throw isCairnError(caught) && caught.code === "IO_ERROR" ? caught : (diskFullError(dir, caught, dirname(runDir)) ?? caught);
  } finally {
    dropImage(dir);
  }
  const cpuAfter = childrenCpuMs();
  checkRecordedLogSize(statSync(rrfile).size, join(runDir, RUN_FILES.replayLog));
  const logBytes = readFileSync(rrfile);
  // the error names files where the run directory will be, never the staging directory that is renamed away
  const unfinished = boot.unfinished === undefined ? undefined : renamedInto(boot.unfinished, dir, runDir);
  if (unfinished !== undefined && !replayLogWhole(logBytes)) {
    // QEMU was killed before it finished its log: nothing replayable was recorded, so nothing is kept
    throw new CairnError(unfinished.code, `${unfinished.message}; QEMU did not finish its replay log, so the run was not recorded`, {
      path: runDir,
      cause: unfinished,
      hint: unfinished.hint,
    });
  }
  writeRunCost(dir, { wallMs: boot.qemu.durationMs, hostCpuMs: cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined });
  const net = prepared.vm.network;
  if (net !== undefined && boot.refused !== undefined) {
    const connections = net.responder_limits.connections ?? RESPONDER_LIMITS["responder.connections"];
    writeRunNetwork(dir, { responders: net.responders.map((r) => ({ port: r.port, kind: r.kind, connections, refused: boot.refused?.get(r.port) ?? 0 })) });
  }
  const evaluation = evaluate(boot.decoded, scenario, boot.kernel, unfinished);
  const checkpoints = recordedCheckpoints(boot.checkpoints, log);
  const manifest = buildManifest(runId, w, prepared, evaluation, logBytes, now, opts.cairnVersion, inputsRef, checkpoints);
  writeEvaluation(dir, evaluation);
  writeStreams(dir, boot.decoded.streams);
  if (opts.environmentManifest !== undefined) writeRunEnvManifest(dir, opts.environmentManifest);
  if (opts.environment !== undefined) writeRunEnvironment(dir, opts.environment);
  const replayCommand = `cairn replay ${shellQuote(runDir)} --store ${shellQuote(resolve(opts.storeDir))}`;
  writeFileAtomic(join(dir, RUN_FILES.replayCommand), `${replayCommand}\n`, { mode: 0o644 });
  if (evaluation.status !== "passed" && evaluation.status !== "completed") {
    const { records, frames, bytes } = boot.decoded;
    writeFailureBundle(
      dir,
      {
        runId,
        phase: "record",
        status: evaluation.status,
        ...(unfinished !== undefined ? { error: unfinished } : {}),
        identities: { ...workloadFacts(w), vm: vmDigest(prepared.vm), initramfs: prepared.image.digest },
        protocol: { records, frames, bytes },
        events: evaluation.events,
        assertions: evaluation.assertions,
        kernel: evaluation.kernel,
        streams: boot.decoded.streams,
      },
      opts.includePrivateStreams === true,
    );
  }
  // written last: a run directory with run.json is a whole one
  writeJsonPublic(join(dir, RUN_FILES.manifest), manifest);
  return {
    runDir,
    manifest,
    evaluation,
    replayCommand,
    durations: { assembleMs: t1 - t0, imageMs: t2 - t1, qemuMs: boot.qemu.durationMs },
    imageSize: prepared.image.size,
    replayLogSize: logBytes.length,
    protocolBytes: boot.protocolBytes.length,
    streams: boot.decoded.streams,
    ...(unfinished !== undefined ? { unfinished } : {}),
  };
}

/** `e` with the staging directory's paths said as the published run directory's. */
function renamedInto(e: CairnError, staging: string, runDir: string): CairnError {
  const say = (s: string) => s.replaceAll(staging, runDir);
  return new CairnError(e.code, say(e.message), {
    path: e.path === undefined ? undefined : say(e.path),
    hint: e.hint === undefined ? undefined : say(e.hint),
    cause: e,
  });
}

function buildManifest(
  runId: string,
  w: VerifiedWorkload,
  p: PreparedGuest,
  ev: Evaluation,
  log: Buffer,
  now: Date,
  version: string,
  inputs: RunInputsRef | undefined,
  checkpoints: RunCheckpoints | undefined,
): RunManifest {
  const logDigest: Sha256Digest = sha256(log);
  return {
    schema: RUN_MANIFEST_SCHEMA,
    run_id: runId,
    status: ev.status,
    workload: workloadFacts(w),
    guest_image: { initramfs: p.image.digest, size: p.image.size, inputs: p.inputsDigest },
    vm: p.vm,
    vm_digest: vmDigest(p.vm),
    replay_log: { sha256: logDigest, size: log.length },
    outcome: ev.outcome,
    ...(inputs !== undefined ? { run_inputs: inputs } : {}),
    ...(checkpoints !== undefined ? { checkpoints } : {}),
    recorded: { at: now.toISOString(), cairn_version: version },
  };
}
