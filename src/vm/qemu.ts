/**
 * Runs QEMU for one boot. The command line is built only from the VM
 * identity plus host paths (excluded in VM_IDENTITY_SCOPE), so a record and its
 * replay differ in nothing but `rr=record|replay` — a replay whose command
 * line differs from its record hangs forever in QEMU 7.2 with no error.
 * QEMU runs in its own process group under a wall-clock timeout: at it QEMU
 * is asked to end (SIGTERM: it stops the guest and finishes its replay log,
 * so the timed-out run stays replayable up to there), and its whole group is
 * killed if it has not ended QEMU_TERM_GRACE_MS later.
 *
 * An interrupted run leaves no QEMU behind: SIGINT, SIGTERM and SIGHUP of
 * cairn kill QEMU's process group before cairn ends (by the same signal),
 * and QEMU is started through `setpriv --pdeathsig SIGKILL` (util-linux),
 * so the kernel kills it when cairn dies by a signal nothing can catch
 * (kill -9): the parent-death signal survives the exec into QEMU.
 */
import { spawn } from "node:child_process";
import { CairnError } from "../core/index.ts";
import { onInterrupt } from "./interrupt.ts";
import { killGroup, killGroupAndWait } from "./processes.ts";
import { networkArgs, type NetworkPaths } from "./netid.ts";
import { ROOT_DISK_DEVICE, type VmIdentity } from "./vmid.ts";

export type RrMode = "record" | "replay" | "none";

export interface QemuPaths {
  readonly kernelPath: string;
  readonly initrdPath: string;
  readonly rrfile: string;
  readonly consoleLog: string;
  readonly protocolLog: string;
  /** The root disk image (when the identity names one). */
  readonly diskPath?: string;
  /** The responders' host ends (when the identity names a network). */
  readonly responders?: NetworkPaths;
  /**
   * A record with `run.checkpoints` (checkpoint-take.ts): the qcow2 that holds
   * the snapshots, on no device, and the QMP socket the host takes them
   * through. Host-only: the guest sees neither, and the replay runs without
   * them (tests/vm/checkpoint.test.ts), so they are not in the VM identity.
   */
  readonly checkpoints?: { readonly drive: string; readonly qmp?: string };
  /**
   * A branch (branch.ts): its record loads the parent's checkpoint
   * (`-loadvm`) and saves its own start into the drive above (`rrsnapshot`);
   * its replay loads that start. The drive must hold them.
   */
  readonly snapshot?: { readonly loadvm?: string; readonly rrsnapshot: string };
  /** The host socket behind the input channel (serial role "input", a run with checkpoints): the host answers holds through it; a replay connects nothing. */
  readonly inputSocket?: string;
}

export const QEMU_BINARY = "qemu-system-x86_64";
export const QEMU_FIX = "install QEMU: apt-get install -y qemu-system-x86 (or run `cairn setup` as root)";

/** QEMU's option parser splits on ","; a literal comma is written ",,". */
function optValue(path: string): string {
  return path.replaceAll(",", ",,");
}

