/**
 * The host decoder for `cairn.protocol/1` (guest → host, docs/protocol.md).
 * It checks everything the agent promises: the magic, one monotonic sequence
 * number across all records, per-stream byte offsets that continue exactly,
 * bounded records and frames, exit totals and digests that match the bytes
 * received, a final record whose digest covers every byte before it, and
 * nothing after it. Any violation is an infrastructure failure naming the
 * byte offset; output is never silently dropped.
 *
 * Frames are reassembled into whole streams, so how the agent or the host
 * happened to chunk the bytes never shows up in the normalized events.
 */
import { createHash } from "node:crypto";
import { CairnError, checkLimit, type Sha256Digest } from "../core/index.ts";
import { INFRA_REASONS, LAUNCH_STAGES, PROTOCOL_MAGIC, PROTOCOL_VERSION, RECORD } from "./wire.ts";

export interface ProtocolLimits {
  /** Whole protocol stream. */
  readonly protocolBytes: number;
  /** Largest frame payload accepted (the run's frame-bytes limit). */
  readonly frameBytes: number;
  /** Records in one stream. */
  readonly records: number;
}

export const DEFAULT_PROTOCOL_LIMITS: ProtocolLimits = {
  protocolBytes: 1024 * 1024 * 1024,
  frameBytes: 4096,
  records: 4_000_000,
};

export interface StreamFacts {
  readonly bytes: number;
  readonly sha256: Sha256Digest;
}

export type NormalizedEvent =
  | { readonly invocation: number; readonly event: "start" | "stdin-closed" | "requested-termination" }
  | { readonly invocation: number; readonly event: "input-accepted" | "input-rejected"; readonly offset: number; readonly length: number }
  | {
      readonly invocation: number;
      readonly event: "exit";
      readonly kind: "exited" | "signaled";
      readonly code: number;
      readonly stdout: StreamFacts;
      readonly stderr: StreamFacts;
    }
  | { readonly invocation: number; readonly event: "launch-failure"; readonly stage: string; readonly errno: number }
  | { readonly invocation: number; readonly event: "cleanup-complete"; readonly reaped: number }
  | { readonly invocation: number; readonly event: "infra-failure"; readonly reason: string; readonly detail: number }
  | { readonly invocation: 0; readonly event: "final"; readonly status: "ok" | "infrastructure-failure"; readonly invocations: number };

export interface InvocationStreams {
  stdout: Buffer[];
  stderr: Buffer[];
}

/**
 * A hold record (a run with checkpoints): the agent stopped running steps at
 * checkpoint `checkpoint` (its index in run.checkpoints) and waited for the
 * host on the input channel. Not an event: whether a checkpoint was taken is
 * the host's fact (run.json), and a replay holds at the same records.
 */
export interface ProtocolHold {
  readonly checkpoint: number;
  readonly invocation: number;
  /** The index of the next step the agent would have run. */
  readonly nextStep: number;
  /** stdin bytes the scenario had given the invocation so far. */
  readonly stdinOffset: number;
  /** The stream's length up to and including this record: a branch from this checkpoint continues the stream from here. */
  readonly end: number;
}

export interface DecodedProtocol {
  readonly events: readonly NormalizedEvent[];
  /** The hold records, in order (present only in a run with checkpoints). */
  readonly holds?: readonly ProtocolHold[];
  /** Exact output bytes per invocation (private). */
  readonly streams: ReadonlyMap<number, { readonly stdout: Buffer; readonly stderr: Buffer }>;
  readonly records: number;
  readonly frames: number;
  readonly bytes: number;
}

/**
 * The decoder's checks, one name each: a refusal's path is
 * `protocol@<byte offset>/<check>`, so a test (or a reader of a bundle) can
 * tell which promise the stream broke without parsing the message.
 */
export const PROTOCOL_CHECKS = [
  "magic",
  "after-final",
  "record-length",
  "truncated",
  "sequence",
  "invocation-id",
  "invocation-order",
  "body-size",
  "hello-first",
  "version",
  "frame-stream",
  "frame-empty",
  "frame-offset",
  "exit-bytes",
  "exit-digest",
  "exit-kind",
  "final-digest",
  "final-count",
  "record-type",
  "no-final",
] as const;
export type ProtocolCheck = (typeof PROTOCOL_CHECKS)[number];

function bad(offset: number, check: ProtocolCheck, message: string): CairnError {
  return new CairnError("RUN_INFRASTRUCTURE", `protocol stream invalid at byte ${offset}: ${message}`, {
    path: `protocol@${offset}/${check}`,
    hint: "the guest agent or the transport misbehaved; the run is not trustworthy",
  });
}

