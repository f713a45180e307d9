/**
 * The checkpoint taker without a VM (issue 35 item 1): a protocol stream
 * written by the test (tests/vm/fixtures/records.ts, from docs/protocol.md)
 * and a QMP server that answers as QEMU 7.2 does. Shown here, where a real
 * guest cannot be made to do it on demand: `savevm` refused while
 * record/replay has events pending is tried again after letting the guest
 * run (QEMU's "Try once more later"), and the count recorded is the one read
 * after the save; an output pattern split across two frames is found; a
 * `savevm` QEMU refuses outright makes the checkpoint missed (with QEMU's
 * words) and the guest is let run on, never left stopped; a checkpoint
 * whose event never came is missed, never recorded as taken.
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
import type { Step } from "../../src/vm/index.ts";
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

const none = { kind: "none" } as const;
const STEPS: Step[] = [
  { action: "start", after: none },
  { action: "write-stdin", data: Buffer.from("echo one\n"), offset: 0, after: none },
  { action: "close-stdin", after: none },
];

function protocolFile(): { path: string; write: (w: StreamWriter) => void } {
  const path = join(mkdtempSync(join(tmpdir(), "cairn-fakeproto-")), "protocol.bin");
  writeFileSync(path, "");
  return { path, write: (w) => writeFileSync(path, w.bytes()) };
}

function inputRecord(offset: number, length: number): Buffer {
  const b = Buffer.alloc(12);
  b.writeBigUInt64LE(BigInt(offset), 0);
  b.writeUInt32LE(length, 8);
  return b;
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
  it("takes a checkpoint after its step, trying savevm again while record/replay has events pending", BOUND, async () => {
    const qemu = new FakeQemu([RETRY, RETRY, ""]);
    servers.push(qemu.server);
    await once(qemu.server, "listening");
    const proto = protocolFile();
    const specs: CheckpointSpec[] = [{ name: "one", after: { kind: "step", step: 1 } }];
    const taker = new CheckpointTaker(specs, STEPS, proto.path, qemu.path);
    const w = new StreamWriter().hello().record(RECORD.start, 1);
    proto.write(w);
    // a chunk that ends before the write's last byte is not the step's record
    w.record(RECORD["input-accepted"], 1, inputRecord(0, 5));
    proto.write(w);
    w.record(RECORD["input-accepted"], 1, inputRecord(5, 4));
    proto.write(w);
    await qemu.sent("savevm one", 3);
    await qemu.sent("cont", 3);
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
  });

  it("finds an output pattern split across frames; a checkpoint whose event never came is missed", BOUND, async () => {
    const qemu = new FakeQemu([]);
    servers.push(qemu.server);
    await once(qemu.server, "listening");
    const proto = protocolFile();
    const specs: CheckpointSpec[] = [
      { name: "echoed", after: { kind: "output", stream: "stdout", contains: "echo one" } },
      { name: "closed", after: { kind: "step", step: 2 } },
    ];
    const taker = new CheckpointTaker(specs, STEPS, proto.path, qemu.path);
    const w = new StreamWriter().hello().record(RECORD.start, 1).frame(1, 1, 0, Buffer.from("ready\nec"));
    proto.write(w);
    w.frame(1, 2, 0, Buffer.from("ho one")); // stderr: not the stream asked for
    proto.write(w);
    w.frame(1, 1, 8, Buffer.from("ho one\n"));
    proto.write(w);
    await qemu.sent("cont");
    const out = await taker.finish();
    assert.deepEqual(
      out.taken.map((t) => t.name),
      ["echoed"],
    );
    assert.deepEqual(out.missed, [{ name: "closed", reason: "its event never came" }]);
  });

  it("a savevm QEMU refuses is missed with QEMU's words, and the guest is let run on", BOUND, async () => {
    const qemu = new FakeQemu(["Error: No block device can accept snapshots\r\n"]);
    servers.push(qemu.server);
    await once(qemu.server, "listening");
    const proto = protocolFile();
    const taker = new CheckpointTaker([{ name: "one", after: { kind: "step", step: 0 } }], STEPS, proto.path, qemu.path);
    proto.write(new StreamWriter().hello().record(RECORD.start, 1));
    await qemu.sent("cont");
    const out = await taker.finish();
    assert.deepEqual(out.taken, []);
    assert.equal(out.missed.length, 1);
    assert.match(out.missed[0]!.reason, /savevm said: Error: No block device can accept snapshots/);
    assert.equal(qemu.commands.at(-1), "cont", "never left stopped");
  });
});
