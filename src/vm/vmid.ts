/**
 * The VM identity `cairn.vm/1`: everything that decides what the guest
 * executes, and so whether a replay log can be replayed. This is the single
 * definition of what the identity covers; `qemuArgs` builds the QEMU command
 * line from this model and nothing else but host paths (listed as excluded
 * in VM_IDENTITY_SCOPE with the reason each is left out).
 *
 * digest = sha256("cairn.vm/1\0" || JCS(model))
 */
import {
  CairnError,
  Checker,
  childPath,
  declareIdentity,
  defineScope,
  identityDigest,
  parseSha256,
  scopeFieldNames,
  type JsonModel,
  type Sha256Digest,
} from "../core/index.ts";
import { parseVmNetwork, type VmNetwork } from "./netid.ts";

export const VM_SCHEMA = "cairn.vm/1";

export const VM_IDENTITY = declareIdentity({
  name: "VM identity",
  tag: VM_SCHEMA,
  algorithm: "sha256",
  framing: "tag-nul-jcs",
  role: "identity",
  definedIn: "src/vm/vmid.ts",
});

export interface VmIdentity {
  readonly schema: typeof VM_SCHEMA;
  /** `qemu-system-x86_64 --version`, e.g. "7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)". */
  readonly qemu: string;
  readonly machine: string;
  readonly accel: string;
  readonly cpu: string;
  readonly memory_mib: number;
  readonly smp: number;
  /** 3, or "auto" with run.network (a fixed shift stalls the guest's traffic to the host: bench/network). */
  readonly icount_shift: number | "auto";
  readonly icount_sleep: boolean;
  readonly rtc_base: string;
  readonly rtc_clock: string;
  readonly kernel: Sha256Digest;
  /** Kernel modules the agent loads, in load order: "name=sha256:…". */
  readonly kernel_modules: readonly string[];
  readonly cmdline: string;
  readonly agent: Sha256Digest;
  readonly initramfs: Sha256Digest;
  /** The tree manifest (`cairn.tree-manifest/1`) the agent checks the unpacked template against before the first start. */
  readonly tree_manifest: Sha256Digest;
  /** The read-only root disk holding the template (`run.root: disk`), or null when the template is in the initramfs. */
  readonly root_disk: RootDisk | null;
  /** Serial ports in order (the 8250 console). */
  readonly serial: readonly string[];
  /** The device carrying the agent protocol. */
  readonly protocol_port: string;
  readonly debug_exit: string;
  readonly protocol: string;
  /**
   * The run's input tree (`run.inputs`, run-inputs.ts): its `cairn.fs/1`
   * digest. Absent when the spec has no inputs, so every identity of a run
   * without them keeps its value.
   */
  readonly run_inputs?: Sha256Digest;
  /** `run.network` only (netid.ts): the NIC, its network and the host responders. Absent otherwise, so other identities keep their values. */
  readonly network?: VmNetwork;
}

/** A root disk: the EROFS image cairn wrote from the canonical tree, and how QEMU attaches it. */
export interface RootDisk {
  readonly filesystem: "erofs";
  readonly image: Sha256Digest;
  readonly size: number;
  /** The guest device and the block driver between it and the image file. */
  readonly device: string;
}

export const ROOT_DISK_DEVICE = "virtio-blk-pci,ioeventfd=off;blkreplay;raw,read-only";

/**
 * What the identity covers, field by field (the model's keys, exactly), and
 * what it deliberately does not cover: the host-side parameters of a QEMU
 * launch (`QemuPaths`, the timeout, the binary), which never change guest
 * execution.
 */
