/**
 * Gunzip on another thread: `inflateOnThread` has a worker thread
 * (tree/inflate-worker.ts) read a stored gzip layer, hash it and its
 * uncompressed stream, and hand the uncompressed chunks back in order, each
 * to `onChunk` on this thread. The chunks are moved, not copied, where zlib
 * allows; at most CREDIT of them are in flight, so memory stays bounded
 * whatever the layer inflates to.
 *
 * What the thread reports is compared here, by the caller: the stored size
 * and digest, the DiffID, the limits (tree/layer-reader.ts). A refusal
 * thrown by `onChunk` gives the job up (the thread drops its streams, and
 * its late reports are told apart by the job's id); the thread is kept for
 * the next layer, idle without keeping the process alive. A thread that
 * failed itself is terminated.
 */
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { InflateControl, InflateReport, WireError } from "./inflate-worker.ts";

/** Chunks (of up to 1 MiB) the thread may be ahead of the gate. */
const CREDIT = 4;

export interface InflateJob {
  /** The stored layer file (a private staged copy, or an open file by /proc/self/fd). */
  readonly path: string;
  /** Hash the stored bytes too (the result's `storedDigest`). */
  readonly hashStored: boolean;
  /** Stop reading (`onStoredLimit`) once more stored bytes than this were read. */
  readonly maxStored: number;
}

export interface InflateHandlers {
  /** One uncompressed chunk, with the stored bytes read so far; may throw to refuse (the job stops). */
  readonly onChunk: (chunk: Buffer, stored: number) => void;
  /** The stored bytes ended (before the last uncompressed chunks may arrive); may throw to refuse. */
  readonly onStored: (size: number, digest: string | undefined) => void;
  /** More than `maxStored` stored bytes: must throw the limit's refusal. */
  readonly onStoredLimit: (stored: number) => never;
}

const here = fileURLToPath(import.meta.url);
const script = new URL(`./inflate-worker${extname(here)}`, import.meta.url);
let idle: Worker | undefined;
let jobs = 0;

/**
 * The compiled worker (dist/, what the CLI runs) starts as is. The sources
 * run only under tsx (tests, benches), whose loader a worker thread does not
 * inherit on Node 20: the thread registers it before importing the source.
 */
function start(): Worker {
  if (extname(here) !== ".ts") return new Worker(script);
  const api = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  return new Worker(`import(${api}).then((m) => m.register()).then(() => import(${JSON.stringify(script.href)}))`, { eval: true });
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

/** Runs one layer through the thread; resolves with the DiffID (hex) once every chunk reached `onChunk`. */
export function inflateOnThread(job: InflateJob, handlers: InflateHandlers): Promise<string> {
  const w = take();
  const id = ++jobs;
  return new Promise<string>((resolve, reject) => {
    let done = false;
    const finish = (ok: boolean, e?: unknown, diffId?: string, healthy = true): void => {
      if (done) return;
      done = true;
      if (!ok && healthy) w.postMessage({ type: "abort", id } satisfies InflateControl);
      retire(w, healthy);
      if (ok) resolve(diffId!);
      else reject(e);
    };
    w.on("message", (r: InflateReport) => {
      if (done || r.id !== id) return;
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
            finish(true, undefined, r.diffId);
            break;
          case "error":
            finish(false, unwire(r.error));
            break;
        }
      } catch (e) {
        finish(false, e);
      }
    });
    w.on("error", (e) => finish(false, e, undefined, false));
    w.on("exit", (code) => finish(false, new Error(`the inflate thread exited (${code}) before the layer ended`), undefined, false));
    w.postMessage({ type: "job", id, path: job.path, hashStored: job.hashStored, maxStored: job.maxStored, credit: CREDIT } satisfies InflateControl);
  });
}
