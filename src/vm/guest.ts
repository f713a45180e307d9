/**
 * One guest, from inputs to decoded facts. `prepareGuest` is the single path
 * from (workload tree, content, launch, scenario, kit) to the exact bytes
 * QEMU will see and the VM identity that names them; record and replay both
 * go through it, so a replay rebuilds the same image or is refused.
 * `bootGuest` runs QEMU once (record, replay or plain) and decodes the
 * protocol stream; `evaluate` applies the host-side checker.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CairnError, isCairnError, sha256, writeFileAtomic, type Progress, type Sha256Digest } from "../core/index.ts";
import type { CanonicalTree, ContentSource } from "../tree/index.ts";
import { checkAssertions, outcomeDigest, runStatus, type AssertionResult, type RunStatus } from "./checker.ts";
import { writeErofs, type ErofsPlan } from "./erofs.ts";
import { writeGuestImageFile, writeRootDiskFile } from "./boot-image.ts";
import { following, type OutputListener } from "./follow.ts";
import { withInputChannel, type BranchSnapshot, type CheckpointOutcome } from "./checkpoint-take.ts";
import { writeGuestImage, type GuestImage, type GuestImageParts } from "./initramfs.ts";
import { DISK_MODULES, GUEST_MODULES, NET_MODULES } from "./kernel.ts";
import { encodeInputs, type GuestLaunch } from "./inputs.ts";
import { CONSOLE_LOG_FILE, consoleFailures, type KernelFailure } from "./kernel-log.ts";
import { readKitObject, type Kit } from "./kit.ts";
import { stoppedByHost } from "./replay-log.ts";
import { decodeProtocol, DEFAULT_PROTOCOL_LIMITS, type DecodedProtocol, type NormalizedEvent } from "./protocol.ts";
import { runQemu, type QemuResult, type RrMode } from "./qemu.ts";
import type { Scenario } from "./scenario.ts";
import { checkInitramfsSize, checkRoom, defaultMemoryMib, sizeGuest } from "./sizing.ts";
import { mergeRunInputs, withInputContent, type RunInputTree } from "./run-inputs.ts";
import { encodeTreeManifest, type TreeManifest } from "./tree-manifest.ts";
import { guestNetworkLine, networkIdentity } from "./netid.ts";
import { absentResponder, infra, startResponder, type HttpRoot } from "./responder-host.ts";
import { defaultVmIdentity, type VmIdentity } from "./vmid.ts";

export interface GuestInputs {
  readonly tree: CanonicalTree;
  readonly content: ContentSource;
  readonly launch: GuestLaunch;
  readonly scenario: Scenario;
  /** The run's input tree (`run.inputs`): read from the host when recording, from the store when replaying (run-inputs.ts). */
  readonly runInputs?: RunInputTree;
  /** `run.network.http`: the served directory (read before a record; only its recorded digest at replay). */
  readonly httpRoot?: HttpRoot;
  /** Where the boot will write the images: a root disk is refused before it is hashed when that file system lacks room (sizing.ts `checkRoom`). */
  readonly room?: string;
}

export interface PreparedGuest {
  readonly inputs: Buffer;
  readonly inputsDigest: Sha256Digest;
  /** The initramfs's digest and size; its bytes are written again from `imageParts` by `bootGuest` (never held whole). */
  readonly image: GuestImage;
  readonly imageParts: GuestImageParts;
  readonly treeManifest: TreeManifest;
  readonly vm: VmIdentity;
  readonly kernelPath: string;
  readonly scenario: Scenario;
  /** The root disk (`run.root: disk`), written into the boot directory by `bootGuest` and checked against `vm.root_disk`. */
  readonly disk?: PreparedDisk;
  /** What the http responder serves (record and plain boots start it; a replay needs none). */
  readonly httpRoot?: HttpRoot;
}

export interface PreparedDisk {
  readonly plan: ErofsPlan;
  readonly tree: CanonicalTree;
  readonly content: ContentSource;
  readonly digest: Sha256Digest;
  readonly size: number;
}

