// The protocol decoder's output (src/vm/protocol.ts) for every record type,
// field by field, and its bounds at their edges: a one-off in any of them
// changes an event, a count or a refusal here. Written to kill StrykerJS
// survivors (bench/mutation/README.md); protocol.test.ts has one refusal per
// check, each with a control.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { decodeProtocol, DEFAULT_PROTOCOL_LIMITS } from "../../src/vm/index.ts";
import { assertCode } from "../helpers/errors.ts";
import { StreamWriter } from "./fixtures/records.ts";

const sha = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};
const u64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return b;
};
const check = (data: Buffer) => assertCode(() => decodeProtocol(data), "RUN_INFRASTRUCTURE").path;

test("every record type decodes to its event with every field", () => {
  const out = Buffer.from("o1o2");
  const err = Buffer.from("e");
  const w = new StreamWriter().hello();
  w.record(2, 1)
    .record(4, 1, Buffer.concat([u64(7), u32(3)]))
    .record(12, 1, Buffer.concat([u64(10), u32(2)]))
    .frame(1, 1, 0, out.subarray(0, 2))
    .frame(1, 2, 0, err)
    .frame(1, 1, 2, out.subarray(2))
    .record(5, 1)
    .record(6, 1)
    .exit(1, 3, out, err)
    .cleanup(1, 4)
    .record(2, 2)
    .record(8, 2, Buffer.concat([Buffer.from([2]), u32(13)]))
    .record(8, 2, Buffer.concat([Buffer.from([250]), u32(1)]))
    .exitWith(2, { kind: 2 }, Buffer.alloc(0), Buffer.alloc(0))
    .record(10, 0, Buffer.concat([Buffer.from([1]), u64(99)]))
    .record(10, 2, Buffer.concat([Buffer.from([200]), u64(5)]));
  const data = w.final(1, 2);
  const d = decodeProtocol(data);
  assert.deepEqual(d.events, [
    { invocation: 1, event: "start" },
    { invocation: 1, event: "input-accepted", offset: 7, length: 3 },
    { invocation: 1, event: "input-rejected", offset: 10, length: 2 },
    { invocation: 1, event: "stdin-closed" },
    { invocation: 1, event: "requested-termination" },
    { invocation: 1, event: "exit", kind: "exited", code: 3, stdout: { bytes: 4, sha256: sha(out) }, stderr: { bytes: 1, sha256: sha(err) } },
    { invocation: 1, event: "cleanup-complete", reaped: 4 },
    { invocation: 2, event: "start" },
    { invocation: 2, event: "launch-failure", stage: "credentials", errno: 13 },
    { invocation: 2, event: "launch-failure", stage: "stage-250", errno: 1 },
    {
      invocation: 2,
      event: "exit",
      kind: "signaled",
      code: 0,
      stdout: { bytes: 0, sha256: sha(Buffer.alloc(0)) },
      stderr: { bytes: 0, sha256: sha(Buffer.alloc(0)) },
    },
    { invocation: 0, event: "infra-failure", reason: "output-limit", detail: 99 },
    { invocation: 2, event: "infra-failure", reason: "reason-200", detail: 5 },
    { invocation: 0, event: "final", status: "infrastructure-failure", invocations: 2 },
  ]);
  assert.equal(d.records, 18);
  assert.equal(d.frames, 3);
  assert.equal(d.bytes, data.length);
  assert.deepEqual([...d.streams.keys()], [1, 2]);
  assert.ok(d.streams.get(1)!.stdout.equals(out));
  assert.ok(d.streams.get(1)!.stderr.equals(err));
  assert.equal(d.streams.get(2)!.stdout.length, 0);
  assert.equal(d.streams.get(2)!.stderr.length, 0);
  // A status byte of 0 is "ok"; any other is an infrastructure failure.
  assert.deepEqual(decodeProtocol(new StreamWriter().hello().final(0, 0)).events, [{ invocation: 0, event: "final", status: "ok", invocations: 0 }]);
  assert.equal(decodeProtocol(new StreamWriter().hello().final(2, 0)).events[0]!.event, "final");
});

test("bounds at their edges: magic length, record lengths, body sizes, frame bytes, record count", () => {
  const good = new StreamWriter().hello().final(0, 0);
  decodeProtocol(good);
  assert.match(check(good.subarray(0, 7)) ?? "", /^protocol@0\/magic$/);
  assert.match(check(good.subarray(0, 8)) ?? "", /\/no-final$/);
  // A record length below the header is refused; exactly the header (an empty body) is a length the decoder accepts.
  const short = Buffer.concat([good.subarray(0, 8), u32(12), Buffer.alloc(12)]);
  assert.match(check(short) ?? "", /^protocol@8\/record-length$/);
  const start = new StreamWriter().hello().record(2, 1).final(0, 1);
  decodeProtocol(start);
  // Frame payloads up to the frame limit pass; with a 4-byte limit, 4 bytes decode and 5 are refused.
  const limits = { ...DEFAULT_PROTOCOL_LIMITS, frameBytes: 4 };
  const frame = (n: number) =>
    new StreamWriter().hello().record(2, 1).frame(1, 1, 0, Buffer.alloc(n, 0x61)).exit(1, 0, Buffer.alloc(n, 0x61), Buffer.alloc(0)).final(0, 1);
  decodeProtocol(frame(4), limits);
  // The frame limit names the frame record's offset: magic 8 + hello 21 + start 17.
  assertCode(() => decodeProtocol(frame(5), limits), "LIMIT_EXCEEDED", "protocol@46");
  // A record may be as long as the largest fixed body (an exit record, 137 bytes) even under a small frame
  // limit, so a 125-byte frame is refused by the frame limit, not as a bad record length.
  assertCode(() => decodeProtocol(frame(125), limits), "LIMIT_EXCEEDED", "protocol@46");
  // Four bytes left hold a whole length field: an impossible length is record-length, not truncated.
  const four = Buffer.concat([new StreamWriter().hello().final(0, 0).subarray(0, 29), Buffer.alloc(4)]);
  assert.equal(check(four), "protocol@29/record-length");
  // records: the limit counts every record, the final included.
  decodeProtocol(start, { ...DEFAULT_PROTOCOL_LIMITS, records: 3 });
  assertCode(() => decodeProtocol(start, { ...DEFAULT_PROTOCOL_LIMITS, records: 2 }), "LIMIT_EXCEEDED", "protocol");
  // protocol bytes: the whole stream, exactly.
  decodeProtocol(start, { ...DEFAULT_PROTOCOL_LIMITS, protocolBytes: start.length });
  assertCode(() => decodeProtocol(start, { ...DEFAULT_PROTOCOL_LIMITS, protocolBytes: start.length - 1 }), "LIMIT_EXCEEDED", "protocol");
});

