/**
 * The instruction count read from a QEMU 7.2 replay log (vm/replay-log.ts),
 * on logs assembled here byte by byte from the documented event numbers: the
 * sum of the instruction records, every framed event skipped by its size;
 * anything not framed exactly (another version, an unknown or input event, a
 * truncated record, bytes after the end event, no end event) is undefined.
 * The same walk counts the events by kind (a diagnostic of replay speed).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkRecordedLogSize, guestInstructions, REPLAY_LOG_MAX_BYTES, REPLAY_LOG_VERSION, replayLogEvents } from "../../src/vm/replay-log.ts";
import { RUN_READ_LIMITS } from "../../src/vm/replay-run.ts";
import { assertCode } from "../helpers/errors.ts";

const u32 = (n: number): number[] => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
const u64 = (): number[] => [1, 2, 3, 4, 5, 6, 7, 8];
const header = (version = REPLAY_LOG_VERSION): number[] => [...u32(version), 0, 0, 0, 0, 0, 0, 0, 0];
const log = (...events: number[][]): Buffer => Buffer.from([...header(), ...events.flat()]);

const INSN = (n: number) => [0, ...u32(n)];
const END = [39];
const every = [
  [28, ...u64()], // clock host
  [37], // checkpoint init
  INSN(1000),
  [1], // interrupt
  INSN(2000),
  [2], // exception
  [3, ...u64()], // async bh
  [4, ...u64()], // async bh oneshot
  [6], // async input sync
  [7, 9, ...u32(3), 1, 2, 3], // async char read: id, array
  [8, ...u64()], // async block
  [9, 1, ...u32(0), ...u32(2), 7, 7], // async net: id, flags, array
  [16], // shutdown (guest-shutdown)
  [22, ...u32(5), ...u32(0)], // char write
  [23, ...u32(2), 65, 66], // char read all
  [24, ...u32(5)], // char read all error
  [27, ...u32(4), ...u32(4), 1, 2, 3, 4], // random
  [29, ...u64()], // clock virtual-rt
  INSN(4294967295),
  [30], // checkpoint
];

test("the instruction records of a framed log are summed", () => {
  assert.equal(guestInstructions(log(...every, END)), 1000 + 2000 + 4294967295);
  assert.equal(guestInstructions(log(END)), 0);
});

test("a log this reader does not frame exactly is undefined, never a guess", () => {
  // control: the same events frame
  assert.notEqual(guestInstructions(log(...every, END)), undefined);
  assert.equal(guestInstructions(Buffer.from([...header(0xe0200b), ...INSN(5), ...END])), undefined, "another version");
  assert.equal(guestInstructions(log(INSN(5))), undefined, "no end event");
  assert.equal(guestInstructions(log(INSN(5), END, [0])), undefined, "bytes after the end");
  assert.equal(guestInstructions(log([0, 0, 0])), undefined, "a truncated instruction record");
  assert.equal(guestInstructions(log([5, 1, 2], END)), undefined, "an input event (not framed)");
  assert.equal(guestInstructions(log([25, ...u32(1)], END)), undefined, "audio (not framed)");
  assert.equal(guestInstructions(log([40], END)), undefined, "an event number past the end event");
  assert.equal(guestInstructions(log([23, ...u32(10), 1], END)), undefined, "an array longer than the log");
  assert.equal(guestInstructions(Buffer.alloc(5)), undefined, "shorter than the header");
});

test("the events of a framed log are counted by kind, checkpoints by their QEMU 7.2 names", () => {
  const counts = replayLogEvents(log(...every, [31], [31], [34], [38], [10], END));
  assert.deepEqual(Object.fromEntries(counts ?? []), {
    "clock-host": 1,
    "checkpoint-init": 1,
    instruction: 3,
    interrupt: 1,
    exception: 1,
    "async-bh": 1,
    "async-bh-oneshot": 1,
    "async-input-sync": 1,
    "async-char-read": 1,
    "async-block": 1,
    "async-net": 1,
    shutdown: 2,
    "char-write": 1,
    "char-read-all": 1,
    "char-read-all-error": 1,
    random: 1,
    "clock-virtual-rt": 1,
    "checkpoint-clock-warp-start": 1,
    "checkpoint-clock-warp-account": 2,
    "checkpoint-clock-virtual": 1,
    "checkpoint-reset": 1,
    end: 1,
  });
  // control: a log not framed exactly has no counts, as it has no instruction count
  assert.equal(replayLogEvents(log([5, 1, 2], END)), undefined);
  assert.equal(replayLogEvents(log(INSN(5))), undefined);
});

test("a recorded log over run.replay-log-bytes is refused naming the limit, the run's log path and the PAUSE cause; at the limit it is kept (control)", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-rrlog-"));
  try {
    // a sparse file: its size is what a spinning sleep=on workload's log reaches, without writing it
    const file = join(dir, "replay.log");
    writeFileSync(file, "");
    truncateSync(file, REPLAY_LOG_MAX_BYTES + 1);
    assertCode(() => checkRecordedLogSize(statSync(file).size, "/runs/r1/replay.log"), "LIMIT_EXCEEDED", "/runs/r1/replay.log");
    try {
      checkRecordedLogSize(statSync(file).size, "/runs/r1/replay.log");
    } catch (e) {
      assert.match((e as Error).message, /run\.replay-log-bytes/);
      assert.match((e as { hint?: string }).hint ?? "", /PAUSE.*sleep=on/);
    }
    truncateSync(file, REPLAY_LOG_MAX_BYTES);
    checkRecordedLogSize(statSync(file).size, "/runs/r1/replay.log");
    // the replay reads up to the same bound
    assert.equal(RUN_READ_LIMITS["run.replay-log-bytes"], REPLAY_LOG_MAX_BYTES);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
