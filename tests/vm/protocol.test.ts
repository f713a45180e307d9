import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { checkAssertions, decodeProtocol, DEFAULT_PROTOCOL_LIMITS, outcomeDigest } from "../../src/vm/index.ts";
import { assertCode } from "../helpers/errors.ts";
import { PROTOCOL_CHECKS, type ProtocolCheck } from "../../src/vm/protocol.ts";
import { oneRun, StreamWriter } from "./fixtures/records.ts";

const out = Buffer.from("line one\nline two\n");
const err = Buffer.from("warn\n");

describe("protocol decoder", () => {
  it("reassembles streams and yields lifecycle events only", () => {
    const d = decodeProtocol(oneRun(out, err, 5));
    assert.ok(d.streams.get(1)!.stdout.equals(out));
    assert.ok(d.streams.get(1)!.stderr.equals(err));
    assert.deepEqual(
      d.events.map((e) => e.event),
      ["start", "exit", "cleanup-complete", "final"],
    );
  });

  it("never lets frame chunking show up in events or the outcome (property)", () => {
    const expect = [{ invocation: 1, exitCode: 0, stdoutLines: ["line one", "line two"] }];
    const ref = decodeProtocol(oneRun(out, err, 4096));
    const refOutcome = outcomeDigest(ref.events, checkAssertions(expect, ref));
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), (chunk) => {
        const d = decodeProtocol(oneRun(out, err, chunk));
        assert.deepEqual(d.events, ref.events);
        assert.equal(outcomeDigest(d.events, checkAssertions(expect, d)), refOutcome);
      }),
    );
  });

  it("refuses each broken promise with its own check, one defect per case (control: the same stream without the defect decodes)", () => {
    const none = Buffer.alloc(0);
    /** Each case builds one stream; `defect` switches on exactly one departure from docs/protocol.md. */
    const cases: Record<ProtocolCheck, (defect: boolean) => Buffer> = {
      magic: (d) => {
        const good = oneRun(out, err, 5);
        return d ? Buffer.concat([Buffer.from("XAIRNPR1"), good.subarray(8)]) : good;
      },
      "after-final": (d) => {
        const good = oneRun(out, err, 5);
        return d ? Buffer.concat([good, Buffer.from([0])]) : good;
      },
      "record-length": (d) => {
        // a frame record whose length field exceeds the largest frame plus its header
        const w = new StreamWriter()
          .hello()
          .record(2, 1)
          .frame(1, 1, 0, Buffer.alloc(d ? 4097 : 4096, 0x61));
        return w.exit(1, 0, Buffer.alloc(d ? 4097 : 4096, 0x61), none).final(0, 1);
      },
      truncated: (d) => {
        const good = oneRun(out, err, 5);
        return d ? good.subarray(0, good.length - 3) : good;
      },
      sequence: (d) => {
        const w = new StreamWriter().hello().record(2, 1);
        if (d) w.seq++;
        return w.final(0, 1);
      },
      "invocation-id": (d) =>
        new StreamWriter()
          .hello()
          .record(2, d ? 0 : 1)
          .final(0, d ? 0 : 1),
      "invocation-order": (d) =>
        new StreamWriter()
          .hello()
          .record(2, d ? 2 : 1)
          .final(0, d ? 2 : 1),
      "body-size": (d) =>
        new StreamWriter()
          .hello()
          .record(2, 1, d ? Buffer.from([0]) : none)
          .final(0, 1),
      "hello-first": (d) => (d ? new StreamWriter().record(2, 1).hello().final(0, 1) : new StreamWriter().hello().record(2, 1).final(0, 1)),
      version: (d) => {
        const w = new StreamWriter();
        const v = Buffer.alloc(4);
        v.writeUInt32LE(d ? 2 : 1);
        return w.record(1, 0, v).record(2, 1).final(0, 1);
      },
      "frame-stream": (d) => {
        const w = new StreamWriter().hello().record(2, 1);
        const b = Buffer.alloc(9);
        b[0] = d ? 3 : 1;
        return w.record(3, 1, Buffer.concat([b, out])).final(0, 1);
      },
      "frame-empty": (d) =>
        new StreamWriter()
          .hello()
          .record(2, 1)
          .frame(1, 1, 0, d ? none : out)
          .final(0, 1),
      "frame-offset": (d) =>
        new StreamWriter()
          .hello()
          .record(2, 1)
          .frame(1, 1, d ? 3 : 0, out)
          .exit(1, 0, out, none)
          .final(0, 1),
      "exit-bytes": (d) =>
        new StreamWriter()
          .hello()
          .record(2, 1)
          .frame(1, 1, 0, out)
          .exitWith(1, { outBytes: out.length + (d ? 1 : 0) }, out, none)
          .final(0, 1),
      "exit-digest": (d) => {
        const other = Buffer.from(out);
        other[0] = other[0]! ^ 1; // same length, one byte different
        return new StreamWriter()
          .hello()
          .record(2, 1)
          .frame(1, 1, 0, out)
          .exit(1, 0, d ? other : out, none)
          .final(0, 1);
      },
      "exit-kind": (d) =>
        new StreamWriter()
          .hello()
          .record(2, 1)
          .exitWith(1, { kind: d ? 3 : 2 }, none, none)
          .final(0, 1),
      "final-digest": (d) => {
        const good = oneRun(out, err, 5);
        if (d) good[good.length - 1] = good[good.length - 1]! ^ 1; // the last byte of the final record's digest
        return good;
      },
      "final-count": (d) =>
        new StreamWriter()
          .hello()
          .record(2, 1)
          .final(0, d ? 2 : 1),
      "record-type": (d) =>
        new StreamWriter()
          .hello()
          .record(2, 1)
          .record(d ? 99 : 5, 1)
          .final(0, 1),
      "no-final": (d) => {
        const good = oneRun(out, err, 5);
        return d ? good.subarray(0, good.length - 54) : good; // 54 = the final record, whole
      },
    };
    assert.deepEqual(Object.keys(cases).sort(), [...PROTOCOL_CHECKS].sort(), "one case per check");
    // Checks with a second site (found by bench/mutation/refusals.ts): one case per site.
    const more: [ProtocolCheck, (defect: boolean) => Buffer][] = [
      [
        "truncated",
        (d) => {
          const good = oneRun(out, err, 5);
          return d ? good.subarray(0, good.length - 54 + 2) : good; // cut inside the final record's length field
        },
      ],
      [
        "body-size",
        (d) =>
          new StreamWriter()
            .hello()
            .record(2, 1)
            .record(3, 1, d ? Buffer.alloc(5) : Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 0, 0x61]))
            .final(0, 1),
      ], // a frame shorter than its header
    ];
    for (const [check, build] of [...Object.entries(cases), ...more]) {
      decodeProtocol(build(false)); // control
      const e = assertCode(() => decodeProtocol(build(true)), "RUN_INFRASTRUCTURE");
      assert.match(e.path ?? "", new RegExp(`^protocol@\\d+/${check}$`), `case ${check} refused by ${e.path}`);
    }
  });

  it("a payload byte changed in transit is refused by the exit digest (control: the intact stream decodes)", () => {
    const good = oneRun(out, err, 5);
    decodeProtocol(good);
    const at = good.indexOf(out.subarray(0, 5));
    assert.ok(at > 0);
    const flipped = Buffer.from(good);
    flipped[at] = flipped[at]! ^ 0xff;
    assert.match(assertCode(() => decodeProtocol(flipped), "RUN_INFRASTRUCTURE").path ?? "", /\/exit-digest$/);
  });

  it("applies the named frame and stream limits", () => {
    const big = oneRun(Buffer.alloc(100, 0x61), err, 100);
    decodeProtocol(big, { ...DEFAULT_PROTOCOL_LIMITS, frameBytes: 100 });
    assert.match(assertCode(() => decodeProtocol(big, { ...DEFAULT_PROTOCOL_LIMITS, frameBytes: 99 }), "LIMIT_EXCEEDED").message, /run\.frame-bytes/);
    assert.match(assertCode(() => decodeProtocol(big, { ...DEFAULT_PROTOCOL_LIMITS, protocolBytes: 100 }), "LIMIT_EXCEEDED").message, /protocol\.bytes/);
  });
});
