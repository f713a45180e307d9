/**
 * The inflate thread's body (started by core/inflate-thread.ts, never
 * imported): reads one stored file (gzip or not), hashes the stored bytes
 * (when asked), and hands the bytes it inflated in order to the main thread
 * (for a layer, to the tar gate, which also hashes them: the DiffID). Reading,
 * the stored hash and gunzip's bookkeeping run beside the gate and the
 * contents on another core (issue 15: "overlap across the machine's cores");
 * the DiffID is on the main thread because, with two cores, this thread is
 * the longer of the two when it hashes the stream too. Given a descriptor, it
 * also writes the stored bytes it read into it, at their offsets: the
 * caller's private copy, so a layer the store keeps is read once, not
 * staged first and read again. It never opens, closes or removes the copy.
 * Asked to discard, it hands nothing back and only hashes the stored bytes:
 * a verify under a memo hashes the layers here while the main thread reads
 * the tree back.
 *
 * It decides nothing: sizes, digests and limits are compared on the main
 * thread. What it bounds itself is what the main thread cannot see in time:
 * it stops reading once the stored bytes pass `maxStored`, and it never has
 * more than `credit` chunks unacknowledged, so a bomb inflates at most that
 * far ahead of the caller's limits. Its last report of a job comes after
 * every write into the copy has ended.
 *
 * Built-in modules only: the thread starts without loading cairn.
 */
import { createHash, type Hash } from "node:crypto";
import { fdatasync, write } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { parentPort } from "node:worker_threads";
import { createGunzip } from "node:zlib";

