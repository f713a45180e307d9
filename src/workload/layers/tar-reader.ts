/**
 * Reads one staged layer blob: counts and (optionally) re-hashes the stored
 * bytes, gunzips with node:zlib when the layer is gzip, passes every
 * uncompressed byte through the strict TarGate, and lets `tar-stream` frame
 * the members the gate let through. Each member reaches the caller with the
 * gate's record (the authority on metadata) and, for regular files, its
 * bytes. tar-stream's own header must agree with the gate's on name, type
 * and size, so no parser differential between the two can slip through.
 *
 * Never runs a tar process; never writes anything.
 */
import { createReadStream } from "node:fs";
import { Transform, pipeline, type Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import tarStream from "tar-stream";
import { CairnError, Sha256Hasher, type Sha256Digest } from "../../core/index.ts";
import { enforce, type WorkloadLimits } from "../limits.ts";
import { TarGate, type GateBudget, type GateRecord } from "./tar-gate.ts";

export interface LayerStreamInput {
  readonly path: string;
  readonly compression: "none" | "gzip";
  readonly diffId: Sha256Digest;
  /** When given, the stored bytes are re-hashed and must match (the copy is re-verified as it is read). */
  readonly digest?: Sha256Digest;
  readonly size?: number;
  /** Names the layer in messages, e.g. "/layers/2". */
  readonly where: string;
}

export interface Budget extends GateBudget {
  compressedBytes: number;
}

const TAR_TYPE: Record<GateRecord["type"], string> = { file: "file", dir: "directory", symlink: "symlink", hardlink: "link" };

function storedStream(input: LayerStreamInput, limits: WorkloadLimits, budget: Budget): Readable {
  const hasher = input.digest === undefined ? undefined : new Sha256Hasher();
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      budget.compressedBytes += chunk.length;
      try {
        enforce(limits, "compressedBytes", budget.compressedBytes, input.where);
      } catch (e) {
        cb(e as Error);
        return;
      }
      hasher?.update(chunk);
      cb(null, chunk);
    },
    flush(cb) {
      if (input.size !== undefined && size !== input.size) {
        cb(new CairnError("SIZE_MISMATCH", `stored layer has ${size} bytes, its descriptor says ${input.size}`, { path: input.where }));
        return;
      }
      const actual = hasher?.digest();
      if (actual !== undefined && actual !== input.digest) {
        cb(new CairnError("DIGEST_MISMATCH", "stored layer does not match its descriptor digest", { path: input.where, hint: `expected ${input.digest}, computed ${actual}` }));
        return;
      }
      cb();
    },
  });
  const raw = createReadStream(input.path, { highWaterMark: 1 << 20 });
  const done = (): void => undefined; // errors surface through the returned stream
  if (input.compression === "gzip") {
    return pipeline(raw, counter, createGunzip({ chunkSize: 1 << 17 }), done);
  }
  return pipeline(raw, counter, done);
}

function gunzipError(e: unknown, where: string): unknown {
  if (e instanceof CairnError) return e;
  const code = (e as { code?: string } | null)?.code;
  if (typeof code === "string" && code.startsWith("Z_")) return new CairnError("TAR_INVALID", `layer is not valid gzip (${code})`, { path: where, cause: e });
  if (e instanceof Error && /tar|header|Unexpected end/i.test(e.message)) return new CairnError("TAR_INVALID", `layer is not a valid tar stream: ${e.message}`, { path: where, cause: e });
  return e;
}

/**
 * Streams the members of one layer to `onMember`, in archive order, then
 * checks the end-of-archive marker and the DiffID. Rejects with the first
 * refusal; `onMember` may throw to refuse too.
 */
export async function readLayer(
  input: LayerStreamInput,
  limits: WorkloadLimits,
  budget: Budget,
  onMember: (rec: GateRecord, data: Buffer | undefined) => Promise<void> | void,
): Promise<void> {
  const gate = new TarGate(limits, budget, input.where);
  const source = storedStream(input, limits, budget);
  const extract = tarStream.extract();
  let failure: unknown;
  const pump = (async () => {
    try {
      for await (const chunk of source as AsyncIterable<Buffer>) {
        for (const part of gate.push(chunk)) {
          if (!extract.write(part)) await new Promise<void>((resolve) => extract.once("drain", resolve));
        }
      }
      gate.end();
      // tar-stream's Extract is a streamx Writable; its end() takes no argument (the typings borrow node's).
      (extract as unknown as { end(): void }).end();
    } catch (e) {
      failure ??= gunzipError(e, input.where);
      source.destroy();
      extract.destroy(failure as Error);
    }
  })();
  try {
    for await (const entry of extract) {
      const rec = gate.records.shift();
      const h = entry.header;
      if (rec === undefined || h.name !== rec.name || h.size !== rec.size || h.type !== TAR_TYPE[rec.type]) {
        throw new CairnError("TAR_INVALID", "tar parsers disagree on a member header", { path: input.where, hint: "the layer is ambiguous; rebuild it with a standard tar writer" });
      }
      let data: Buffer | undefined;
      if (rec.type === "file") {
        const parts: Buffer[] = [];
        for await (const c of entry as AsyncIterable<Buffer>) parts.push(c);
        data = parts.length === 1 ? parts[0]! : Buffer.concat(parts, rec.size);
        if (data.length !== rec.size) throw new CairnError("TAR_INVALID", "member data shorter than its header size", { path: input.where });
      } else {
        for await (const _ of entry as AsyncIterable<Buffer>) void _;
      }
      await onMember(rec, data);
    }
  } catch (e) {
    failure ??= gunzipError(e, input.where);
    source.destroy();
    extract.destroy(failure as Error);
  }
  await pump;
  if (failure !== undefined) throw failure;
  if (gate.records.length !== 0) throw new CairnError("TAR_INVALID", "tar parsers disagree on the member count", { path: input.where });
  const actual = gate.diffId();
  if (actual !== input.diffId) {
    throw new CairnError("OCI_DIFFID_MISMATCH", "uncompressed layer does not match its DiffID", { path: input.where, hint: `config says ${input.diffId}, computed ${actual}` });
  }
}