export const VM_IDENTITY_SCOPE = defineScope({
  identity: VM_SCHEMA,
  covers: {
    "/schema": "the identity's own version",
    "/qemu": "the emulator build: replay logs are only valid for the QEMU that recorded them",
    "/machine": "the machine type (q35)",
    "/accel": "software emulation (tcg); no KVM",
    "/cpu": "the CPU model; max gives RDRAND so getrandom does not stall",
    "/memory_mib": "guest RAM (run.memory-mib, or sized from the guest image)",
    "/smp": "one vCPU: record/replay is single-threaded",
    "/icount_shift": "instruction counting: virtual time = instructions << shift",
    "/icount_sleep":
      "sleep=off (initramfs root): idle virtual time is skipped, not waited; sleep=on with a root disk, whose blkreplay completions QEMU 7.2 delivers only then, and in a run with checkpoints, whose input channel it delivers only then",
    "/rtc_base": "the guest wall clock at boot",
    "/rtc_clock": "the RTC follows virtual time",
    "/kernel": "the guest kernel bytes",
    "/kernel_modules": "the virtio modules (and their order) the agent loads for the protocol port",
    "/cmdline":
      "the kernel command line; with icount sleep=on it adds no_timer_check noapictimer pmtmr=0, so the kernel's boot-time busy waits do not fill the replay log with clock checkpoints that make a replay 3x slower than its record",
    "/agent": "the guest agent (PID 1) bytes",
    "/initramfs": "the whole guest image: agent, recorded inputs, workload template",
    "/tree_manifest": "what the agent proves the guest sees (every path, type, mode, owner, size, symlink target), derived from the canonical tree",
    "/root_disk": "the read-only root disk (run.root: disk): its filesystem, image digest and size, and the device and block driver QEMU attaches it with",
    "/serial":
      "which serial ports exist and what each carries: the console, and in a run with checkpoints the input channel (the host's answer at each checkpoint, recorded by QEMU)",
    "/protocol_port": "the virtio-serial device and port the protocol travels on",
    "/debug_exit": "the status device the agent reports through",
    "/protocol": "the agent protocol version",
    "/run_inputs":
      "the run's input files (run.inputs) as one cairn.fs/1 tree: the workload reads them, so a replay log recorded with other bytes cannot replay (absent without inputs)",
    "/network":
      "run.network only (absent otherwise): the vmxnet3 NIC and its MAC, the restricted user-mode network, filter-replay, the guest's static addresses, and every responder's kind, address, port, served directory digest, version and limits",
  } satisfies Record<`/${keyof VmIdentity}`, string>,
  excludes: {
    "/kernelPath": "where the kernel file lives on this host; its digest is covered",
    "/initrdPath": "where the initramfs file lives; its digest is covered",
    "/diskPath": "where the root disk image lives; its digest and size are covered",
    "/rrfile": "the replay log path; the log is the run's output, verified by replay itself",
    "/consoleLog": "host path of the console log",
    "/protocolLog": "host path of the protocol stream",
    "/timeoutMs": "host wall-clock guard that kills a hung QEMU; it never changes guest execution",
    "/qemuBinary": "the executable found on PATH; its version string is covered",
    "/inputSocket":
      "the host socket behind the input channel (a run with checkpoints); what it delivers is in the replay log, and a replay connects nothing to it",
    "/checkpoints": "the qcow2 holding a record's snapshots and the QMP socket they are taken through (host-only: no guest device)",
    "/snapshot":
      "a branch's start (branch.ts): the parent's checkpoint its record loads and the snapshot its replay starts from; the qcow2 holding them is bound by digest in the branch's run.json",
    "/responders":
      "the host command and socket path each guestfwd runs per connection (responder-host.ts); the responder's configuration is covered, and a replay delivers recorded packets without it",
  },
});

/** The covered fields in table order (the model's keys). */
const VM_FIELDS = scopeFieldNames(VM_IDENTITY_SCOPE, "covers") as (keyof VmIdentity)[];

export const GUEST_CMDLINE = "console=ttyS0 panic=-1 quiet";

/**
 * The kernel command line of a run with icount `sleep=on` (a root disk, a
 * network, checkpoints). With `sleep=on` QEMU 7.2 writes a CLOCK_WARP_ACCOUNT checkpoint
 * to the replay log at every return of its vCPU loop, and x86's PAUSE (the
 * kernel's `cpu_relax()`) returns from it every time: the kernel's boot-time
 * busy waits (the local APIC timer calibration, about 100 ms of guest time,
 * and the IO-APIC timer check) wrote 1.4 million checkpoints, 9 MB of log,
 * and a replay spent 3× its record reading them. `noapictimer` takes the tick
 * from the HPET instead of the calibrated local APIC timer; `no_timer_check`
 * skips the timer check; `pmtmr=0` leaves out the ACPI PM timer clocksource,
 * whose registration spins 4.5 ms in `udelay`s. Measured in docs/runs.md, "Replay speed of sleep=on runs".
 */