test("each fixed-size body must be exactly its size: one byte more or less is body-size", () => {
  const bodies: [number, number][] = [
    [4, 12],
    [12, 12],
    [8, 5],
    [9, 4],
    [10, 9],
    [2, 0],
    [5, 0],
    [6, 0],
  ];
  for (const [type, size] of bodies) {
    const inv = type === 10 ? 0 : 1;
    const build = (n: number) => new StreamWriter().hello().record(2, 1).record(type, inv, Buffer.alloc(n, 1)).final(0, 1);
    decodeProtocol(build(size));
    assert.match(check(build(size + 1)) ?? "", /\/body-size$/, `type ${type} +1`);
    if (size > 0) assert.match(check(build(size - 1)) ?? "", /\/body-size$/, `type ${type} -1`);
  }
  const hello = (n: number) => new StreamWriter().record(1, 0, Buffer.alloc(n)).final(0, 0);
  assert.match(check(hello(5)) ?? "", /\/body-size$/);
  // A frame body of exactly its 9-byte header holds an empty payload: frame-empty, not body-size.
  const empty = Buffer.concat([Buffer.from([1]), u64(0)]);
  assert.match(check(new StreamWriter().hello().record(2, 1).record(3, 1, empty).final(0, 1)) ?? "", /\/frame-empty$/);
});

test("invocations: records of invocation 0 are hello, final and infrastructure failures only; ids grow by one", () => {
  for (const type of [2, 4, 5, 6, 7, 8, 9, 12]) {
    const w = new StreamWriter().hello().record(type, 0, Buffer.alloc(85));
    assert.match(check(w.final(0, 0)) ?? "", /\/invocation-id$/, `type ${type}`);
  }
  decodeProtocol(new StreamWriter().hello().record(10, 0, Buffer.alloc(9)).final(0, 0));
  // Going back to an earlier invocation is allowed; skipping one is not.
  decodeProtocol(new StreamWriter().hello().record(2, 1).record(2, 2).record(5, 1).final(0, 2));
  assert.match(check(new StreamWriter().hello().record(2, 1).record(2, 3).final(0, 3)) ?? "", /\/invocation-order$/);
  assert.match(check(new StreamWriter().hello().record(2, 1).record(2, 2).final(0, 1)) ?? "", /\/final-count$/);
});

test("stream offsets continue per invocation and per stream; stderr has its own count", () => {
  const a = Buffer.from("ab");
  const ok = new StreamWriter().hello().record(2, 1).record(2, 2).frame(1, 1, 0, a).frame(2, 1, 0, a).frame(1, 2, 0, a).frame(1, 1, 2, a);
  const d = decodeProtocol(
    ok
      .exit(1, 0, Buffer.concat([a, a]), a)
      .exit(2, 0, a, Buffer.alloc(0))
      .final(0, 2),
  );
  assert.equal(d.streams.get(1)!.stdout.toString(), "abab");
  assert.equal(d.streams.get(2)!.stdout.toString(), "ab");
  const skip = new StreamWriter().hello().record(2, 1).frame(1, 2, 0, a).frame(1, 2, 1, a).final(0, 1);
  assert.match(check(skip) ?? "", /\/frame-offset$/);
  // The exit checks stderr's bytes and digest as well as stdout's.
  const errBytes = new StreamWriter().hello().record(2, 1).frame(1, 2, 0, a).exitWith(1, { errBytes: 1 }, Buffer.alloc(0), a).final(0, 1);
  assert.match(check(errBytes) ?? "", /\/exit-bytes$/);
  const errDigest = new StreamWriter().hello().record(2, 1).frame(1, 2, 0, a).exit(1, 0, Buffer.alloc(0), Buffer.from("ac")).final(0, 1);
  assert.match(check(errDigest) ?? "", /\/exit-digest$/);
  // Output declared but never sent: zero bytes arrived.
  const never = new StreamWriter().hello().record(2, 1).exit(1, 0, a, Buffer.alloc(0)).final(0, 1);
  assert.match(check(never) ?? "", /\/exit-bytes$/);
  assert.match(check(new StreamWriter().hello().record(2, 1).exitWith(1, { kind: 0 }, Buffer.alloc(0), Buffer.alloc(0)).final(0, 1)) ?? "", /\/exit-kind$/);
});
