import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { checkAssertions, decodeProtocol, DEFAULT_PROTOCOL_LIMITS, outcomeDigest } from "../../src/vm/index.ts";
import { assertCode } from "../helpers/errors.ts";
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

  it("refuses every broken stream as an infrastructure failure (control: the intact stream decodes)", () => {
    const good = oneRun(out, err, 5);
    decodeProtocol(good);
    const cases: Buffer[] = [
      Buffer.concat([Buffer.from("XAIRNPR1"), good.subarray(8)]), // magic
      good.subarray(0, good.length - 3), // truncated final record
      good.subarray(0, good.length - 54), // no final record at all
      Buffer.concat([good, Buffer.from([0])]), // bytes after final
      new StreamWriter().hello().record(2, 1).frame(1, 1, 3, out).exit(1, 0, out, err).final(0, 1), // bad offset
      new StreamWriter().hello().record(2, 1).frame(1, 1, 0, out).exit(1, 0, Buffer.from("other"), err).final(0, 1), // exit totals/digest
      new StreamWriter().hello().record(2, 2).final(0, 2), // invocation 2 before 1
      new StreamWriter().hello().record(99, 1).final(0, 1), // unknown record type
      new StreamWriter().hello().record(2, 1).final(0, 3), // invocation count
    ];
    const seq = new StreamWriter().hello();
    seq.seq = 5n;
    cases.push(seq.record(2, 1).final(0, 1)); // sequence gap
    const flipped = Buffer.from(good);
    flipped[40] = flipped[40]! ^ 0xff; // a payload byte changed in transit: the final digest catches it
    cases.push(flipped);
    for (const c of cases) assertCode(() => decodeProtocol(c), "RUN_INFRASTRUCTURE");
  });

  it("applies the named frame and stream limits", () => {
    const big = oneRun(Buffer.alloc(100, 0x61), err, 100);
    decodeProtocol(big, { ...DEFAULT_PROTOCOL_LIMITS, frameBytes: 100 });
    assert.match(assertCode(() => decodeProtocol(big, { ...DEFAULT_PROTOCOL_LIMITS, frameBytes: 99 }), "LIMIT_EXCEEDED").message, /run\.frame-bytes/);
    assert.match(assertCode(() => decodeProtocol(big, { ...DEFAULT_PROTOCOL_LIMITS, protocolBytes: 100 }), "LIMIT_EXCEEDED").message, /protocol\.bytes/);
  });
});