/** Which kernel, modules and agent to use: the kit's current ones (record) or those a run names (replay). */
export interface KitChoice {
  readonly kit: Kit;
  readonly qemu: string;
  readonly kernel?: Sha256Digest;
  readonly modules?: ReadonlyArray<{ readonly name: string; readonly digest: Sha256Digest }>;
  readonly agent?: Sha256Digest;
  /** A replay: the recorded kernel line (vmid.ts `kernelCmdline` takes it only if cairn has used it for such a run). */
  readonly cmdline?: string;
}

/** The workload's tree and content with the run's inputs laid in; the inputs must be exactly the ones the scenario names. */
function withRunInputs(g: GuestInputs): { tree: CanonicalTree; content: ContentSource } {
  const wanted = (g.scenario.inputs ?? []).map((i) => i.to);
  const have = g.runInputs?.tos ?? [];
  if (wanted.length !== have.length || wanted.some((t, i) => t !== have[i]))
    throw new CairnError("RUN_INVALID", "the run's input tree does not hold the inputs the run section names", {
      path: "/run/inputs",
      hint: "the input tree is made from the spec's run.inputs when the run is recorded",
    });
  if (g.runInputs === undefined) return { tree: g.tree, content: g.content };
  return { tree: mergeRunInputs(g.tree, g.runInputs), content: withInputContent(g.content, g.runInputs) };
}

export async function prepareGuest(unmerged: GuestInputs, choice: KitChoice): Promise<PreparedGuest> {
  const g = { ...unmerged, ...withRunInputs(unmerged) };
  // the one sizing rule (sizing.ts), which `cairn workload check` applies too: the root, then vm.image-bytes on the tree and the disk
  const size = sizeGuest(g.tree, g.scenario);
  const root = size.root;
  if (size.plan !== undefined && g.room !== undefined) checkRoom(g.room, size.plan.size, "the root disk");
  const kernel = readKitObject(choice.kit.dir, "kernels", choice.kernel ?? choice.kit.kernel.digest, "/vm/kernel");
  // every guest loads the protocol's modules; a disk root adds the disk's, a network run the NIC's
  const groups: ReadonlyArray<readonly (readonly [string, string])[]> = [
    GUEST_MODULES,
    ...(root === "disk" ? [DISK_MODULES] : []),
    ...(g.scenario.network !== undefined ? [NET_MODULES] : []),
  ];
  const wanted = (m: { readonly name: string }) => groups.some((grp) => grp.some(([n]) => n === m.name));
  const moduleRefs = choice.modules ?? choice.kit.kernel.modules.filter(wanted);
  const modules = moduleRefs.map((m, i) => ({
    name: m.name,
    digest: m.digest,
    bytes: readKitObject(choice.kit.dir, "kernels", m.digest, `/vm/kernel_modules/${i}`).bytes,
  }));
  const agent = readKitObject(choice.kit.dir, "agents", choice.agent ?? choice.kit.agent.digest, "/vm/agent");
  const inputs = encodeInputs(g.launch, g.scenario);
  const network = g.scenario.network === undefined ? undefined : networkIdentity(g.scenario.network, g.httpRoot?.digest);
  const treeManifest = encodeTreeManifest(g.tree, g.scenario.verifyTree ?? "metadata");
  let disk: PreparedDisk | undefined;
  if (root === "disk") {
    // written once here only to be hashed; bootGuest writes it again into the boot directory and checks the digest
    const plan = size.plan!;
    const hashed = await writeErofs(g.tree, g.content, { write() {} }, plan);
    disk = { plan, tree: g.tree, content: g.content, digest: hashed.digest, size: hashed.size };
  }
  // hashed here, not kept: bootGuest writes it again into the boot directory and checks the digest, as it does the disk's
  const imageParts: GuestImageParts = {
    agent: agent.bytes,
    inputs,
    treeManifest,
    modules,
    tree: g.tree,
    content: g.content,
    disk: disk !== undefined,
    overlay: { proc: g.scenario.proc === true, urandom: g.scenario.urandom === true },
    ...(network !== undefined ? { network: guestNetworkLine(network) } : {}),
  };
  const image = await writeGuestImage(imageParts, { write() {} });
  checkInitramfsSize(image.size, g.scenario, root);
  const vm = defaultVmIdentity({
    qemu: choice.qemu,
    kernel: sha256(kernel.bytes),
    modules,
    agent: sha256(agent.bytes),
    initramfs: image.digest,
    treeManifest: treeManifest.digest,
    // a disk root is read through the page cache: guest RAM need not hold the tree
    memoryMib: g.scenario.memoryMib ?? defaultMemoryMib(image.size, root),
    ...(disk !== undefined ? { disk: { image: disk.digest, size: disk.size } } : {}),
    ...(g.runInputs !== undefined ? { runInputs: g.runInputs.digest } : {}),
    ...(network !== undefined ? { network } : {}),
    ...(g.scenario.checkpoints !== undefined ? { inputChannel: true } : {}),
    ...(choice.cmdline !== undefined ? { cmdline: choice.cmdline } : {}),
  });
  return {
    inputs,
    inputsDigest: sha256(inputs),
    image,
    imageParts,
    treeManifest,
    vm,
    kernelPath: kernel.path,
    scenario: g.scenario,
    ...(disk ? { disk } : {}),
    ...(g.httpRoot ? { httpRoot: g.httpRoot } : {}),
  };
}

