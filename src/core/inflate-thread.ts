/**
 * Gunzip on another thread: `inflateOnThread` has a worker thread
 * (core/inflate-worker.ts) read a stored layer file, hash it, inflate it,
 * and hand the stream's chunks back in order, each to `onChunk` on
 * this thread. The chunks come in 1 MiB buffers moved between the threads
 * and handed back for reuse; at most CREDIT of them are in flight, so memory
 * stays bounded whatever the layer inflates to.
 *
 * What the thread reports is compared by the caller: the stored size and
 * digest and the limits (for layers, tree/layer-reader.ts, whose tar gate
 * hashes the chunks for the DiffID).
 * `hashOnThread` runs the same thread over a file only to hash it.
 * A refusal thrown by `onChunk` gives the job up (the thread drops its streams, and
 * its late reports are told apart by the job's id); the thread is kept for
 * the next layer, idle without keeping the process alive. A thread that
 * failed itself is terminated.
 */
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { codeModule, runningSources } from "./code-path.ts";
import type { InflateControl, InflateReport, WireError } from "./inflate-worker.ts";

/** Chunks (of up to 1 MiB) the thread may be ahead of the gate. */
const CREDIT = 4;

export interface InflateJob {
  /** The stored layer file (a private staged copy, or an open file by /proc/self/fd). */
  readonly path: string;
  /** gzip, or plain tar. */
  readonly gzip: boolean;
  /** A descriptor the caller opened for writing: it receives the stored bytes at their offsets (never closed here). */
  readonly copyFd?: number;
  /** Hash the stored bytes too (the digest `onStored` receives). */
  readonly hashStored: boolean;
  /** Stop reading (`onStoredLimit`) once more stored bytes than this were read. */
  readonly maxStored: number;
  /** Hand no chunk back (`onChunk` is never called): only read, and hash when asked. */
  readonly discard?: boolean;
}

export interface InflateHandlers {
  /** One uncompressed chunk, with the stored bytes read so far; may throw to refuse (the job stops). */
  readonly onChunk: (chunk: Buffer, stored: number) => void;
  /** The stored bytes ended (before the last uncompressed chunks may arrive); may throw to refuse. */
  readonly onStored: (size: number, digest: string | undefined) => void;
  /** More than `maxStored` stored bytes: must throw the limit's refusal. */
  readonly onStoredLimit: (stored: number) => never;
}

const script = pathToFileURL(codeModule("core/inflate-worker"));
let idle: Worker | undefined;
let jobs = 0;

/**
 * The compiled worker (dist/, what the CLI runs) starts as is. The sources
 * run only under tsx (tests, benches), whose loader a worker thread does not
 * inherit on Node 20: where the thread cannot load the source, it registers
 * tsx and loads it again (under a new URL: the failed load stays cached).
 */
function start(): Worker {
  if (!runningSources()) return new Worker(script);
  const api = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  const src = JSON.stringify(script.href);
  return new Worker(
    `import(${src}).catch(async (e) => {
      if (e?.code !== "ERR_UNKNOWN_FILE_EXTENSION") throw e;
      (await import(${api})).register();
      return import(${src} + "?tsx");
    })`,
    { eval: true },
  );
}

function take(): Worker {
  const w = idle ?? start();
  idle = undefined;
  w.ref();
  return w;
}

function retire(w: Worker, keep: boolean): void {
  w.removeAllListeners("message");
  w.removeAllListeners("error");
  w.removeAllListeners("exit");
  if (keep && idle === undefined) {
    w.unref();
    idle = w;
  } else void w.terminate();
}

/** The error the in-thread stream would have raised (its code, errno and path kept, so the caller maps it the same way). */
function unwire(e: WireError): Error {
  const err = new Error(e.message) as Error & { code?: string; errno?: number; syscall?: string; path?: string };
  err.name = e.name;
  if (e.code !== undefined) err.code = e.code;
  if (e.errno !== undefined) err.errno = e.errno;
  if (e.syscall !== undefined) err.syscall = e.syscall;
  if (e.path !== undefined) err.path = e.path;
  return err;
}