export const SLEEP_ON_CMDLINE = `${GUEST_CMDLINE} no_timer_check noapictimer pmtmr=0`;

/**
 * The kernel line of a run: the recorded one when it is a line cairn has
 * booted runs of that icount mode with (a replay of a run recorded before
 * SLEEP_ON_CMDLINE keeps its GUEST_CMDLINE, so it still replays), else
 * today's. A recorded line cairn never wrote is not taken: the identity
 * then differs in `cmdline`, and the replay is refused naming it.
 */
function kernelCmdline(sleep: boolean, recorded: string | undefined): string {
  const lines = sleep ? [SLEEP_ON_CMDLINE, GUEST_CMDLINE] : [GUEST_CMDLINE];
  return recorded !== undefined && lines.includes(recorded) ? recorded : lines[0]!;
}

export const PROTOCOL_PORT_NAME = "cairn.protocol";

export function defaultVmIdentity(parts: {
  qemu: string;
  kernel: Sha256Digest;
  modules: ReadonlyArray<{ name: string; digest: Sha256Digest }>;
  agent: Sha256Digest;
  initramfs: Sha256Digest;
  treeManifest: Sha256Digest;
  /** Guest RAM: `run.memory-mib`, or sized from the image (guest.ts `defaultMemoryMib`). */
  memoryMib: number;
  /** The root disk, when the template is not in the initramfs. */
  disk?: { readonly image: Sha256Digest; readonly size: number };
  /** The run's input tree digest (`run.inputs`), when it has inputs. */
  runInputs?: Sha256Digest;
  /** run.network: the network identity (netid.ts); it also sets icount to shift=auto, sleep=on. */
  network?: VmNetwork;
  /**
   * A run with checkpoints (run.checkpoints): the second serial port carries
   * the host's answers at each checkpoint (input-channel.ts), which QEMU 7.2
   * delivers only with icount sleep=on (docs/runs.md, "A runtime input channel").
   */
  inputChannel?: boolean;
  /** A replay: the recorded kernel line, taken when cairn has booted runs of this icount mode with it (`kernelCmdline`). */
  cmdline?: string;
}): VmIdentity {
  // with sleep=off QEMU 7.2 never completes a blkreplay read while recording (the log grows, the guest waits forever),
  // nor delivers the input channel's bytes (docs/runs.md, "A runtime input channel")
  const sleep = parts.disk !== undefined || parts.network !== undefined || parts.inputChannel === true;
  return {
    schema: VM_SCHEMA,
    qemu: parts.qemu,
    machine: "q35",
    accel: "tcg",
    cpu: "max",
    memory_mib: parts.memoryMib,
    smp: 1,
    // with a fixed shift and sleep=off the guest's ARP times out before the user-mode network answers (bench/network)
    icount_shift: parts.network !== undefined ? "auto" : 3,
    icount_sleep: sleep,
    rtc_base: "2020-01-01T00:00:00",
    rtc_clock: "vm",
    kernel: parts.kernel,
    kernel_modules: parts.modules.map((m) => `${m.name}=${m.digest}`),
    // sleep=on runs only: a run in an initramfs without checkpoints keeps its identity
    cmdline: kernelCmdline(sleep, parts.cmdline),
    agent: parts.agent,
    initramfs: parts.initramfs,
    tree_manifest: parts.treeManifest,
    root_disk: parts.disk === undefined ? null : { filesystem: "erofs", image: parts.disk.image, size: parts.disk.size, device: ROOT_DISK_DEVICE },
    serial: parts.inputChannel === true ? ["console", "input"] : ["console"],
    protocol_port: `virtio-serial-pci,ioeventfd=off;virtserialport,name=${PROTOCOL_PORT_NAME}`,
    debug_exit: "isa-debug-exit,iobase=0xf4,iosize=0x04",
    protocol: "cairn.protocol/1",
    ...(parts.runInputs !== undefined ? { run_inputs: parts.runInputs } : {}),
    ...(parts.network !== undefined ? { network: parts.network } : {}),
  };
}

export function vmDigest(id: VmIdentity): Sha256Digest {
  return identityDigest(VM_IDENTITY, id);
}