export interface InflateJobMessage {
  readonly type: "job";
  /** Names the job in every report, so a report of a job given up is told apart from the next one's. */
  readonly id: number;
  readonly path: string;
  /** gzip (inflated) or plain tar (the stored bytes are the stream). */
  readonly gzip: boolean;
  /** A descriptor the caller opened for writing: it receives the stored bytes at their offsets (the caller's private copy). */
  readonly copyFd: number | undefined;
  /** Hash the stored bytes (the main thread compares the digest). */
  readonly hashStored: boolean;
  /** Hand nothing back: the job only reads (and hashes) the stored bytes. */
  readonly discard: boolean;
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
  | { readonly type: "end" }
  | { readonly type: "error"; readonly error: WireError }
  | { readonly type: "aborted" }
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

/**
 * gunzip makes a new 1 MiB output buffer each time one fills; the bytes are
 * copied out at once, so each is garbage a moment later. V8 frees such
 * buffers at a collection, and a thread with as few JS objects as this one
 * rarely collects on its own: it held up to ~40 MB of them (a verify of
 * 200,000 entries peaked at 236 MB against 196 MB in-thread). So the thread
 * runs a minor collection (a scavenge of its small young generation, well
 * under a millisecond) every COLLECT_EVERY bytes: that verify peaks at
 * 206 MB. V8's `gc` is reached by setting `--expose-gc` at run time and
 * reading `gc` from a new context: Node asks for care with run-time flags;
 * this one only adds `gc` to contexts made afterwards, and cairn makes no
 * other. Where V8 refuses the flag, the thread just collects less often.
 */
const COLLECT_EVERY = 4 * CHUNK;
setFlagsFromString("--expose-gc");
const exposed: unknown = runInNewContext('typeof gc === "function" ? gc : undefined');
const collect = typeof exposed === "function" ? (exposed as (o: { type: "minor" }) => void) : undefined;
let sinceCollect = 0;
/** Transfer buffers kept for reuse: the credit's worth, and one being filled. */
const POOL = 8;
/** Write-back of the copy is started every this many bytes, so the caller's fsync finds little left to write. */
const WRITE_BACK = 8 * CHUNK;

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
 * Runs one job. Apart from gunzip's own output buffers (collected as above),
 * nothing is allocated per MiB: the stored bytes are read into two reused
 * buffers (one is read while gunzip, or the copy's write, still holds the
 * other), and the uncompressed bytes are copied into 1 MiB transfer buffers
 * that the main thread hands back with its acknowledgement.
 */
function run(job: InflateJobMessage, send: (m: InflateReport, transfer?: ArrayBuffer[]) => void, pool: ArrayBuffer[]): Running {
  const post = (m: Report, transfer?: ArrayBuffer[]): void => send({ ...m, id: job.id } as InflateReport, transfer);
  let stored = 0;
  let credit = job.credit;
  let failed = false;
  const storedHash: Hash | undefined = job.hashStored ? createHash("sha256") : undefined;
  const gunzip = job.gzip ? createGunzip({ chunkSize: CHUNK }) : undefined;
  let file: FileHandle | undefined;
  const copyFd = job.copyFd;
  // every write and write-back on the copy still running: the last report waits for them
  const onCopy = new Set<Promise<void>>();
  const track = (p: Promise<void>): Promise<void> => {
    onCopy.add(p);
    void p.catch(() => undefined).finally(() => onCopy.delete(p)); // a failed write surfaces where it is awaited
    return p;
  };
  // write-back of the copy, started as it grows; its outcome is not relied on (the caller's fsync is)
  let flushedTo = 0;
  let flushing = false;
  const writeBack = (last = false): void => {
    if (copyFd === undefined || (flushing && !last)) return;
    flushedTo = stored;
    flushing = true;
    void track(new Promise<void>((resolve) => fdatasync(copyFd, () => resolve()))).then(() => {
      flushing = false;
    });
  };
  // settles when the job is given up, so the read loop never waits on a destroyed gunzip's callback
  let stop: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  // settles when a consumed chunk gives the thread credit again (plain tar: the read loop waits on it)
  let credited: () => void = () => undefined;
  const end = (): void => {
    failed = true;
    gunzip?.destroy();
    stop();
  };
  // the job's last report goes out once, after the files are closed and an unfinished copy removed
  let settled = false;
  let closing: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (closing ??= (async () => {
      await file?.close().catch(() => undefined);
      while (onCopy.size > 0) await Promise.allSettled([...onCopy]);
    })());
  const settle = (m: Report): void => {
    if (settled) return;
    settled = true;
    void cleanup().then(() => post(m));
  };
  const fail = (e: unknown): void => {
    if (failed) return;
    end();
    settle({ type: "error", error: wire(e) });
  };
  // the transfer buffer being filled and how much of it is filled
  let out: Uint8Array | undefined;
  let used = 0;
  const hand = (): void => {
    if (out === undefined || used === 0) return;
    const chunk = out.subarray(0, used);
    out = undefined;
    used = 0;
    post({ type: "data", chunk, stored }, [chunk.buffer as ArrayBuffer]);
    if (--credit <= 0) gunzip?.pause();
  };
  /** One piece of the tar stream, copied into transfer buffers. */
  const emit = (chunk: Buffer): void => {
    if (job.discard) return;
    sinceCollect += chunk.length;
    if (collect !== undefined && sinceCollect >= COLLECT_EVERY) {
      sinceCollect = 0;
      collect({ type: "minor" });
    }
    for (let at = 0; at < chunk.length; ) {
      out ??= new Uint8Array(pool.pop() ?? new ArrayBuffer(CHUNK));
      const n = Math.min(chunk.length - at, CHUNK - used);
      out.set(chunk.subarray(at, at + n), used);
      used += n;
      at += n;
      if (used === CHUNK) hand();
    }
  };
  const finish = (): void => {
    if (failed) return;
    hand();
    settle({ type: "end" });
  };
  gunzip?.on("error", fail);
  gunzip?.on("data", (chunk: Buffer) => {
    if (!failed) emit(chunk);
  });
  gunzip?.on("end", finish);
  const read = async (): Promise<void> => {
    file = await open(job.path, "r");
    const buffers = [Buffer.allocUnsafeSlow(CHUNK), Buffer.allocUnsafeSlow(CHUNK)];
    const held: Array<Promise<unknown> | undefined> = [undefined, undefined];
    for (let k = 0; !failed; k ^= 1) {
      await Promise.race([held[k], stopped]); // gunzip and the copy are done with this buffer (or the job was given up)
      while (gunzip === undefined && credit <= 0 && !failed) await Promise.race([new Promise<void>((r) => (credited = r)), stopped]);
      if (failed) return;
      const { bytesRead } = await file.read(buffers[k]!, 0, CHUNK, null);
      if (failed) return;
      if (bytesRead === 0) break;
      const at = stored;
      stored += bytesRead;
      if (stored > job.maxStored) {
        end();
        settle({ type: "stored-limit", stored });
        return;
      }
      const view = buffers[k]!.subarray(0, bytesRead);
      storedHash?.update(view);
      const copied = copyFd === undefined ? undefined : track(writeAll(copyFd, view, at));
      if (stored - flushedTo >= WRITE_BACK) writeBack();
      if (gunzip === undefined) {
        emit(view);
        held[k] = copied;
      } else held[k] = Promise.all([copied, new Promise<void>((resolve) => gunzip.write(view, () => resolve()))]);
    }
    if (failed) return;
    await Promise.race([Promise.all(held), stopped]);
    if (failed) return;
    const f = file;
    file = undefined;
    void f.close().catch(() => undefined);
    if (flushedTo < stored) writeBack(true); // the rest of the copy
    post({ type: "stored", size: stored, digest: storedHash?.digest("hex") });
    if (gunzip !== undefined) gunzip.end();
    else finish();
  };
  read().catch(fail);
  return {
    id: job.id,
    ack: () => {
      if (++credit > 0 && !failed) {
        gunzip?.resume();
        credited();
      }
    },
    abort: () => {
      end();
      settle({ type: "aborted" });
    },
  };
}

/** Writes all of `data` at `position` of the descriptor (a short write is continued). */
async function writeAll(fd: number, data: Buffer, position: number): Promise<void> {
  for (let done = 0; done < data.length; ) {
    done += await new Promise<number>((resolve, reject) =>
      write(fd, data, done, data.length - done, position + done, (e, n) => (e === null ? resolve(n) : reject(e))),
    );
  }
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
