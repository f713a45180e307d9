/**
 * `cairn run --follow`: the workload's output while the guest runs. The
 * follower only reads the protocol stream file QEMU writes (the
 * virtio-serial chardev, qemu.ts) from another descriptor, opened like every
 * other read (core's `openForRead`: no symlink, no blocking); it never
 * writes to it, never talks to QEMU and never touches the replay log. What
 * QEMU records depends only on the guest and its inputs, so the recording
 * cannot differ with or without it (tests/vm/follow.test.ts shows the
 * identities and the outcome equal, and the followed run replays).
 *
 * The rule: what it prints is unverified until the run ends. It skips
 * anything it cannot frame (the full decoder, protocol.ts, judges the
 * stream after QEMU exits and refuses a bad one), holds at most one record,
 * and stops at the first record length out of bounds. The attack it stops:
 * a misbehaving guest making the host buffer without end while it runs.
 */
import { closeSync, readSync } from "node:fs";
import { openForRead } from "../core/index.ts";
import { MAX_FRAME_BYTES } from "./scenario.ts";
import { PROTOCOL_MAGIC, RECORD } from "./wire.ts";

export type OutputListener = (invocation: number, stream: "stdout" | "stderr", bytes: Buffer) => void;
/** Every whole record, as framed (`type` from wire.ts RECORD, `body` after the header): checkpoints follow the agent's records (checkpoint-take.ts). */
export type RecordListener = (type: number, invocation: number, body: Buffer) => void;

const HEADER = 17; // u32 length | u8 type | u64 seq | u32 invocation (protocol.ts)
const RECORD_MAX = HEADER - 4 + 9 + MAX_FRAME_BYTES + 64;
const READ_CHUNK = 64 * 1024;

export class ProtocolFollower {
  #fd: number | undefined;
  #pending = Buffer.alloc(0);
  #offset = 0;
  #magic = false;
  #stopped = false;

  constructor(
    private readonly path: string,
    private readonly listener: OutputListener | undefined,
    private readonly onRecord?: RecordListener,
  ) {}

  /** Reads what QEMU has written since the last call and reports every whole output frame in it. */
  poll(): void {
    if (this.#stopped) return;
    try {
      this.#fd ??= openForRead(this.path);
      const buf = Buffer.alloc(READ_CHUNK);
      for (;;) {
        const n = readSync(this.#fd, buf, 0, buf.length, this.#offset);
        if (n <= 0) break;
        this.#offset += n;
        this.#pending = Buffer.concat([this.#pending, buf.subarray(0, n)]);
        this.#drain();
        if (this.#stopped) return;
      }
    } catch {
      this.stop(); // following is best effort; the decoder after exit is the judge
    }
  }

  #drain(): void {
    if (!this.#magic) {
      if (this.#pending.length < 8) return;
      if (this.#pending.subarray(0, 8).toString("latin1") !== PROTOCOL_MAGIC) {
        this.stop();
        return;
      }
      this.#magic = true;
      this.#pending = this.#pending.subarray(8);
    }
    while (this.#pending.length >= 4) {
      const len = this.#pending.readUInt32LE(0);
      if (len < HEADER - 4 || len > RECORD_MAX) {
        this.stop();
        return;
      }
      if (this.#pending.length < 4 + len) return;
      const type = this.#pending[4];
      const invocation = this.#pending.readUInt32LE(13);
      const body = this.#pending.subarray(HEADER, 4 + len);
      if (this.listener !== undefined && type === RECORD.frame && body.length > 9 && (body[0] === 1 || body[0] === 2))
        this.listener(invocation, body[0] === 1 ? "stdout" : "stderr", Buffer.from(body.subarray(9)));
      if (type !== undefined) this.onRecord?.(type, invocation, Buffer.from(body));
      this.#pending = this.#pending.subarray(4 + len);
    }
  }

  stop(): void {
    this.#stopped = true;
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}

/** Polls `path` every `intervalMs` while `run` is pending, once more after, and stops. */
export async function following<T>(path: string, listener: OutputListener | undefined, run: () => Promise<T>, intervalMs = 200): Promise<T> {
  if (listener === undefined) return run();
  const f = new ProtocolFollower(path, listener);
  const timer = setInterval(() => f.poll(), intervalMs);
  try {
    return await run();
  } finally {
    clearInterval(timer);
    f.poll();
    f.stop();
  }
}