/** Parses a recorded VM identity strictly (from a run manifest). */
export function parseVmIdentity(unsafe: JsonModel | undefined, path: string): VmIdentity {
  const c = new Checker("RUN_INVALID");
  const o = c.object(unsafe, path, VM_FIELDS);
  if (!o) {
    c.done("invalid VM identity");
    throw new Error("unreachable");
  }
  const s = (k: string) => c.string(c.required(o, k, path), childPath(path, k)) ?? "";
  const n = (k: string) => c.integer(c.required(o, k, path), childPath(path, k), { min: 0 }) ?? 0;
  const d = (k: string): Sha256Digest => {
    try {
      return parseSha256(c.required(o, k, path), childPath(path, k));
    } catch {
      c.add(childPath(path, k), "expected a sha256 digest", "DIGEST_INVALID");
      return "" as Sha256Digest;
    }
  };
  const schema = s("schema");
  if (schema !== VM_SCHEMA) c.add(childPath(path, "schema"), `unsupported VM identity schema (this cairn reads ${VM_SCHEMA})`, "RUN_INVALID");
  const id: VmIdentity = {
    schema: VM_SCHEMA,
    qemu: s("qemu"),
    machine: s("machine"),
    accel: s("accel"),
    cpu: s("cpu"),
    memory_mib: n("memory_mib"),
    smp: n("smp"),
    icount_shift: o.icount_shift === "auto" ? "auto" : n("icount_shift"),
    icount_sleep: c.boolean(c.required(o, "icount_sleep", path), childPath(path, "icount_sleep")) ?? false,
    rtc_base: s("rtc_base"),
    rtc_clock: s("rtc_clock"),
    kernel: d("kernel"),
    kernel_modules: c.stringArray(c.required(o, "kernel_modules", path), childPath(path, "kernel_modules")) ?? [],
    cmdline: s("cmdline"),
    agent: d("agent"),
    initramfs: d("initramfs"),
    tree_manifest: d("tree_manifest"),
    root_disk: parseRootDisk(c, c.required(o, "root_disk", path), childPath(path, "root_disk")),
    serial: c.stringArray(c.required(o, "serial", path), childPath(path, "serial")) ?? [],
    protocol_port: s("protocol_port"),
    debug_exit: s("debug_exit"),
    protocol: s("protocol"),
    ...(o.run_inputs !== undefined ? { run_inputs: d("run_inputs") } : {}),
  };
  const network = parseVmNetwork(c, o.network, childPath(path, "network"));
  c.done("invalid VM identity");
  if (network !== undefined) return { ...id, network };
  return id;
}

function parseRootDisk(c: Checker, unsafe: JsonModel | undefined, path: string): RootDisk | null {
  if (unsafe === null) return null;
  const o = c.object(unsafe, path, ["filesystem", "image", "size", "device"]);
  if (!o) return null;
  const filesystem = c.string(c.required(o, "filesystem", path), childPath(path, "filesystem"));
  if (filesystem !== undefined && filesystem !== "erofs") c.add(childPath(path, "filesystem"), 'expected "erofs"', "RUN_INVALID");
  let image = "" as Sha256Digest;
  try {
    image = parseSha256(c.required(o, "image", path), childPath(path, "image"));
  } catch {
    c.add(childPath(path, "image"), "expected a sha256 digest", "DIGEST_INVALID");
  }
  return {
    filesystem: "erofs",
    image,
    size: c.integer(c.required(o, "size", path), childPath(path, "size"), { min: 0 }) ?? 0,
    device: c.string(c.required(o, "device", path), childPath(path, "device")) ?? "",
  };
}

/** Splits "name=sha256:…" module entries; refuses anything else. */
export function parseModuleEntries(entries: readonly string[], path: string): Array<{ name: string; digest: Sha256Digest }> {
  return entries.map((e, i) => {
    const m = /^([a-z0-9_]{1,64})=(sha256:[0-9a-f]{64})$/.exec(e);
    if (m === null) throw new CairnError("RUN_INVALID", "a kernel module entry is not name=sha256:<hex>", { path: `${path}/${i}` });
    return { name: m[1]!, digest: parseSha256(m[2], `${path}/${i}`) };
  });
}

/** The first field where two identities differ (in the covers order), or undefined. */
export function firstVmDifference(recorded: VmIdentity, current: VmIdentity): keyof VmIdentity | undefined {
  for (const k of VM_FIELDS) {
    if (JSON.stringify(recorded[k]) !== JSON.stringify(current[k])) return k;
  }
  return undefined;
}
