/**
 * Reads one layer blob (a private staged file, or bytes already in memory):
 * counts and (optionally) re-hashes the stored bytes, gunzips with node:zlib
 * when the layer is gzip (a stored file on core's inflate thread, so that
 * reading, the stored hash and gunzip run beside the gate), and passes every
 * uncompressed byte through the strict TarGate, which frames the members. Each member reaches the caller
 * with the gate's record and, for regular files, its bytes as they arrive.
 *
 * Never runs a tar process; never writes anything itself (a caller's copy
 * descriptor, `copyFd`, is written by core's inflate thread).
 */
import { createReadStream } from "node:fs";
import { Readable, Transform, pipeline } from "node:stream";
import { createGunzip } from "node:zlib";
import { CairnError, checkLimit, inflateOnThread, Sha256Hasher, type Sha256Digest } from "../core/index.ts";
import { enforceLimit, type LayerLimits } from "./layer-limits.ts";
import { TarGate, type GateBudget, type OnMember } from "./tar-gate.ts";

export type { MemberBody } from "./tar-gate.ts";

export interface LayerStreamInput {
  /** The private staged copy of the blob. Give this or `bytes`. */
  readonly path?: string;
  /** The blob's bytes, already verified and held by the caller. */
  readonly bytes?: Uint8Array;
  readonly compression: LayerCompression;
  /** sha256 of the uncompressed tar stream; when given, a mismatch refuses the layer (OCI_DIFFID_MISMATCH). */
  readonly diffId?: Sha256Digest;
  /** When given, the stored bytes are re-hashed and must match (the copy is re-verified as it is read). */
  readonly digest?: Sha256Digest;
  readonly size?: number;
  /** Names the layer in messages, e.g. "/layers/2". */
  readonly where: string;
  /** Bounds on this layer's gunzip output, checked as each chunk leaves gunzip (see InflationBound). */
  readonly inflation?: InflationBound;
  /** Records the gate's member-level pax refusals on the member instead of throwing them (see TarGate; `cairn workload check`). */
  readonly collect?: boolean;
  /** Read a stored file on this thread instead of the inflate thread (the differential tests compare the two). */
  readonly inflateHere?: boolean;
  /**
   * A descriptor the caller opened for writing (its private staged copy of
   * the layer for the store): the stored bytes are written into it at their
   * offsets by the same read that hashes them, and every write has ended
   * when `readLayer` settles. Needs `digest` and `size` (the copy holds
   * exactly the bytes re-hashed); the caller keeps it only if `readLayer`
   * resolved. Not with `bytes` or `inflateHere`. Never closed here.
   */
  readonly copyFd?: number;
}

/**
 * Bounds on what one gzip layer may expand to, checked on every chunk gunzip
 * emits, so a bomb is refused (LIMIT_EXCEEDED naming the limit) after at most
 * one more chunk than the limit allows, never after it was inflated whole.
 * The ratio is output bytes over the stored bytes handed to gunzip so far; it
 * is only checked once the output passes `ratioAfter`, because a small layer
 * of empty files or zeros compresses far better than any real layer and
 * costs nothing to inflate.
 */
export interface InflationBound {
  readonly maxBytes: number;
  readonly maxBytesName: string;
  readonly maxRatio: number;
  readonly maxRatioName: string;
  readonly ratioAfter: number;
  readonly hint?: string;
}

/** Throws LIMIT_EXCEEDED when `out` bytes inflated from `stored` bytes break `bound`. */
function checkInflation(bound: InflationBound, out: number, stored: number, where: string): void {
  checkLimit(bound.maxBytesName, out, bound.maxBytes, where, "bytes", bound.hint);
  if (out > bound.ratioAfter && out > bound.maxRatio * stored)
    checkLimit(bound.maxRatioName, Math.ceil(out / Math.max(stored, 1)), bound.maxRatio, where, "count", bound.hint);
}

export interface Budget extends GateBudget {
  compressedBytes: number;
  /** Called after each stored chunk is read, with the running totals (for progress displays). */
  onProgress?: (totals: { compressedBytes: number; expandedBytes: number }) => void;
}

/** How a layer blob is compressed (the OCI side maps media types to this). */
export type LayerCompression = "none" | "gzip";

/** In-memory bytes in 1 MiB slices (no copies), as a file stream would deliver them. */
function* slices(bytes: Uint8Array): Generator<Buffer> {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < b.length; i += 1 << 20) yield b.subarray(i, i + (1 << 20));
}

/** The stored bytes ended: their count must be the descriptor's size, and (when re-hashed) their digest its digest. */
function checkStored(input: LayerStreamInput, size: number, actual: Sha256Digest | undefined): void {
  if (input.size !== undefined && size !== input.size) {
    throw new CairnError("SIZE_MISMATCH", `stored layer has ${size} bytes, its descriptor says ${input.size}`, { path: input.where });
  }
  if (actual !== undefined && actual !== input.digest) {
    throw new CairnError("DIGEST_MISMATCH", "stored layer does not match its descriptor digest", {
      path: input.where,
      hint: `expected ${input.digest}, computed ${actual}`,
    });
  }
}