export function qemuArgs(id: VmIdentity, paths: QemuPaths, mode: RrMode): string[] {
  const icount = [`shift=${id.icount_shift}`, `sleep=${id.icount_sleep ? "on" : "off"}`];
  if (mode !== "none") icount.push(`rr=${mode}`, `rrfile=${optValue(paths.rrfile)}`);
  if (mode !== "none" && paths.snapshot !== undefined) icount.push(`rrsnapshot=${optValue(paths.snapshot.rrsnapshot)}`);
  const args = [
    "-nodefaults",
    "-no-user-config",
    "-display",
    "none",
    "-machine",
    `${id.machine},accel=${id.accel}`,
    "-cpu",
    id.cpu,
    "-m",
    String(id.memory_mib),
    "-smp",
    String(id.smp),
    "-no-reboot",
    "-kernel",
    paths.kernelPath,
    "-initrd",
    paths.initrdPath,
    "-append",
    id.cmdline,
    "-rtc",
    `base=${id.rtc_base},clock=${id.rtc_clock}`,
    "-icount",
    icount.join(","),
  ];
  id.serial.forEach((role, i) => {
    if (role === "console") args.push("-chardev", `file,id=s${i},path=${optValue(paths.consoleLog)}`, "-serial", `chardev:s${i}`);
    else if (role === "input") {
      // QEMU records what a serial port receives: the host's answers replay from the log, with nothing connected
      if (paths.inputSocket === undefined)
        throw new CairnError("RUN_INFRASTRUCTURE", "the VM identity names an input channel but no socket was given", { path: `/vm/serial/${i}` });
      args.push("-chardev", `socket,id=s${i},path=${optValue(paths.inputSocket)},server=on,wait=off`, "-serial", `chardev:s${i}`);
    } else throw new CairnError("VM_MISMATCH", `unknown serial port role "${role}"`, { path: `/vm/serial/${i}` });
  });
  // the protocol: a virtio-serial port backed by a file ("virtio-serial-pci,ioeventfd=off;virtserialport,name=N")
  const port = /^virtio-serial-pci,ioeventfd=off;virtserialport,name=([a-z.]+)$/.exec(id.protocol_port);
  if (port === null) throw new CairnError("VM_MISMATCH", `unsupported protocol port "${id.protocol_port}"`, { path: "/vm/protocol_port" });
  args.push(
    // ioeventfd=off: the guest's kick is handled synchronously in the vCPU thread, so every
    // record reaches the file before the agent's isa-debug-exit ends QEMU (with the default
    // ioeventfd the main loop drained the queue later and the last records could be lost)
    "-device",
    "virtio-serial-pci,id=vs,ioeventfd=off",
    "-chardev",
    `file,id=proto,path=${optValue(paths.protocolLog)}`,
    "-device",
    `virtserialport,bus=vs.0,chardev=proto,name=${port[1]}`,
  );
  args.push("-device", id.debug_exit);
  args.push(...rootDiskArgs(id, paths));
  if (id.network !== undefined) {
    if (paths.responders === undefined)
      throw new CairnError("RUN_INFRASTRUCTURE", "the VM identity names a network but no responder ends were given", { path: "/vm/network" });
    args.push(...networkArgs(id.network, paths.responders, mode));
  }
  if (paths.checkpoints !== undefined) {
    args.push("-drive", `if=none,id=cairn-snap,file=${optValue(paths.checkpoints.drive)},format=qcow2`);
    if (paths.checkpoints.qmp !== undefined) args.push("-qmp", `unix:${optValue(paths.checkpoints.qmp)},server=on,wait=off`);
  }
  if (paths.snapshot?.loadvm !== undefined) args.push("-loadvm", paths.snapshot.loadvm);
  return args;
}

/**
 * The root disk: the image file read-only, under QEMU's blkreplay driver (so
 * a recording logs when each read completes and a replay delivers it at the
 * same instruction), on a virtio-blk device with ioeventfd off (requests
 * handled in the vCPU thread, as for the protocol port). Both block nodes
 * must be read-only: blkreplay refuses a writable image under a read-only
 * device. The same arguments in record, replay and plain boots.
 */
function rootDiskArgs(id: VmIdentity, paths: QemuPaths): string[] {
  if (id.root_disk === null) return [];
  if (id.root_disk.device !== ROOT_DISK_DEVICE)
    throw new CairnError("VM_MISMATCH", `unsupported root disk device "${id.root_disk.device}"`, { path: "/vm/root_disk/device" });
  if (paths.diskPath === undefined)
    throw new CairnError("RUN_INFRASTRUCTURE", "the VM identity names a root disk but no image file was given", { path: "/vm/root_disk" });
  return [
    "-drive",
    `file=${optValue(paths.diskPath)},if=none,id=rootimg,format=raw,readonly=on`,
    "-drive",
    "driver=blkreplay,if=none,image=rootimg,id=rootrr,readonly=on",
    "-device",
    "virtio-blk-pci,drive=rootrr,ioeventfd=off",
  ];
}