export interface BootFiles {
  /** Private directory for the image files (boot-image.ts), logs and protocol stream. */
  readonly dir: string;
  readonly rrfile: string;
  /** A branch (branch.ts): the snapshot it starts from, and when recording, the parent's checkpoint and the steps sent at its hold. */
  readonly branch?: BranchSnapshot;
}

export interface BootResult {
  readonly qemu: QemuResult;
  readonly protocolBytes: Buffer;
  readonly decoded: DecodedProtocol;
  readonly consoleLog: string;
  readonly protocolLog: string;
  /** What the guest kernel reported on its console that ends the run (kernel-log.ts). */
  readonly kernel: readonly KernelFailure[];
  /**
   * Set when the guest did not end through its agent: the host's timeout
   * (`RUN_TIMEOUT`), QEMU ending without the agent's status (a panic, a
   * crash), an invalid protocol stream (`RUN_INFRASTRUCTURE`). `decoded`
   * then holds the stream's whole records only. Whether such a run is
   * recorded is the caller's decision (its replay log must be whole).
   */
  readonly unfinished?: CairnError;
  /** A network record: guest connections each responder's gate refused (`responder.connections`), by port. */
  readonly refused?: ReadonlyMap<number, number>;
  /** A record with `run.checkpoints`: what was taken, what was missed, and the qcow2 holding them (checkpoint-take.ts). */
  readonly checkpoints?: CheckpointOutcome & { readonly file: string };
}

export const ROOT_DISK_FILE = "root.erofs";

/** QEMU exit statuses the agent produces through isa-debug-exit: (value << 1) | 1. */
const AGENT_OK = 1;
const AGENT_INFRA = 3;

/**
 * Reports phase `mode` ("record", "replay") in whole seconds QEMU has run:
 * at once, each second, and at the end. Time, not guest instructions: QEMU's
 * instruction count is known only from its finished replay log
 * (replay-log.ts), so a bar cannot show it while the guest runs.
 */
function tickSeconds(mode: RrMode, progress: Progress | undefined): () => void {
  if (progress === undefined) return () => {};
  const phase = mode === "none" ? "boot" : mode;
  const started = performance.now();
  const seconds = (): number => Math.floor((performance.now() - started) / 1000);
  progress({ phase, done: 0, unit: "seconds" });
  const timer = setInterval(() => progress({ phase, done: seconds(), unit: "seconds" }), 1000);
  timer.unref();
  return () => {
    clearInterval(timer);
    progress({ phase, done: seconds(), unit: "seconds" });
  };
}

/**
 * `follow`: called with the workload's output while QEMU runs (follow.ts); it only reads the protocol file QEMU writes.
 * `progress`: the seconds QEMU has run (tickSeconds).
 */
