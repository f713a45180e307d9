/**
 * Kernel-reported failures: what the guest kernel printed on its console
 * (the 8250 serial port, `console.log` in the private run files) that means
 * the run did not happen as its identity says, whatever the agent reported.
 * A workload's OOM-killed child inside a program that then exits 0, or an
 * initramfs the kernel unpacked only in part, each left the protocol stream
 * looking like a pass; these lines are the kernel's own account.
 *
 * The guest runs with `quiet` (console loglevel 4): every line matched here
 * is printed at KERN_ERR or above, so it reaches the console. The workload
 * cannot write to the console (its root has only /dev/null and /dev/zero),
 * so it cannot forge a line; it could at most make a run fail.
 */
import { readFilePrefix } from "../core/index.ts";

export type KernelReason = "initramfs-unpack" | "oom-kill" | "io-error" | "fs-error" | "panic";

export interface KernelFailure {
  readonly reason: KernelReason;
  /** The kernel's line (timestamp stripped, printable ASCII, at most LINE_MAX characters): shareable, it names no host path. */
  readonly line: string;
}

/** The single definition of which console lines end a run, first match wins per line. */
export const KERNEL_PATTERNS: ReadonlyArray<{ readonly reason: KernelReason; readonly re: RegExp }> = [
  { reason: "initramfs-unpack", re: /Initramfs unpacking failed/ },
  { reason: "oom-kill", re: /Out of memory: Killed process|Memory cgroup out of memory|oom-kill:|invoked oom-killer|oom_reaper: reaped/ },
  { reason: "panic", re: /Kernel panic - not syncing|kernel BUG at|general protection fault|BUG: unable to handle/ },
  { reason: "fs-error", re: /EXT4-fs error|EROFS: .*error|SQUASHFS error|Buffer I\/O error|tmpfs: .*(?:error|No space)/ },
  { reason: "io-error", re: /I\/O error/ },
];

const LINE_MAX = 200;
/** At most this many failures are kept; the first ones say what happened. */
export const KERNEL_FAILURES_MAX = 16;

export function kernelFailures(consoleText: string): KernelFailure[] {
  const out: KernelFailure[] = [];
  for (const raw of consoleText.split(/\r?\n/)) {
    const hit = KERNEL_PATTERNS.find((p) => p.re.test(raw));
    if (hit === undefined) continue;
    const line = raw
      .replace(/^\[\s*\d+\.\d+\]\s*/, "")
      .replace(/[^\x20-\x7e]/g, "?")
      .slice(0, LINE_MAX);
    out.push({ reason: hit.reason, line });
    if (out.length >= KERNEL_FAILURES_MAX) break;
  }
  return out;
}

/** The console log's name in a run's (or replay's) private directory. */
export const CONSOLE_LOG_FILE = "console.log";

/** How much of the console log is read: a quiet boot prints a few KB; the kernel's first reports come first. */
export const CONSOLE_READ_BYTES = 8 * 1024 * 1024;

/** The failures in the console log at `path` (none when there is no log yet). */
export function consoleFailures(path: string): KernelFailure[] {
  const bytes = readFilePrefix(path, CONSOLE_READ_BYTES);
  return bytes === undefined ? [] : kernelFailures(bytes.toString("latin1"));
}
