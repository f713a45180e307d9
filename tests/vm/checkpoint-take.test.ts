/**
 * The checkpoint taker without a VM (issue 35 items 1 and 2): a protocol
 * stream written by the test (tests/vm/fixtures/records.ts, from
 * docs/protocol.md), a QMP server that answers as QEMU 7.2 does, and an
 * input channel that acknowledges as the agent does (agent/chan.c). Shown
 * here, where a real guest cannot be made to do it on demand: at each hold
 * record the checkpoint is taken, and only then is the guest answered
 * `continue`, in chunks of 16 bytes each waited for; `savevm` refused while
 * record/replay has events pending is tried again after letting the guest
 * run (QEMU's "Try once more later"), and the count recorded is the one read
 * after the save; a `savevm` QEMU refuses outright makes the checkpoint
 * missed (with QEMU's words), the guest is let run on, never left stopped,
 * and still answered; a checkpoint whose hold never came is missed, never
 * recorded as taken.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { CheckpointSpec } from "../../src/vm/checkpoint-spec.ts";
import { CheckpointTaker } from "../../src/vm/checkpoint-take.ts";
import { CHANNEL_CHUNK, encodeAnswer, InputChannel } from "../../src/vm/input-channel.ts";
import { RECORD } from "../../src/vm/wire.ts";
import { StreamWriter } from "./fixtures/records.ts";

const RETRY = "Error: Record/replay does not allow making snapshot right now. Try once more later.\r\n";

/** A QMP server as QEMU 7.2 answers: greeting, events between answers, `savevm` answers from `savevm` in turn. */
class FakeQemu {
  readonly commands: string[] = [];
  readonly server: Server;
  readonly path: string;
  icount = 1000;
  readonly #said = new EventTargetish();

  constructor(savevm: string[]) {
    const dir = mkdtempSync(join(tmpdir(), "cairn-fakeqmp-"));
    this.path = join(dir, "qmp.sock");
    this.server = createServer((s) => {
      sockets.push(s);
      s.write(`${JSON.stringify({ QMP: { version: { qemu: { major: 7, minor: 2, micro: 22 } }, capabilities: [] } })}\n`);
      let buf = "";
      s.on("data", (d) => {
        buf += d.toString("utf8");
        for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
          const c = JSON.parse(buf.slice(0, nl)) as { execute: string; arguments?: { "command-line"?: string } };
          buf = buf.slice(nl + 1);
          const name = c.execute === "human-monitor-command" ? (c.arguments?.["command-line"] ?? "") : c.execute;
          this.commands.push(name);
          let answer: unknown = {};
          if (c.execute === "stop") s.write(`${JSON.stringify({ event: "STOP", timestamp: { seconds: 1, microseconds: 0 } })}\n`);
          if (c.execute === "query-replay") answer = { mode: "record", filename: "replay.log", icount: (this.icount += 7) };
          if (c.execute === "human-monitor-command") answer = savevm.shift() ?? "";
          s.write(`${JSON.stringify({ return: answer })}\n`);
          this.#said.fire(name);
        }
      });
    });
    this.server.listen(this.path);
  }

  /** Resolves once the taker has sent `name` `n` times. */
  sent(name: string, n = 1): Promise<void> {
    return this.#said.until(() => this.commands.filter((c) => c === name).length >= n);
  }
}

class EventTargetish {
  #waiters: { done: () => boolean; resolve: () => void }[] = [];
  fire(_: string): void {
    this.#waiters = this.#waiters.filter((w) => {
      if (!w.done()) return true;
      w.resolve();
      return false;
    });
  }
  until(done: () => boolean): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ done, resolve }));
  }
}

/** The agent's end of the input channel: acknowledges each 16-byte chunk and each message's end, and keeps what came, with when. */
class FakeChannel {
  readonly server: Server;
  readonly path: string;
  received = Buffer.alloc(0);
  /** The QMP commands seen when each message was complete. */
  readonly messagesAt: number[] = [];
  readonly #said = new EventTargetish();

  constructor(qemu: FakeQemu) {
    this.path = join(mkdtempSync(join(tmpdir(), "cairn-fakechan-")), "input.sock");
    this.server = createServer((s) => {
      sockets.push(s);
      let got = 0;
      let message = Buffer.alloc(0);
      s.on("data", (d) => {
        this.received = Buffer.concat([this.received, d]);
        for (const b of d) {
          message = Buffer.concat([message, Buffer.of(b)]);
          got++;
          const whole = message.length >= 17 && message.length === 17 + message.readUInt32LE(13);
          if (got % CHANNEL_CHUNK === 0 || whole) s.write(Buffer.of(0x06));
          if (whole) {
            this.messagesAt.push(qemu.commands.length);
            message = Buffer.alloc(0);
            got = 0;
            this.#said.fire("message");
          }
        }
      });
    });
    this.server.listen(this.path);
  }

  messages(n: number): Promise<void> {
    return this.#said.until(() => this.messagesAt.length >= n);
  }
}