export async function bootGuest(
  p: PreparedGuest,
  mode: RrMode,
  files: BootFiles,
  timeoutMs: number,
  follow?: OutputListener,
  progress?: Progress,
): Promise<BootResult> {
  const initrdPath = join(files.dir, "initramfs.img");
  const consoleLog = join(files.dir, CONSOLE_LOG_FILE);
  const protocolLog = join(files.dir, "protocol.bin");
  // a root disk's ceiling is the host's room: for both images and the logs' margin, before the first byte of either is written
  if (p.disk !== undefined) checkRoom(files.dir, p.image.size + p.disk.size, "the root disk and the initramfs");
  await writeGuestImageFile(p.imageParts, initrdPath, p.image);
  writeFileAtomic(consoleLog, "", { mode: 0o600 });
  writeFileAtomic(protocolLog, "", { mode: 0o600 });
  let diskPath: string | undefined;
  if (p.disk !== undefined) {
    diskPath = join(files.dir, ROOT_DISK_FILE);
    await writeRootDiskFile(p.disk.tree, p.disk.content, p.disk.plan, diskPath, p.disk);
  }
  // a record (or plain boot) talks to cairn's responder; a replay gets the recorded packets and none
  const net = p.vm.network;
  const responder = net === undefined ? undefined : mode === "replay" ? absentResponder(net) : await startResponder(net, p.httpRoot);
  let qemu: QemuResult;
  let checkpoints: BootResult["checkpoints"];
  let channelFailure: string | undefined;
  const stopTicking = tickSeconds(mode, progress);
  try {
    // checkpoints are taken while recording only; a replay gets the host's answers from its log (checkpoint-take.ts)
    const responderFailed = responder !== undefined && "failed" in responder ? responder.failed : undefined;
    const channel = { channel: p.vm.serial.includes("input"), mode, specs: p.scenario.checkpoints, dir: files.dir, protocolLog };
    const taken = await withInputChannel({ ...channel, ...(files.branch !== undefined ? { branch: files.branch } : {}) }, (extra, channelFailed) =>
      following(protocolLog, follow, () =>
        runQemu(
          p.vm,
          {
            kernelPath: p.kernelPath,
            initrdPath,
            rrfile: files.rrfile,
            consoleLog,
            protocolLog,
            ...(diskPath ? { diskPath } : {}),
            ...(responder ? { responders: responder.paths } : {}),
            ...extra,
          },
          mode,
          timeoutMs,
          responderFailed !== undefined && channelFailed !== undefined ? AbortSignal.any([responderFailed, channelFailed]) : (responderFailed ?? channelFailed),
        ),
      ),
    );
    qemu = taken.result;
    checkpoints = taken.checkpoints;
    channelFailure = taken.channelFailure;
  } finally {
    stopTicking();
    responder?.stop();
  }
  const refused = responder !== undefined && "refused" in responder ? responder.refused() : undefined;
  // a branch's tail that could not be sent (QEMU was then stopped: aborted, by the channel, not a responder): the cause,
  // unless the host's timeout stopped QEMU first (a RUN_TIMEOUT below)
  if (channelFailure !== undefined && !qemu.timedOut) throw new CairnError("RUN_INFRASTRUCTURE", channelFailure);
  if (qemu.aborted && channelFailure === undefined) {
    const why = responder !== undefined && "reason" in responder ? responder.reason() : undefined;
    throw infra(`QEMU (${mode}) was stopped: ${why ?? "the responder failed"}`);
  }
  const kernel = consoleFailures(consoleLog);
  // a branch's stream continues its parent's from the hold (branch.ts): decoded as one
  const protocolBytes = files.branch !== undefined ? Buffer.concat([files.branch.prefix, readFileSync(protocolLog)]) : readFileSync(protocolLog);
  const limits = { ...DEFAULT_PROTOCOL_LIMITS, frameBytes: p.scenario.limits.frameBytes };
  const unfinished = (why: CairnError): BootResult => ({
    qemu,
    protocolBytes,
    decoded: partialDecode(protocolBytes, limits),
    consoleLog,
    protocolLog,
    kernel,
    unfinished: why,
    ...(refused !== undefined ? { refused } : {}),
    ...(checkpoints !== undefined ? { checkpoints } : {}),
  });
  // a replay of a record the host stopped at its timeout ends where the record did, by the recorded host signal
  const replayOfTimeout =
    mode === "replay" && !qemu.timedOut && qemu.exitCode !== AGENT_OK && qemu.exitCode !== AGENT_INFRA && stoppedByHost(readFileSync(files.rrfile));
  if (qemu.timedOut || qemu.logEnded || replayOfTimeout) {
    return unfinished(
      new CairnError(
        "RUN_TIMEOUT",
        qemu.timedOut
          ? `QEMU (${mode}) did not finish within ${timeoutMs} ms and was stopped`
          : `QEMU (${mode}) reached the end of the recorded log without the guest ending: the record was stopped there by the host's timeout`,
        {
          path: consoleLog,
          hint:
            mode === "replay"
              ? "a replay hangs when anything differs from the record; the VM identity check should have caught it"
              : "raise --timeout, or lower run.limits.time-ms",
        },
      ),
    );
  }
  if (qemu.exitCode !== AGENT_OK && qemu.exitCode !== AGENT_INFRA) {
    const said = kernel.length > 0 ? `; the kernel reported ${kernel[0]!.reason}: ${kernel[0]!.line}` : "";
    return unfinished(
      new CairnError(
        "RUN_INFRASTRUCTURE",
        `QEMU (${mode}) exited with ${qemu.exitCode ?? qemu.signal} without the agent's status (guest crash or kernel panic)${said}`,
        {
          path: consoleLog,
          hint: `the guest console log is in ${consoleLog} (private)${qemu.stderr ? `; QEMU said: ${qemu.stderr.trim().slice(0, 300)}` : ""}`,
        },
      ),
    );
  }
  let decoded: DecodedProtocol;
  try {
    decoded = decodeProtocol(protocolBytes, limits);
  } catch (e) {
    if (isCairnError(e) && e.code === "RUN_INFRASTRUCTURE") return unfinished(e);
    throw e;
  }
  const statusOk = decoded.events.some((e) => e.event === "final" && e.status === "ok");
  if (statusOk !== (qemu.exitCode === AGENT_OK)) {
    return unfinished(new CairnError("RUN_INFRASTRUCTURE", "the QEMU exit status and the agent's final record disagree", { path: protocolLog }));
  }
  return {
    qemu,
    protocolBytes,
    decoded,
    consoleLog,
    protocolLog,
    kernel,
    ...(refused !== undefined ? { refused } : {}),
    ...(checkpoints !== undefined ? { checkpoints } : {}),
  };
}