function storedStream(input: LayerStreamInput, limits: LayerLimits, budget: Budget): Readable {
  const hasher = input.digest === undefined ? undefined : new Sha256Hasher();
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      budget.compressedBytes += chunk.length;
      try {
        enforceLimit(limits, "compressedBytes", budget.compressedBytes, input.where);
      } catch (e) {
        cb(e as Error);
        return;
      }
      hasher?.update(chunk);
      budget.onProgress?.({ compressedBytes: budget.compressedBytes, expandedBytes: budget.expandedBytes });
      cb(null, chunk);
    },
    flush(cb) {
      try {
        checkStored(input, size, hasher?.digest());
      } catch (e) {
        cb(e as Error);
        return;
      }
      cb();
    },
  });
  if ((input.path === undefined) === (input.bytes === undefined))
    throw new CairnError("USAGE", "a layer is read from exactly one of a path or bytes", { path: input.where });
  const raw = input.bytes !== undefined ? Readable.from(slices(input.bytes)) : createReadStream(input.path!, { highWaterMark: 1 << 20 });
  const done = (): void => undefined; // errors surface through the returned stream
  if (input.compression === "gzip") {
    const gunzip = createGunzip({ chunkSize: 1 << 20 });
    const bound = input.inflation;
    if (bound === undefined) return pipeline(raw, counter, gunzip, done);
    let out = 0;
    const guard = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        out += chunk.length;
        try {
          checkInflation(bound, out, size, input.where);
        } catch (e) {
          cb(e as Error);
          return;
        }
        cb(null, chunk);
      },
    });
    return pipeline(raw, counter, gunzip, guard, done);
  }
  return pipeline(raw, counter, done);
}

function gunzipError(e: unknown, where: string): unknown {
  if (e instanceof CairnError) return e;
  const code = (e as { code?: string } | null)?.code;
  if (typeof code === "string" && code.startsWith("Z_")) return new CairnError("TAR_INVALID", `layer is not valid gzip (${code})`, { path: where, cause: e });
  return e;
}

/**
 * Streams the members of one layer to `onMember`, in archive order, then
 * checks the end-of-archive marker and the DiffID (when given). `onMember`
 * sees each member's record as its header is read and, for a regular file,
 * may return a body that receives the member's bytes chunk by chunk (never
 * gathered whole) and is ended once exactly the header's size arrived.
 * Rejects with the first refusal; `onMember` and the body may throw to refuse too.
 */
export async function readLayer(input: LayerStreamInput, limits: LayerLimits, budget: Budget, onMember: OnMember): Promise<void> {
  // a stored file is read (inflated, its stream hashed, copied when asked) on another thread; bytes in memory here
  const threaded = input.path !== undefined && input.bytes === undefined && input.inflateHere !== true;
  if (input.copyFd !== undefined && (!threaded || input.digest === undefined || input.size === undefined))
    throw new CairnError("USAGE", "a layer copy is made by the inflate thread, of a stored file whose digest and size are re-checked", { path: input.where });
  const gate = new TarGate(limits, budget, input.where, onMember, input.collect === true);
  if (threaded) return readThreaded(input, limits, budget, gate);
  const source = storedStream(input, limits, budget);
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) gate.push(chunk);
    gate.end();
  } catch (e) {
    source.destroy();
    throw gunzipError(e, input.where);
  }
  checkDiffId(input, gate.diffId());
}

function checkDiffId(input: LayerStreamInput, actual: Sha256Digest): void {
  if (input.diffId !== undefined && actual !== input.diffId) {
    throw new CairnError("OCI_DIFFID_MISMATCH", "uncompressed layer does not match its DiffID", {
      path: input.where,
      hint: `config says ${input.diffId}, computed ${actual}`,
    });
  }
}

/**
 * The stored file through the inflate thread (core/inflate-thread.ts): the
 * same limits, checks and errors as `storedStream`, decided here as the
 * thread reports; the DiffID is the gate's, over exactly the chunks it was
 * given.
 */
async function readThreaded(input: LayerStreamInput, limits: LayerLimits, budget: Budget, gate: TarGate): Promise<void> {
  const base = budget.compressedBytes;
  const bound = input.inflation;
  let out = 0;
  const stored = (n: number): void => {
    budget.compressedBytes = base + n;
    enforceLimit(limits, "compressedBytes", budget.compressedBytes, input.where);
  };
  try {
    await inflateOnThread(
      {
        path: input.path!,
        gzip: input.compression === "gzip",
        copyFd: input.copyFd,
        hashStored: input.digest !== undefined,
        maxStored: limits.compressedBytes - base,
      },
      {
        onChunk: (chunk, n) => {
          stored(n);
          budget.onProgress?.({ compressedBytes: budget.compressedBytes, expandedBytes: budget.expandedBytes });
          out += chunk.length;
          if (bound !== undefined) checkInflation(bound, out, n, input.where);
          gate.push(chunk);
        },
        onStored: (size, digest) => {
          stored(size);
          checkStored(input, size, digest === undefined ? undefined : (`sha256:${digest}` as Sha256Digest));
        },
        onStoredLimit: (n) => {
          stored(n);
          throw new CairnError("INTERNAL", `the inflate thread stopped at ${n} stored bytes below the compressedBytes limit`, { path: input.where });
        },
      },
    );
    gate.end();
    checkDiffId(input, gate.diffId());
  } catch (e) {
    throw gunzipError(e, input.where);
  }
}