const HEADER = 17; // u32 length | u8 type | u64 seq | u32 invocation
const BODY_MAX = 1 + 8 + 64 + 32 + 32; // largest fixed body (exit), frames are checked separately

function hex(b: Buffer): Sha256Digest {
  return `sha256:${b.toString("hex")}` as Sha256Digest;
}

/**
 * `partial`: the stream of a guest that did not end through its agent (a
 * panic, the host's timeout): what it holds up to its last whole record is
 * decoded with every check, and a cut-off last record or a missing final
 * record ends it instead of refusing it. The run is then judged by how QEMU
 * ended (guest.ts), never by these events alone.
 */
export function decodeProtocol(data: Buffer, limits: ProtocolLimits = DEFAULT_PROTOCOL_LIMITS, opts: { partial?: boolean } = {}): DecodedProtocol {
  checkLimit("protocol.bytes", data.length, limits.protocolBytes, "protocol", "bytes");
  if (data.length < 8 || data.subarray(0, 8).toString("latin1") !== PROTOCOL_MAGIC) throw bad(0, "magic", "missing protocol magic");
  const events: NormalizedEvent[] = [];
  const holds: ProtocolHold[] = [];
  const out = new Map<number, InvocationStreams>();
  const hashers = new Map<string, ReturnType<typeof createHash>>();
  const stream = (inv: number, s: number) => {
    let st = out.get(inv);
    if (!st) {
      st = { stdout: [], stderr: [] };
      out.set(inv, st);
    }
    return s === 1 ? st.stdout : st.stderr;
  };
  const totals = new Map<string, number>();
  let pos = 8;
  let seq = 0n;
  let frames = 0;
  let final = false;
  let lastInvocation = 0;
  while (pos < data.length) {
    if (final) throw bad(pos, "after-final", "bytes after the final record");
    if (opts.partial === true && (data.length - pos < 4 || data.length - pos - 4 < data.readUInt32LE(pos))) break;
    if (data.length - pos < 4) throw bad(pos, "truncated", "truncated record length");
    const len = data.readUInt32LE(pos);
    if (len < HEADER - 4 || len > HEADER - 4 + 9 + Math.max(limits.frameBytes, BODY_MAX)) throw bad(pos, "record-length", `record length ${len} out of bounds`);
    if (data.length - pos - 4 < len) throw bad(pos, "truncated", "truncated record");
    const type = data[pos + 4]!;
    const rseq = data.readBigUInt64LE(pos + 5);
    const inv = data.readUInt32LE(pos + 13);
    const body = data.subarray(pos + HEADER, pos + 4 + len);
    if (rseq !== seq) throw bad(pos, "sequence", `sequence ${rseq} where ${seq} was expected`);
    seq++;
    checkLimit("protocol.records", Number(seq), limits.records, "protocol");
    const need = (n: number) => {
      if (body.length !== n) throw bad(pos, "body-size", `record type ${type} has ${body.length} body bytes, expected ${n}`);
    };
    if (type !== RECORD.hello && type !== RECORD.final && inv === 0 && type !== RECORD["infra-failure"]) {
      throw bad(pos, "invocation-id", "record without an invocation id");
    }
    if (inv > lastInvocation) {
      if (inv !== lastInvocation + 1) throw bad(pos, "invocation-order", `invocation ${inv} skips ${lastInvocation + 1}`);
      lastInvocation = inv;
    }
    switch (type) {
      case RECORD.hello:
        need(4);
        if (rseq !== 0n) throw bad(pos, "hello-first", "hello is not the first record");
        if (body.readUInt32LE(0) !== PROTOCOL_VERSION) throw bad(pos, "version", `unsupported protocol version ${body.readUInt32LE(0)}`);
        break;
      case RECORD.frame: {
        if (body.length < 9) throw bad(pos, "body-size", "short frame");
        const s = body[0]!;
        if (s !== 1 && s !== 2) throw bad(pos, "frame-stream", `unknown stream ${s}`);
        const payload = body.subarray(9);
        checkLimit("run.frame-bytes", payload.length, limits.frameBytes, `protocol@${pos}`, "bytes");
        if (payload.length === 0) throw bad(pos, "frame-empty", "empty frame");
        const key = `${inv}/${s}`;
        const expected = totals.get(key) ?? 0;
        const offset = Number(body.readBigUInt64LE(1));
        if (offset !== expected) throw bad(pos, "frame-offset", `frame offset ${offset} where ${expected} was expected`);
        totals.set(key, expected + payload.length);
        let h = hashers.get(key);
        if (!h) hashers.set(key, (h = createHash("sha256")));
        h.update(payload);
        stream(inv, s).push(Buffer.from(payload));
        frames++;
        break;
      }
      case RECORD.start:
      case RECORD["stdin-closed"]:
      case RECORD["requested-termination"]:
        need(0);
        events.push({
          invocation: inv,
          event: type === RECORD.start ? "start" : type === RECORD["stdin-closed"] ? "stdin-closed" : "requested-termination",
        });
        break;
      case RECORD["input-accepted"]:
      case RECORD["input-rejected"]:
        need(12);
        events.push({
          invocation: inv,
          event: type === RECORD["input-accepted"] ? "input-accepted" : "input-rejected",
          offset: Number(body.readBigUInt64LE(0)),
          length: body.readUInt32LE(8),
        });
        break;
      case RECORD.exit: {
        need(85);
        const facts = (s: number): StreamFacts => {
          const key = `${inv}/${s}`;
          const declared = Number(body.readBigUInt64LE(s === 1 ? 5 : 13));
          const digest = hex(body.subarray(s === 1 ? 21 : 53, s === 1 ? 53 : 85));
          const received = totals.get(key) ?? 0;
          const actual = hex((hashers.get(key) ?? createHash("sha256")).copy().digest());
          if (declared !== received) throw bad(pos, "exit-bytes", `exit record says ${declared} bytes on stream ${s}, ${received} arrived`);
          if (digest !== actual) throw bad(pos, "exit-digest", `exit record digest of stream ${s} does not match the bytes received`);
          return { bytes: declared, sha256: digest };
        };
        const kind = body[0] === 2 ? "signaled" : "exited";
        if (body[0] !== 1 && body[0] !== 2) throw bad(pos, "exit-kind", `unknown exit kind ${body[0]}`);
        events.push({ invocation: inv, event: "exit", kind, code: body.readUInt32LE(1), stdout: facts(1), stderr: facts(2) });
        break;
      }
      case RECORD["launch-failure"]:
        need(5);
        events.push({ invocation: inv, event: "launch-failure", stage: LAUNCH_STAGES[body[0]!] ?? `stage-${body[0]}`, errno: body.readUInt32LE(1) });
        break;
      case RECORD["cleanup-complete"]:
        need(4);
        events.push({ invocation: inv, event: "cleanup-complete", reaped: body.readUInt32LE(0) });
        break;
      case RECORD["infra-failure"]:
        need(9);
        events.push({
          invocation: inv,
          event: "infra-failure",
          reason: INFRA_REASONS[body[0]!] ?? `reason-${body[0]}`,
          detail: Number(body.readBigUInt64LE(1)),
        });
        break;
      case RECORD.hold:
        need(16);
        holds.push({
          checkpoint: body.readUInt32LE(0),
          invocation: inv,
          nextStep: body.readUInt32LE(4),
          stdinOffset: Number(body.readBigUInt64LE(8)),
          end: pos + 4 + len,
        });
        break;
      case RECORD.final: {
        need(37);
        const digest = createHash("sha256").update(data.subarray(0, pos)).digest();
        if (!digest.equals(body.subarray(5, 37))) throw bad(pos, "final-digest", "final record digest does not cover the stream received");
        const n = body.readUInt32LE(1);
        if (n !== lastInvocation) throw bad(pos, "final-count", `final record counts ${n} invocations, ${lastInvocation} were seen`);
        events.push({ invocation: 0, event: "final", status: body[0] === 0 ? "ok" : "infrastructure-failure", invocations: n });
        final = true;
        break;
      }
      default:
        throw bad(pos, "record-type", `unknown record type ${type}`);
    }
    pos += 4 + len;
  }
  if (!final && opts.partial !== true) throw bad(pos, "no-final", "the stream ended without a final record (transport cut or guest crashed)");
  const streams = new Map<number, { stdout: Buffer; stderr: Buffer }>();
  for (let i = 1; i <= lastInvocation; i++) {
    const st = out.get(i);
    streams.set(i, { stdout: Buffer.concat(st?.stdout ?? []), stderr: Buffer.concat(st?.stderr ?? []) });
  }
  return { events, ...(holds.length > 0 ? { holds } : {}), streams, records: Number(seq), frames, bytes: data.length };
}