export interface QemuResult {
  /** QEMU's exit status; isa-debug-exit value v gives (v << 1) | 1. */
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  /** Killed because `abort` fired (the run's responder failed). */
  readonly aborted: boolean;
  /**
   * A replay that ran to the end of its log without the guest ending there
   * (QEMU says "replay file is over" and pauses the guest, forever): QEMU was
   * then asked to end. The replay of a run the host stopped at its timeout
   * ends so, at the same instruction the record did.
   */
  readonly logEnded: boolean;
  readonly durationMs: number;
  /** QEMU's own stderr (bounded), for diagnostics. */
  readonly stderr: string;
}

const STDERR_MAX = 64 * 1024;
/** What QEMU 7.2 prints when a replay has read its log to the end (replay/replay-internal.c). */
const REPLAY_LOG_OVER = /replay file is over/;
/** How long QEMU has to finish its replay log after the timeout's SIGTERM before its process group is killed. */
export const QEMU_TERM_GRACE_MS = 10_000;
/** util-linux's setpriv: sets QEMU's parent-death signal, then execs it (same pid, same process group). */
const SETPRIV_BINARY = "setpriv";

/**
 * Runs QEMU to its end. `abort` (the responder died or stopped answering,
 * responder-host.ts) kills its process group at once; the result then says
 * `aborted` and the caller names why.
 */
export function runQemu(id: VmIdentity, paths: QemuPaths, mode: RrMode, timeoutMs: number, abort?: AbortSignal): Promise<QemuResult> {
  const args = qemuArgs(id, paths, mode);
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(SETPRIV_BINARY, ["--pdeathsig", "SIGKILL", "--", QEMU_BINARY, ...args], {
      detached: true, // its own process group, so the timeout kills everything it started
      stdio: ["ignore", "ignore", "pipe"],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" },
    });
    const endGroup = (): void => void (child.pid !== undefined && killGroup(child.pid));
    // Interrupted: QEMU's group (its guestfwd gates too) ends first, before the responder's directory goes (interrupt.ts).
    const forgetInterrupt = onInterrupt(() => {
      if (child.pid !== undefined) killGroupAndWait(child.pid);
    });
    const stopWatching = (): void => {
      forgetInterrupt();
      abort?.removeEventListener("abort", onAbort);
    };
    let stderr = "";
    let timedOut = false;
    let logEnded = false;
    child.stderr.on("data", (d: Buffer) => {
      if (stderr.length < STDERR_MAX) stderr += d.toString("utf8").slice(0, STDERR_MAX - stderr.length);
      if (mode === "replay" && !logEnded && REPLAY_LOG_OVER.test(stderr)) {
        logEnded = true;
        terminate();
      }
    });
    // Over time: QEMU is asked to end (SIGTERM: it stops the guest and finishes its replay log, so the
    // timed-out run stays replayable up to that point); only if it has not ended QEMU_TERM_GRACE_MS later is its group killed.
    let grace: NodeJS.Timeout | undefined;
    const terminate = (): void => {
      try {
        if (child.pid !== undefined) process.kill(child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      grace ??= setTimeout(endGroup, QEMU_TERM_GRACE_MS);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      terminate();
    }, timeoutMs);
    let aborted = false;
    const onAbort = (): void => {
      aborted = true;
      endGroup();
    };
    if (abort?.aborted) onAbort();
    else abort?.addEventListener("abort", onAbort, { once: true });
    child.on("error", (e) => {
      clearTimeout(timer);
      clearTimeout(grace);
      stopWatching();
      const errno = (e as { code?: string }).code;
      if (errno === "ENOENT")
        reject(new CairnError("PREREQUISITE_MISSING", `${SETPRIV_BINARY} is not installed`, { path: SETPRIV_BINARY, hint: "apt-get install util-linux" }));
      else reject(new CairnError("RUN_INFRASTRUCTURE", `cannot start ${QEMU_BINARY}${errno ? ` (${errno})` : ""}`, { cause: e }));
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      clearTimeout(grace);
      stopWatching();
      if (code === 127 && /failed to execute/.test(stderr)) {
        reject(new CairnError("PREREQUISITE_MISSING", `${QEMU_BINARY} is not installed`, { path: QEMU_BINARY, hint: QEMU_FIX }));
        return;
      }
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      resolve({ exitCode: code, signal, timedOut: timedOut && !logEnded, aborted, logEnded, durationMs, stderr });
    });
  });
}
