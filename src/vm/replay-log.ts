/**
 * Guest instructions executed, read from QEMU's record/replay log. With
 * `-icount`, QEMU writes the instructions executed between two events as an
 * `EVENT_INSTRUCTION` record, so their sum is the run's instruction count, a
 * deterministic cost: every replay executes exactly these instructions.
 *
 * The log format is QEMU's private one, versioned by REPLAY_VERSION. This
 * reader knows one version, 0xe0200c (QEMU 7.1 and 7.2, Debian 12's), as
 * replay/replay-internal.h of that version numbers its events:
 *
 *   header   u32 REPLAY_VERSION, u64 offset (big-endian, as every number)
 *   0        instruction: u32 count
 *   1, 2     interrupt, exception
 *   3..9     async (bh, bh-oneshot, input, input-sync, char-read, block, net)
 *   10..21   shutdown (cause in the event number)
 *   22       char write: u32 result, u32 offset
 *   23, 24   char read all: u32 size + bytes; its error: u32
 *   25, 26   audio out, audio in
 *   27       random: u32 result, u32 size + bytes
 *   28, 29   clock (host, virtual-rt): u64
 *   30..38   checkpoints (clock-warp-start, clock-warp-account, reset-requested,
 *            suspend-requested, clock-virtual, clock-host, clock-virtual-rt, init, reset)
 *   39       end of log
 *
 * It reads only what it can frame exactly: an input event or audio (whose
 * records it does not frame), another version, a log that does not end with
 * the end event exactly at its last byte, all give `undefined`, never a
 * guess. So a receipt says "not measured" rather than a wrong number.
 */

import { CairnError, formatBytes } from "../core/index.ts";

/**
 * `run.replay-log-bytes`: the largest replay log cairn reads (replay-run.ts
 * RUN_READ_LIMITS) and so the largest a record may keep. Logs are about
 * 100 KB (0.4 MB with icount sleep=on); a workload that busy-waits with
 * PAUSE under sleep=on writes about 190 MB per guest second (docs/runs.md,
 * "Replay speed of sleep=on runs").
 */
export const REPLAY_LOG_MAX_BYTES = 1024 * 1024 * 1024;

/**
 * A record's log over `run.replay-log-bytes` is refused before it is read:
 * no replay could read it, so no run is kept (it used to be recorded, then
 * every replay refused it; over 2 GiB the record failed reading it).
 */
export function checkRecordedLogSize(size: number, path: string): void {
  if (size > REPLAY_LOG_MAX_BYTES)
    throw new CairnError(
      "LIMIT_EXCEEDED",
      `the replay log is ${formatBytes(size)}, over run.replay-log-bytes (${formatBytes(REPLAY_LOG_MAX_BYTES)}): no replay could read it, so the run was not recorded`,
      {
        path,
        hint: 'a workload that busy-waits with PAUSE while icount is sleep=on (a root disk, a network, checkpoints) writes about 190 MB of log per guest second; see docs/runs.md, "Replay speed of sleep=on runs"',
      },
    );
}

/** REPLAY_VERSION of QEMU 7.1 and 7.2. */
export const REPLAY_LOG_VERSION = 0xe0200c;

const EV = {
  instruction: 0,
  interrupt: 1,
  exception: 2,
  asyncBh: 3,
  asyncBhOneshot: 4,
  asyncInput: 5,
  asyncInputSync: 6,
  asyncCharRead: 7,
  asyncBlock: 8,
  asyncNet: 9,
  shutdownFirst: 10,
  shutdownLast: 21,
  charWrite: 22,
  charReadAll: 23,
  charReadAllError: 24,
  audioOut: 25,
  audioIn: 26,
  random: 27,
  clockFirst: 28,
  clockLast: 29,
  checkpointFirst: 30,
  checkpointLast: 38,
  end: 39,
} as const;

/** The sum of the log's instruction records, or undefined when the log is not one this reader frames exactly. */
export function guestInstructions(log: Uint8Array): number | undefined {
  return walkLog(log)?.total;
}

const CHECKPOINTS = [
  "clock-warp-start",
  "clock-warp-account",
  "reset-requested",
  "suspend-requested",
  "clock-virtual",
  "clock-host",
  "clock-virtual-rt",
  "init",
  "reset",
] as const;
const KINDS: Record<number, string> = {
  [EV.instruction]: "instruction",
  [EV.interrupt]: "interrupt",
  [EV.exception]: "exception",
  [EV.asyncBh]: "async-bh",
  [EV.asyncBhOneshot]: "async-bh-oneshot",
  [EV.asyncInputSync]: "async-input-sync",
  [EV.asyncCharRead]: "async-char-read",
  [EV.asyncBlock]: "async-block",
  [EV.asyncNet]: "async-net",
  [EV.charWrite]: "char-write",
  [EV.charReadAll]: "char-read-all",
  [EV.charReadAllError]: "char-read-all-error",
  [EV.random]: "random",
  [EV.clockFirst]: "clock-host",
  [EV.clockLast]: "clock-virtual-rt",
  [EV.end]: "end",
  ...Object.fromEntries(CHECKPOINTS.map((name, i) => [EV.checkpointFirst + i, `checkpoint-${name}`])),
};