/**
 * Runs one layer through the thread; resolves once every chunk reached
 * `onChunk`. It settles only after the thread's last
 * report of the job (`end`, `error`, `stored-limit`, or `aborted` in answer
 * to a refusal here), which the thread sends once it has stopped reading and
 * every write into the copy has ended: when this settles, nothing of the job
 * is still running, and the caller may close or remove its copy.
 */
export function inflateOnThread(job: InflateJob, handlers: InflateHandlers): Promise<void> {
  const w = take();
  const id = ++jobs;
  return new Promise<void>((resolve, reject) => {
    let done = false;
    let refusal: { e: unknown } | undefined; // refused here: waiting for the thread's "aborted"
    const finish = (ok: boolean, e?: unknown, healthy = true): void => {
      if (done) return;
      done = true;
      retire(w, healthy);
      if (ok) resolve();
      else reject(e);
    };
    const refuse = (e: unknown): void => {
      if (refusal !== undefined) return;
      refusal = { e };
      w.postMessage({ type: "abort", id } satisfies InflateControl);
    };
    w.on("message", (r: InflateReport) => {
      if (done || r.id !== id) return;
      if (refusal !== undefined) {
        // give the buffer back (the thread may still fill the pool), then wait for the job's last report
        if (r.type === "data")
          w.postMessage({ type: "ack", id: 0, back: r.chunk.buffer as ArrayBuffer } satisfies InflateControl, [r.chunk.buffer as ArrayBuffer]);
        else if (r.type !== "stored") finish(false, refusal.e);
        return;
      }
      try {
        switch (r.type) {
          case "data": {
            handlers.onChunk(Buffer.from(r.chunk.buffer, r.chunk.byteOffset, r.chunk.byteLength), r.stored);
            const back = r.chunk.buffer as ArrayBuffer; // the thread fills it again: no buffer is made per MiB on either side
            w.postMessage({ type: "ack", id, back } satisfies InflateControl, [back]);
            break;
          }
          case "stored":
            handlers.onStored(r.size, r.digest);
            break;
          case "stored-limit":
            handlers.onStoredLimit(r.stored);
            break;
          case "end":
            finish(true);
            break;
          case "error":
            finish(false, unwire(r.error));
            break;
          case "aborted":
            finish(false, new Error("the inflate thread gave up a job nobody refused"), false);
            break;
        }
      } catch (e) {
        if (r.type === "stored-limit")
          finish(false, e); // the thread already ended this job
        else refuse(e);
      }
    });
    w.on("error", (e) => finish(false, e, false));
    w.on("exit", (code) => finish(false, new Error(`the inflate thread exited (${code}) before the layer ended`), false));
    w.postMessage({
      type: "job",
      id,
      path: job.path,
      gzip: job.gzip,
      copyFd: job.copyFd,
      hashStored: job.hashStored,
      discard: job.discard === true,
      maxStored: job.maxStored,
      credit: CREDIT,
    } satisfies InflateControl);
  });
}

/**
 * The size and sha256 of the file at `path` (a descriptor the caller opened
 * and checked, named through /proc/self/fd), read and hashed on the thread,
 * stopping once more than `maxStored` bytes were read (`onLimit`, which must
 * throw). The caller compares both.
 */
export function hashOnThread(path: string, maxStored: number, onLimit: (stored: number) => never): Promise<{ size: number; digest: string }> {
  let got: { size: number; digest: string } | undefined;
  return inflateOnThread(
    { path, gzip: false, hashStored: true, discard: true, maxStored },
    {
      onChunk: () => undefined,
      onStored: (size, digest) => {
        got = { size, digest: digest ?? "" };
      },
      onStoredLimit: onLimit,
    },
  ).then(() => {
    if (got === undefined) throw new Error("the inflate thread ended a hash job without its digest");
    return got;
  });
}
