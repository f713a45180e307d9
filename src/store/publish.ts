/**
 * Content-addressed publication: the one way cairn gives a file its final
 * name in the content store and in a layer registry. A complete file appears
 * atomically under its final name or not at all: the bytes go to a temporary
 * file first (created exclusively, never through a symlink), are fsynced
 * (when `durable`), and only then get the name, after which the directory is
 * fsynced. A crash at any point leaves at most the temporary file (in the
 * writer's private staging, or a hidden `.name.*.tmp` sibling that readers
 * skip), never a partial file under a published name.
 *
 * What a file already under the name means depends on what the name promises:
 *
 *  - a content address (the store: the name is the digest of the bytes) is
 *    published with rename(2). Concurrent writers of one name write the same
 *    bytes, so identical bytes replace identical bytes; a file that does not
 *    match its name is corrupt, and the caller decides beforehand whether to
 *    keep a present file or repair it (`Store.put(..., { checkExisting })`);
 *  - a write-once name (`writeOnce`: registry blobs and signed envelopes, whose
 *    digest a lockfile records) is published with link(2), which never
 *    replaces: an existing file with identical bytes is kept, and different
 *    bytes are refused with the caller's code (REGISTRY_INVALID), so a
 *    published envelope is never silently swapped for another.
 *
 * The bytes come from memory (`publishBytes`) or from a complete file the
 * caller wrote elsewhere (`publishFile`: a layer blob streamed to a private
 * file), which is copied and compared in 1 MiB chunks, so publishing a large
 * blob holds one chunk of it, never the whole.
 */
import { chmodSync, closeSync, fstatSync, fsyncSync, linkSync, lstatSync, renameSync, rmSync, unlinkSync } from "node:fs";
import { dirname } from "node:path";
import { CairnError, createExclusive, fsyncDir, ioError, openForRead, readFullyAt, tempSibling, writeFully, type ErrorCode } from "../core/index.ts";

/** How much of a file publishFile copies or compares at once. */
const COPY_CHUNK_BYTES = 1024 * 1024;

/**
 * The named points of publication, for fault injection in tests: `staged`
 * (the complete temporary file exists and is not yet named) and `named` (the
 * name is given, the directory not yet fsynced).
 */
export type PublishPoint = "staged" | "named";

let publishHook: ((point: PublishPoint, target: string) => void) | undefined;

/**
 * Sets (or clears) a function called at each publication point. Nothing in
 * cairn sets it and no environment variable does: only the crash tests' child
 * process (tests/workload/fixtures/assemble-child.ts) installs one, to stop at
 * a chosen point and be killed there, so a kill mid-publication is arranged
 * rather than hoped for. Not part of the public API.
 */
export function setPublishHook(hook: ((point: PublishPoint, target: string) => void) | undefined): void {
  publishHook = hook;
}

/** The refusal for different bytes under a write-once name. */
export interface WriteOnce {
  readonly code: ErrorCode;
  /** What is published, for the message (e.g. "layer python-3.12"). */
  readonly what: string;
  readonly hint: string;
}

export interface PublishOptions {
  /** fsync the file before it is named and the directory after (default true). */
  readonly durable?: boolean;
  /** The published file's mode (default 0600); the umask does not change it. */
  readonly mode?: number;
  /** Temporary path for `publishBytes` (e.g. in the writer's staging); default a hidden sibling of the target. */
  readonly tmp?: string;
  /** Publish once: never replace; keep identical bytes, refuse different ones. Default: a content address, replaced by rename. */
  readonly writeOnce?: WriteOnce;
}

/** What publication did: wrote the file, or kept identical bytes already there (write-once only). */
export type Published = "published" | "kept";

/** Publishes `data` under `target`. */
export function publishBytes(target: string, data: Uint8Array, options: PublishOptions = {}): Published {
  // Write-once: bytes already published are compared before anything is written (a blob can be large).
  if (options.writeOnce !== undefined && publishedIdentical(target, data, options.writeOnce)) return "kept";
  const tmp = options.tmp ?? tempSibling(target);
  const mode = options.mode ?? 0o600;
  let fd: number | undefined;
  try {
    fd = createExclusive(tmp, mode);
    writeFully(fd, data);
    chmodSync(tmp, mode);
    if (options.durable ?? true) fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    return name(tmp, target, options.durable ?? true, options.writeOnce === undefined ? undefined : bytesOnce(options.writeOnce, data));
  } catch (cause) {
    if (fd !== undefined) closeSync(fd);
    rmSync(tmp, { force: true });
    if (cause instanceof CairnError) throw cause;
    throw ioError(target, cause, "write");
  }
}

/**
 * Publishes a copy of the complete regular file at `source` (left where it
 * is; the caller removes it) under `target`, with publishBytes's rules; the
 * copy and a write-once comparison go in chunks. A source that changes size
 * while copied is refused (IO_ERROR).
 */