/**
 * How many events of each kind the log holds (the names above; every
 * shutdown cause counts as `shutdown`), or undefined when the log is not
 * one this reader frames exactly. A diagnostic of where a replay's time
 * goes: each `checkpoint-clock-warp-account` is one return of QEMU's vCPU
 * loop, which a replay pays for dearly (docs/runs.md, "Replay speed of
 * sleep=on runs").
 */
export function replayLogEvents(log: Uint8Array): ReadonlyMap<string, number> | undefined {
  return walkLog(log)?.kinds;
}

/** ShutdownCause SHUTDOWN_CAUSE_HOST_SIGNAL of QEMU 7.2 (include/sysemu/runstate.h): the event is shutdownFirst + cause. */
const SHUTDOWN_HOST_SIGNAL = 4;

/**
 * Whether the log's last shutdown event has the cause "host signal": a
 * record cairn stopped at `--timeout` (qemu.ts) ends so, and so, measured,
 * does a record whose guest kernel panicked under -no-reboot. guest.ts
 * reads it only to say a replay that ended there without the agent's
 * status ended where its record did (`timeout`, unless the kernel's lines
 * make it an infrastructure failure); it does not tell a timeout from a
 * crash the kernel printed nothing about.
 */
export function stoppedByHost(log: Uint8Array): boolean {
  return walkLog(log)?.shutdown === SHUTDOWN_HOST_SIGNAL;
}

function walkLog(log: Uint8Array): { total: number; shutdown: number | undefined; kinds: Map<string, number> } | undefined {
  const b = Buffer.from(log.buffer, log.byteOffset, log.byteLength);
  if (b.length < 13 || b.readUInt32BE(0) !== REPLAY_LOG_VERSION) return undefined;
  let at = 12;
  let total = 0;
  let shutdown: number | undefined;
  const kinds = new Map<string, number>();
  const need = (n: number): boolean => at + n <= b.length;
  const array = (): boolean => {
    if (!need(4)) return false;
    const n = b.readUInt32BE(at);
    at += 4;
    if (!need(n)) return false;
    at += n;
    return true;
  };
  while (at < b.length) {
    const e = b[at++]!;
    const kind = e >= EV.shutdownFirst && e <= EV.shutdownLast ? "shutdown" : KINDS[e];
    if (kind !== undefined) kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    if (e === EV.end) return at === b.length && Number.isSafeInteger(total) ? { total, shutdown, kinds } : undefined;
    if (e === EV.instruction) {
      if (!need(4)) return undefined;
      total += b.readUInt32BE(at);
      at += 4;
    } else if (e === EV.interrupt || e === EV.exception || e === EV.asyncInputSync) {
      // no payload
    } else if (e === EV.asyncBh || e === EV.asyncBhOneshot || e === EV.asyncBlock) {
      if (!need(8)) return undefined;
      at += 8;
    } else if (e === EV.asyncCharRead) {
      if (!need(1)) return undefined;
      at += 1;
      if (!array()) return undefined;
    } else if (e === EV.asyncNet) {
      if (!need(5)) return undefined;
      at += 5;
      if (!array()) return undefined;
    } else if (e >= EV.shutdownFirst && e <= EV.shutdownLast) {
      shutdown = e - EV.shutdownFirst; // the cause is in the event number
    } else if (e === EV.charWrite) {
      if (!need(8)) return undefined;
      at += 8;
    } else if (e === EV.charReadAll) {
      if (!array()) return undefined;
    } else if (e === EV.charReadAllError) {
      if (!need(4)) return undefined;
      at += 4;
    } else if (e === EV.random) {
      if (!need(4)) return undefined;
      at += 4;
      if (!array()) return undefined;
    } else if (e >= EV.clockFirst && e <= EV.clockLast) {
      if (!need(8)) return undefined;
      at += 8;
    } else if (e >= EV.checkpointFirst && e <= EV.checkpointLast) {
      // no payload
    } else {
      // input events, audio, or a number this version does not have: not framed here
      return undefined;
    }
  }
  return undefined; // no end event
}

/**
 * Whether QEMU finished the log: QEMU 7.2 writes the header's version only
 * when it closes the log (after the end event), so a log of a QEMU killed
 * by SIGKILL (or cut short by a full disk) has a zero header and no end
 * event, and its replay is refused at once ("invalid input log file
 * version"). Only a whole log makes a run replayable, hence recorded
 * (record.ts). The framing is not walked: a log with input or audio events,
 * which `guestInstructions` does not frame, can be whole too.
 */
export function replayLogWhole(log: Uint8Array): boolean {
  const b = Buffer.from(log.buffer, log.byteOffset, log.byteLength);
  return b.length >= 13 && b.readUInt32BE(0) === REPLAY_LOG_VERSION && b[b.length - 1] === EV.end;
}
