/**
 * What an interrupted run does (SIGINT, SIGTERM, SIGHUP of cairn): one
 * handler runs every registered cleanup, the last registered first, then
 * ends the process as the signal asked (the default action, our handler
 * removed). A run registers in the order it starts things: its staging
 * directory, the responder, QEMU; so QEMU's process group (and the gates
 * its guestfwd runs, which write into the responder's directory) is gone
 * before the responder's directory is removed, and the staging directory
 * goes last. One handler, not one per part: with several, each part's
 * handler ran in registration order and the first to re-raise the signal
 * decided what the rest could still do.
 *
 * `killGroupAndWait` is for cleanups: a SIGKILL is delivered
 * asynchronously, and a process in a system call (a gate opening its log)
 * finishes that call first, so a directory removed right after the kill
 * could gain a file. It waits, bounded, until no live process of the group
 * is left (zombies hold nothing open).
 */
import { readdirSync, readFileSync } from "node:fs";

const INTERRUPTS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

type Cleanup = (signal: NodeJS.Signals) => void;

const cleanups: Cleanup[] = [];

function onSignal(signal: NodeJS.Signals): void {
  const run = cleanups.splice(0).reverse();
  for (const s of INTERRUPTS) process.removeListener(s, onSignal);
  for (const cleanup of run) {
    try {
      cleanup(signal);
    } catch {
      // one cleanup's failure does not keep the others from running
    }
  }
  process.kill(process.pid, signal);
}

/** Registers `cleanup` to run if the process is interrupted; the returned function unregisters it (idempotent). */
export function onInterrupt(cleanup: Cleanup): () => void {
  if (cleanups.length === 0) for (const s of INTERRUPTS) process.on(s, onSignal);
  cleanups.push(cleanup);
  return () => {
    const i = cleanups.indexOf(cleanup);
    if (i < 0) return;
    cleanups.splice(i, 1);
    if (cleanups.length === 0) for (const s of INTERRUPTS) process.removeListener(s, onSignal);
  };
}

/** How long `killGroupAndWait` waits for a killed group's processes to end. */
const GROUP_END_WAIT_MS = 3000;
const GROUP_POLL_MS = 20;

/** SIGKILLs process group `pgid` (no error if it is gone) and waits, at most GROUP_END_WAIT_MS, until none of its processes is alive. */
export function killGroupAndWait(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    return; // no such group
  }
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
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    } catch {
      continue; // ended while we looked
    }
    // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so read after the last ')'
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") return true;
  }
  return false;
}