export function publishFile(target: string, source: string, options: Omit<PublishOptions, "tmp"> = {}): Published {
  let src: number | undefined;
  try {
    src = openForRead(source);
    const st = fstatSync(src);
    if (!st.isFile()) throw new CairnError("IO_ERROR", `${source} is not a regular file`, { path: source });
    const size = st.size;
    const from = src;
    const once = options.writeOnce === undefined ? undefined : fileOnce(options.writeOnce, from, size);
    if (once !== undefined && existingIdentical(target, once)) return "kept";
    const tmp = tempSibling(target);
    const mode = options.mode ?? 0o600;
    let fd: number | undefined;
    try {
      fd = createExclusive(tmp, mode);
      const buf = Buffer.allocUnsafe(Math.min(COPY_CHUNK_BYTES, Math.max(1, size)));
      for (let off = 0; off < size; ) {
        const n = readFullyAt(from, buf.subarray(0, Math.min(buf.length, size - off)), off);
        if (n === 0) throw new CairnError("IO_ERROR", `${source} shrank while it was copied`, { path: source });
        writeFully(fd, buf.subarray(0, n));
        off += n;
      }
      chmodSync(tmp, mode);
      if (options.durable ?? true) fsyncSync(fd);
      closeSync(fd);
      fd = undefined;
      return name(tmp, target, options.durable ?? true, once);
    } catch (cause) {
      if (fd !== undefined) closeSync(fd);
      rmSync(tmp, { force: true });
      throw cause;
    }
  } catch (cause) {
    if (cause instanceof CairnError) throw cause;
    throw ioError(target, cause, "write");
  } finally {
    if (src !== undefined) closeSync(src);
  }
}

/**
 * Publishes a complete file the caller staged (and already verified) under
 * `target` without copying it (large blobs). It must be a regular file of
 * `expectedSize` bytes (SIZE_MISMATCH otherwise); it is made `mode` and,
 * when durable, fsynced first. The staged file is gone afterwards, published
 * or not.
 */
export function publishStaged(staged: string, target: string, expectedSize: number, options: Omit<PublishOptions, "tmp" | "writeOnce"> = {}): Published {
  try {
    const fd = openForRead(staged);
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.size !== expectedSize) {
        throw new CairnError("SIZE_MISMATCH", `staged file for ${target} has ${st.size} bytes, expected ${expectedSize}`, { path: staged });
      }
      if (options.durable ?? true) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    chmodSync(staged, options.mode ?? 0o600);
    return name(staged, target, options.durable ?? true);
  } catch (cause) {
    rmSync(staged, { force: true });
    if (cause instanceof CairnError) throw cause;
    throw ioError(target, cause, "write");
  }
}

/** A write-once publication: the refusal, and how to tell whether a file already under the name holds the same bytes. */
interface Once {
  readonly writeOnce: WriteOnce;
  readonly size: number;
  /** Whether the open regular file `fd` (of `size` bytes) holds the bytes being published. */
  readonly sameAs: (fd: number) => boolean;
}

function bytesOnce(writeOnce: WriteOnce, data: Uint8Array): Once {
  return {
    writeOnce,
    size: data.length,
    sameAs: (fd) => {
      const buf = Buffer.allocUnsafe(data.length);
      return readFullyAt(fd, buf, 0) === data.length && buf.equals(data);
    },
  };
}

function fileOnce(writeOnce: WriteOnce, src: number, size: number): Once {
  return {
    writeOnce,
    size,
    sameAs: (fd) => {
      const a = Buffer.allocUnsafe(Math.min(COPY_CHUNK_BYTES, Math.max(1, size)));
      const b = Buffer.allocUnsafe(a.length);
      for (let off = 0; off < size; ) {
        const len = Math.min(a.length, size - off);
        const n = readFullyAt(src, a.subarray(0, len), off);
        if (n !== len || readFullyAt(fd, b.subarray(0, len), off) !== len || !a.subarray(0, len).equals(b.subarray(0, len))) return false;
        off += len;
      }
      return true;
    },
  };
}

/** Gives the complete temporary file `tmp` the name `target`: by rename, or write-once by link. */
function name(tmp: string, target: string, durable: boolean, once?: Once): Published {
  publishHook?.("staged", target);
  if (once === undefined) {
    renameSync(tmp, target);
    publishHook?.("named", target);
    if (durable) fsyncDir(dirname(target));
    return "published";
  }
  try {
    linkSync(tmp, target); // fails with EEXIST instead of replacing, which rename(2) cannot do
  } catch (cause) {
    if ((cause as { code?: string }).code !== "EEXIST") throw cause;
    // Published before, or a concurrent publisher won the race: accept only identical bytes.
    unlinkSync(tmp);
    keepIdentical(target, once);
    return "kept";
  }
  publishHook?.("named", target);
  unlinkSync(tmp);
  if (durable) fsyncDir(dirname(target));
  return "published";
}

/**
 * Checks a file already under a write-once name: identical bytes are kept,
 * anything else (other bytes, another size, not a regular file) is refused.
 * Returns false when nothing is there.
 */
export function publishedIdentical(target: string, data: Uint8Array, writeOnce: WriteOnce): boolean {
  return existingIdentical(target, bytesOnce(writeOnce, data));
}

function existingIdentical(target: string, once: Once): boolean {
  try {
    lstatSync(target);
  } catch (cause) {
    if ((cause as { code?: string }).code === "ENOENT") return false;
    throw ioError(target, cause);
  }
  keepIdentical(target, once);
  return true;
}

function keepIdentical(target: string, once: Once): void {
  const { writeOnce } = once;
  const refuse = (): never => {
    throw new CairnError(writeOnce.code, `${writeOnce.what} is already published with different content`, { path: target, hint: writeOnce.hint });
  };
  const st = lstatSync(target);
  if (!st.isFile() || st.size !== once.size) refuse();
  let fd: number;
  try {
    fd = openForRead(target); // O_NOFOLLOW: a symlink swapped in since the lstat is refused, not followed
  } catch {
    refuse();
    return;
  }
  try {
    const now = fstatSync(fd);
    if (!now.isFile() || now.size !== once.size || !once.sameAs(fd)) refuse();
  } finally {
    closeSync(fd);
  }
}
