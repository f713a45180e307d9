/**
 * The input channel of a run with checkpoints (issue 35 item 2): the guest's
 * second serial port, backed by a host Unix socket (qemu.ts, serial role
 * "input"). QEMU records every byte a serial port receives in the replay
 * log, with icount sleep=on (docs/runs.md, "A runtime input channel"), so a
 * replay gets the host's answers from the log with nothing connected.
 *
 * The agent holds at each checkpoint (agent/main.c): it writes a `hold`
 * record on the protocol port and runs no further step until the host
 * answers on this channel. The host answers once per hold, after it has
 * taken the checkpoint (so the snapshot never holds half an answer):
 *
 *   "CAIRNCH1" | u32 hold | u8 kind | u32 length | body     (little-endian)
 *
 * kind `continue` (empty body): run the steps the inputs hold. kind `tail`
 * (a branch, branch.ts): these steps replace every step not yet run.
 *
 * Flow control: QEMU records what the socket delivers and hands it to the
 * serial port later without regard for its 16-byte receive FIFO, so a longer
 * write overruns it and a byte is lost (seen here: "C\0AIRNCH1…"). The host
 * writes CHUNK bytes at a time and waits for the agent's ACK byte, which it
 * writes back on the port after each chunk it has read (agent/chan.c).
 */
import { createConnection, type Socket } from "node:net";
import { CairnError } from "../core/index.ts";
import { encodeSteps } from "./inputs.ts";
import type { Step } from "./scenario.ts";
import { CHANNEL_KIND, CHANNEL_MAGIC, CHANNEL_MAX_BYTES } from "./wire.ts";

export type HoldAnswer = { readonly kind: "continue" } | { readonly kind: "tail"; readonly steps: readonly Step[] };

/** One answer's bytes, as agent/chan.c reads them. */
export function encodeAnswer(hold: number, answer: HoldAnswer): Buffer {
  const body = answer.kind === "tail" ? encodeSteps(answer.steps) : Buffer.alloc(0);
  if (body.length > CHANNEL_MAX_BYTES)
    throw new CairnError("LIMIT_EXCEEDED", `a branch's steps take ${body.length} bytes; the input channel carries at most ${CHANNEL_MAX_BYTES}`, {
      path: "/steps",
    });
  const head = Buffer.alloc(17);
  head.write(CHANNEL_MAGIC, 0, "ascii");
  head.writeUInt32LE(hold, 8);
  head[12] = CHANNEL_KIND[answer.kind];
  head.writeUInt32LE(body.length, 13);
  return Buffer.concat([head, body]);
}

/** How long the host waits for QEMU to open the channel's socket (QEMU creates it as it starts). */
const CONNECT_ATTEMPTS = 600;
const CONNECT_RETRY_MS = 50;

/** agent/chan.c CHAN_CHUNK and CHAN_ACK. */
export const CHANNEL_CHUNK = 16;
const ACK = 0x06;

/** The host end of the channel: connects once QEMU listens, then writes answers in order, a chunk per ACK. */
export class InputChannel {
  #socket: Promise<Socket> | undefined;
  #closed = false;
  #acks = 0;
  #ackWaiter: { want: number; resolve: () => void; reject: (e: Error) => void } | undefined;
  #gone: Error | undefined;

  #wake(): void {
    const w = this.#ackWaiter;
    if (w === undefined) return;
    if (this.#acks >= w.want) {
      this.#ackWaiter = undefined;
      w.resolve();
    } else if (this.#gone !== undefined) {
      this.#ackWaiter = undefined;
      w.reject(this.#gone);
    }
  }

  constructor(private readonly path: string) {}

  #connect(): Promise<Socket> {
    this.#socket ??= (async () => {
      for (let attempt = 1; ; attempt++) {
        if (this.#closed) throw new CairnError("RUN_INFRASTRUCTURE", "the input channel was closed", { path: this.path });
        try {
          return await new Promise<Socket>((resolve, reject) => {
            const s = createConnection(this.path);
            s.once("connect", () => {
              s.on("error", () => {}); // a later error shows as a failed write or a closed socket, never as an unhandled event
              s.on("data", (d: Buffer) => {
                for (const b of d) if (b === ACK) this.#acks++;
                this.#wake();
              });
              s.on("close", () => {
                this.#gone = new Error("QEMU closed the input channel (the guest ended)");
                this.#wake();
              });
              resolve(s);
            });
            s.once("error", reject);
          });
        } catch (e) {
          if (attempt >= CONNECT_ATTEMPTS)
            throw new CairnError("RUN_INFRASTRUCTURE", "QEMU's input channel socket never accepted the host", { path: this.path, cause: e });
          await new Promise((r) => setTimeout(r, CONNECT_RETRY_MS));
        }
      }
    })();
    return this.#socket;
  }

  /** Sends one answer, a chunk per ACK; resolves once the agent has acknowledged all of it. */
  async answer(hold: number, answer: HoldAnswer): Promise<void> {
    const bytes = encodeAnswer(hold, answer);
    const s = await this.#connect();
    for (let at = 0; at < bytes.length; at += CHANNEL_CHUNK) {
      const chunk = bytes.subarray(at, at + CHANNEL_CHUNK);
      const acked = new Promise<void>((resolve, reject) => {
        this.#ackWaiter = { want: this.#acks + 1, resolve, reject };
      });
      await new Promise<void>((resolve, reject) => s.write(chunk, (e) => (e ? reject(e) : resolve())));
      this.#wake();
      await acked;
    }
  }

  close(): void {
    this.#closed = true;
    void this.#socket?.then(
      (s) => s.destroy(),
      () => {},
    );
  }
}
