/**
 * The inflate thread's body (started by tree/inflate-thread.ts, never
 * imported): reads one stored gzip layer, hashes the stored bytes (when asked)
 * and the uncompressed stream (the DiffID), and hands the uncompressed
 * chunks to the main thread, which frames them with the tar gate. The main
 * thread's work per layer is then the gate and the contents alone, while
 * reading, gunzip's bookkeeping and the DiffID run beside it on another core
 * (issue 15: "overlap across the machine's cores").
 *
 * It decides nothing: sizes, digests and limits are compared on the main
 * thread, with the same errors as the in-thread path. What it bounds itself
 * is what the main thread cannot see in time: it stops reading once the
 * stored bytes pass `maxStored` (the compressedBytes budget left), and it
 * never has more than `credit` chunks unacknowledged, so a bomb inflates at
 * most that far ahead of the gate's limits.
 *
 * Built-in modules only: the thread starts without loading cairn.
 */
import { createHash, type Hash } from "node:crypto";
import { type FileHandle, open } from "node:fs/promises";
import { parentPort } from "node:worker_threads";
import { createGunzip } from "node:zlib";

export interface InflateJobMessage {
  readonly type: "job";
  /** Names the job in every report, so a report of a job given up is told apart from the next one's. */
  readonly id: number;
  readonly path: string;
  /** Hash the stored bytes (the main thread compares the digest). */
  readonly hashStored: boolean;
  /** Stop reading once more stored bytes than this were read. */
  readonly maxStored: number;
  /** How many chunks may be unacknowledged at once. */
  readonly credit: number;
}

/** Main → thread: a job; one more chunk of it was consumed; or give it up (a refusal: its streams are destroyed). */
export type InflateControl =
  | InflateJobMessage
  | { readonly type: "ack"; readonly id: number; readonly back?: ArrayBuffer }
  | { readonly type: "abort"; readonly id: number };

/** Thread → main, in stream order, each with its job's id. */
export type InflateReport = { readonly id: number } & (
  | { readonly type: "data"; readonly chunk: Uint8Array; readonly stored: number }
  | { readonly type: "stored"; readonly size: number; readonly digest: string | undefined }
  | { readonly type: "stored-limit"; readonly stored: number }
  | { readonly type: "end"; readonly diffId: string }
  | { readonly type: "error"; readonly error: WireError }
);

/** What the thread keeps of its current job. */
interface Running {
  readonly id: number;
  ack(): void;
  abort(): void;
}

type Report = InflateReport extends infer R ? (R extends { id: number } ? Omit<R, "id"> : never) : never;

/** An error as it crosses threads: what the main thread's mapping reads. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly code: string | undefined;
  readonly errno: number | undefined;
  readonly syscall: string | undefined;
  readonly path: string | undefined;
}

const CHUNK = 1 << 20;
/** Transfer buffers kept for reuse: the credit's worth, and one being filled. */
const POOL = 8;

function wire(e: unknown): WireError {
  const o = (e ?? {}) as { name?: unknown; message?: unknown; code?: unknown; errno?: unknown; syscall?: unknown; path?: unknown };
  const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
  return {
    name: str(o.name) ?? "Error",
    message: str(o.message) ?? String(e),
    code: str(o.code),
    errno: typeof o.errno === "number" ? o.errno : undefined,
    syscall: str(o.syscall),
    path: str(o.path),
  };
}

/**
 * Runs one job. Nothing is allocated per MiB here, so the thread, whose few
 * JS objects rarely trigger a collection, holds no dead buffers: the stored
 * bytes are read into two reused buffers (one is read while gunzip holds the
 * other), and each of gunzip's output buffers is handed over whole, moved
 * (transferred), once gunzip has filled it and moved on to a new one. The
 * chunks gunzip cut from one buffer are consecutive from its start, so the
 * buffer and the length used say all of them.
 */
function run(job: InflateJobMessage, send: (m: InflateReport, transfer?: ArrayBuffer[]) => void, pool: ArrayBuffer[]): Running {
  const post = (m: Report, transfer?: ArrayBuffer[]): void => send({ ...m, id: job.id } as InflateReport, transfer);
  let stored = 0;
  let credit = job.credit;
  let failed = false;
  const storedHash: Hash | undefined = job.hashStored ? createHash("sha256") : undefined;
  const diff = createHash("sha256");
  const gunzip = createGunzip({ chunkSize: CHUNK });
  let file: FileHandle | undefined;
  // settles when the job is given up, so the read loop never waits on a destroyed gunzip's callback
  let stop: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const end = (): void => {
    failed = true;
    gunzip.destroy();
    stop();
  };
  const fail = (e: unknown): void => {
    if (failed) return;
    end();
    post({ type: "error", error: wire(e) });
  };
  // the transfer buffer being filled and how much of it is filled; buffers come back with the acknowledgements
  let out: Uint8Array | undefined;
  let used = 0;
  const hand = (): void => {
    if (out === undefined || used === 0) return;
    const chunk = out.subarray(0, used);
    out = undefined;
    used = 0;
    post({ type: "data", chunk, stored }, [chunk.buffer as ArrayBuffer]);
    if (--credit <= 0) gunzip.pause();
  };
  gunzip.on("error", fail);
  gunzip.on("data", (chunk: Buffer) => {
    if (failed) return;
    diff.update(chunk);
    for (let at = 0; at < chunk.length; ) {
      out ??= new Uint8Array(pool.pop() ?? new ArrayBuffer(CHUNK));
      const n = Math.min(chunk.length - at, CHUNK - used);
      out.set(chunk.subarray(at, at + n), used);
      used += n;
      at += n;
      if (used === CHUNK) hand();
    }
  });
  gunzip.on("end", () => {
    if (failed) return;
    hand();
    post({ type: "end", diffId: diff.digest("hex") });
  });
  const read = async (): Promise<void> => {
    file = await open(job.path, "r");
    const buffers = [Buffer.allocUnsafeSlow(CHUNK), Buffer.allocUnsafeSlow(CHUNK)];
    const consumed: Array<Promise<void> | undefined> = [undefined, undefined];
    for (let k = 0; !failed; k ^= 1) {
      await Promise.race([consumed[k], stopped]); // gunzip is done with this buffer (or the job was given up)
      if (failed) return;
      const { bytesRead } = await file.read(buffers[k]!, 0, CHUNK, null);
      if (failed) return;
      if (bytesRead === 0) break;
      stored += bytesRead;
      if (stored > job.maxStored) {
        end();
        post({ type: "stored-limit", stored });
        return;
      }
      const view = buffers[k]!.subarray(0, bytesRead);
      storedHash?.update(view);
      consumed[k] = new Promise<void>((resolve) => gunzip.write(view, () => resolve()));
    }
    if (failed) return;
    post({ type: "stored", size: stored, digest: storedHash?.digest("hex") });
    gunzip.end();
  };
  read()
    .catch(fail)
    .finally(() => void file?.close().catch(() => undefined));
  return {
    id: job.id,
    ack: () => {
      if (++credit > 0 && !failed) gunzip.resume();
    },
    abort: end,
  };
}

const port = parentPort;
if (port !== null) {
  let current: Running | undefined;
  const pool: ArrayBuffer[] = [];
  port.on("message", (m: InflateControl) => {
    if (m.type === "job") {
      current?.abort();
      current = run(m, (r, transfer) => port.postMessage(r, transfer), pool);
      return;
    }
    if (m.type === "ack" && m.back !== undefined && pool.length < POOL) pool.push(m.back); // also from a job given up
    if (m.id !== current?.id) return;
    if (m.type === "ack") current.ack();
    else current.abort();
  });
}
