/**
 * Processes cairn started, seen from /proc: whether one is still alive, and
 * killing a process group and waiting until it is gone.
 *
 * `killGroupAndWait` is for cleanups: a SIGKILL is delivered
 * asynchronously, and a process in a system call (a gate opening its log)
 * finishes that call first, so a directory removed right after the kill
 * could gain a file. It waits, bounded, until no live process of the group
 * is left (zombies hold nothing open).
 */
import { readdirSync, readFileSync } from "node:fs";

/** How long `killGroupAndWait` waits for a killed group's processes to end. */
const GROUP_END_WAIT_MS = 3000;
const GROUP_POLL_MS = 20;

/** SIGKILLs process group `pgid`; false when there is no such group (it has ended). */
export function killGroup(pgid: number): boolean {
  try {
    process.kill(-pgid, "SIGKILL");
    return true;
  } catch {
    return false;
  }
}

/** SIGKILLs process group `pgid` (no error if it is gone) and waits, at most GROUP_END_WAIT_MS, until none of its processes is alive. */
export function killGroupAndWait(pgid: number): void {
  if (!killGroup(pgid)) return; // no such group
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + GROUP_END_WAIT_MS;
  while (liveInGroup(pgid) && Date.now() < deadline) Atomics.wait(sleeper, 0, 0, GROUP_POLL_MS);
}

/** Whether a process of group `pgid` is alive (not a zombie), from /proc/PID/stat. */
function liveInGroup(pgid: number): boolean {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((n) => /^[0-9]+$/.test(n));
  } catch {
    return false;
  }
  for (const pid of pids) {
    const stat = procStat(pid);
    if (stat !== undefined && stat.pgrp === pgid && stat.state !== "Z" && stat.state !== "X") return true;
  }
  return false;
}

/** Whether process `pid` is alive: it exists and is not a zombie (ended, not yet reaped). */
export function processAlive(pid: number): boolean {
  const stat = procStat(String(pid));
  return stat !== undefined && stat.state !== "Z" && stat.state !== "X";
}

/**
 * When process `pid` started (clock ticks since boot, /proc/PID/stat field
 * 22), or undefined when it is gone or a zombie: with the pid, it names one
 * process, so a pid reused by a later process is not taken for it.
 */
export function processStartTime(pid: number): string | undefined {
  const stat = procStat(String(pid));
  return stat === undefined || stat.state === "Z" || stat.state === "X" ? undefined : stat.start;
}

/** State, process group and start time from /proc/PID/stat; undefined when the process is gone. */
function procStat(pid: string): { state: string; pgrp: number; start: string } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
  // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so read after the last ')'
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { state: fields[0]!, pgrp: Number(fields[2]), start: fields[19] ?? "" };
}