function holdRecord(hold: number, nextStep: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeUInt32LE(hold, 0);
  b.writeUInt32LE(nextStep, 4);
  return b;
}

function protocolFile(): { path: string; write: (w: StreamWriter) => void } {
  const path = join(mkdtempSync(join(tmpdir(), "cairn-fakeproto-")), "protocol.bin");
  writeFileSync(path, "");
  return { path, write: (w) => writeFileSync(path, w.bytes()) };
}

async function started(savevm: string[]): Promise<{ qemu: FakeQemu; chan: FakeChannel }> {
  const qemu = new FakeQemu(savevm);
  const chan = new FakeChannel(qemu);
  servers.push(qemu.server, chan.server);
  await Promise.all([once(qemu.server, "listening"), once(chan.server, "listening")]);
  return { qemu, chan };
}

const servers: Server[] = [];
const sockets: Socket[] = [];
after(() => {
  for (const s of sockets) s.destroy();
  for (const s of servers) s.close();
});

/** A taker that never sends what a test waits for fails at this bound instead of hanging the file (not a duration assertion). */
const BOUND = { timeout: 60_000 };

describe("the checkpoint taker", () => {
  it("at a hold takes its checkpoint, trying savevm again while record/replay has events pending, then answers the guest", BOUND, async () => {
    const { qemu, chan } = await started([RETRY, RETRY, ""]);
    const proto = protocolFile();
    const specs: CheckpointSpec[] = [{ name: "one", after: { kind: "step", step: 1 } }];
    const taker = new CheckpointTaker(specs, proto.path, new InputChannel(chan.path), qemu.path);
    const w = new StreamWriter().hello().record(RECORD.start, 1);
    proto.write(w);
    w.record(RECORD.hold, 1, holdRecord(0, 2));
    proto.write(w);
    await chan.messages(1);
    const out = await taker.finish();
    assert.deepEqual(out.missed, []);
    assert.deepEqual(
      out.taken.map((t) => [t.name, t.after, t.icount]),
      [["one", { kind: "step", step: 1 }, 1014]],
      "the count read after the save",
    );
    assert.deepEqual(qemu.commands, [
      "qmp_capabilities",
      "stop",
      "query-replay",
      "savevm one",
      "cont",
      "stop",
      "savevm one",
      "cont",
      "stop",
      "savevm one",
      "query-replay",
      "cont",
    ]);
    assert.deepEqual(chan.messagesAt, [qemu.commands.length], "answered only once the guest runs on after the save");
    assert.ok(chan.received.equals(encodeAnswer(0, { kind: "continue" })), chan.received.toString("hex"));
  });

  it("answers each hold once, in order, a longer answer a chunk per acknowledgement; a checkpoint whose hold never came is missed", BOUND, async () => {
    const { qemu, chan } = await started([]);
    const proto = protocolFile();
    const specs: CheckpointSpec[] = [
      { name: "echoed", after: { kind: "output", stream: "stdout", contains: "echo one" } },
      { name: "closed", after: { kind: "step", step: 2 } },
    ];
    const channel = new InputChannel(chan.path);
    const taker = new CheckpointTaker(specs, proto.path, channel, qemu.path);
    const w = new StreamWriter().hello().record(RECORD.start, 1).frame(1, 1, 0, Buffer.from("ready\necho one\n"));
    w.record(RECORD.hold, 1, holdRecord(0, 1));
    proto.write(w);
    await chan.messages(1);
    const out = await taker.finish();
    assert.deepEqual(
      out.taken.map((t) => t.name),
      ["echoed"],
    );
    assert.deepEqual(out.missed, [{ name: "closed", reason: "its event never came" }]);
    // a tail (a branch's steps) is longer than a chunk: it goes 16 bytes per acknowledgement and arrives whole
    const tail = {
      kind: "tail" as const,
      steps: [{ action: "close-stdin" as const, after: { kind: "output" as const, stream: "stdout" as const, contains: "x".repeat(40) } }],
    };
    const again = new InputChannel(chan.path);
    await again.answer(3, tail);
    again.close();
    assert.ok(chan.received.subarray(17).equals(encodeAnswer(3, tail)));
    assert.ok(encodeAnswer(3, tail).length > 3 * CHANNEL_CHUNK);
  });

  it("a savevm QEMU refuses is missed with QEMU's words; the guest is let run on and still answered", BOUND, async () => {
    const { qemu, chan } = await started(["Error: No block device can accept snapshots\r\n"]);
    const proto = protocolFile();
    const taker = new CheckpointTaker([{ name: "one", after: { kind: "step", step: 0 } }], proto.path, new InputChannel(chan.path), qemu.path);
    proto.write(new StreamWriter().hello().record(RECORD.start, 1).record(RECORD.hold, 1, holdRecord(0, 1)));
    await chan.messages(1);
    const out = await taker.finish();
    assert.deepEqual(out.taken, []);
    assert.equal(out.missed.length, 1);
    assert.match(out.missed[0]!.reason, /savevm said: Error: No block device can accept snapshots/);
    assert.equal(qemu.commands.at(-1), "cont", "never left stopped");
  });
});