/** What a stream of a guest that did not end through its agent holds up to its last whole record; nothing when even that is refused. */
function partialDecode(bytes: Buffer, limits: typeof DEFAULT_PROTOCOL_LIMITS): DecodedProtocol {
  try {
    return decodeProtocol(bytes, limits, { partial: true });
  } catch {
    return { events: [], streams: new Map(), records: 0, frames: 0, bytes: bytes.length };
  }
}

export interface Evaluation {
  readonly events: readonly NormalizedEvent[];
  readonly assertions: readonly AssertionResult[];
  readonly outcome: Sha256Digest;
  readonly status: RunStatus;
  /** Kernel-reported failures: any one makes the run an infrastructure failure, whatever the events say. */
  readonly kernel: readonly KernelFailure[];
}

export function evaluate(decoded: DecodedProtocol, scenario: Scenario, kernel: readonly KernelFailure[], unfinished?: CairnError): Evaluation {
  if (unfinished !== undefined) {
    // the guest never reported an outcome: no assertion is checked, and the status says how QEMU ended
    const status: RunStatus = unfinished.code === "RUN_TIMEOUT" && kernel.length === 0 ? "timeout" : "infrastructure-failure";
    return { events: decoded.events, assertions: [], outcome: outcomeDigest(decoded.events, []), status, kernel };
  }
  const assertions = checkAssertions(scenario.expect, decoded);
  return {
    events: decoded.events,
    assertions,
    outcome: outcomeDigest(decoded.events, assertions),
    status: runStatus(decoded.events, assertions, kernel),
    kernel,
  };
}
