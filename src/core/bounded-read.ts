/**
 * The one bounded whole-file read. Every file cairn reads whole from a path a
 * user, an archive or a store gave it goes through `readFileBounded`, so the
 * rules below hold everywhere instead of in five copies that disagreed:
 *
 *  - opened with O_NOFOLLOW | O_NONBLOCK: a symlink at the path is refused
 *    (it could point anywhere, e.g. at a secret or at /dev/zero), and a
 *    planted FIFO cannot block the reader until a writer appears;
 *  - the open descriptor must be a regular file (fstat): not a directory,
 *    FIFO, socket or device;
 *  - its size is checked against a NAMED limit before a byte is read or a
 *    buffer allocated, so a hostile file cannot make the reader allocate
 *    without bound;
 *  - after reading, the bytes must be exactly the size fstat reported and
 *    nothing may follow: a file that grew or shrank while read is refused as
 *    changed, never silently truncated (bytes no one can reproduce);
 *  - optionally (`checkIdentity`) the file's identity (device, inode, size,
 *    mtime, ctime) must be the same before and after the read and at the path
 *    afterwards, so a file rewritten in place or renamed over mid-read is
 *    refused too.
 *
 * Each caller selects the error codes its refusals have always had (e.g.
 * SOURCE_NOT_REGULAR / SOURCE_OVERSIZED / SOURCE_CHANGED for a workload
 * source, REGISTRY_INVALID for a registry); the defaults are IO_ERROR and
 * LIMIT_EXCEEDED.
 */
import { closeSync, fstatSync, lstatSync, readSync, type Stats } from "node:fs";
import { Sha256Hasher, type Sha256Digest } from "./digest.ts";
import { CairnError, ioError, type ErrorCode } from "./errors.ts";
import { openForRead, readFullyAt, readPrefix } from "./files.ts";
import { hashOnThread } from "./inflate-thread.ts";
import { checkLimit } from "./limits.ts";

export interface BoundedReadOptions {
  /** Code when nothing is at the path (ENOENT). Default IO_ERROR. */
  readonly missing?: ErrorCode;
  /** Code when the path is a symlink, directory, FIFO, socket or device. Default IO_ERROR. */
  readonly notRegular?: ErrorCode;
  readonly notRegularHint?: string;
  /** Code when the file is over the limit. Default LIMIT_EXCEEDED (the message names the limit either way). */
  readonly oversized?: ErrorCode;
  /** Hint for the limit refusal; default: checkLimit's "raise it where the command allows". */
  readonly limitHint?: string;
  /** Code when the file changed while it was read (grew, shrank, replaced). Default IO_ERROR. */
  readonly changed?: ErrorCode;
  readonly changedHint?: string;
  /** The size the caller saw earlier (e.g. from lstat while walking a directory); another size counts as changed. */
  readonly expectedSize?: number;
  /** Also compare the file identity (dev, ino, size, mtime, ctime) before, after, and at the path. */
  readonly checkIdentity?: boolean;
  /**
   * The name messages and errors give the file when `path` is not the one
   * the user knows (a descriptor path, `/proc/self/fd/N/name`, through which
   * a file inside a held directory is opened without resolving the path
   * above it again).
   */
  readonly shownAs?: string;
}

let readHook: ((path: string) => void) | undefined;

/**
 * Sets (or clears) a function called after the bytes are read and before the
 * identity check, so a test can replace, touch or remove the file at that
 * point instead of hoping a concurrent writer lands there. Nothing in cairn
 * sets it; only tests/core/bounded-read.test.ts does. Not part of the public API.
 */
export function setBoundedReadHook(hook: ((path: string) => void) | undefined): void {
  readHook = hook;
}

function sameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}

/** What kind of file `st` (from lstat or fstat) describes, for messages: "a FIFO", "a symlink", ... */
export function fileKind(st: Stats): string {
  if (st.isFile()) return "a regular file";
  if (st.isDirectory()) return "a directory";
  if (st.isSymbolicLink()) return "a symlink";
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "an unknown file type";
}

/**
 * Returns the complete bytes of the regular file at `path`, at most `max`
 * bytes (limit named `limit`), under the rules above.
 */
export function readFileBounded(path: string, max: number, limit: string, options: BoundedReadOptions = {}): Buffer {
  return withBoundedFile(path, max, limit, options, (fd, size, changed) => {
    const buf = Buffer.alloc(size);
    if (readFullyAt(fd, buf, 0) !== size) throw changed(); // shrank under us
    return buf;
  });
}

/**
 * The same checks as `readFileBounded`, but the bytes are handed to `chunk`
 * in order, at most `chunkBytes` at a time, instead of returned whole: for
 * inputs whose limit is larger than what may be held in memory (a replay
 * bundle is copied to a private file this way). A file that changed while
 * read is refused after the chunks were handed over, so the caller must not
 * use what it got until this returns.
 */
export function streamFileBounded(
  path: string,
  max: number,
  limit: string,
  chunk: (bytes: Buffer) => void,
  options: BoundedReadOptions = {},
  chunkBytes = 1024 * 1024,
): number {
  return withBoundedFile(path, max, limit, options, (fd, size, changed) => {
    const buf = Buffer.allocUnsafe(Math.max(1, Math.min(size, chunkBytes)));
    for (let at = 0; at < size; ) {
      const n = Math.min(buf.length, size - at);
      if (readFullyAt(fd, buf.subarray(0, n), at) !== n) throw changed(); // shrank under us
      chunk(buf.subarray(0, n));
      at += n;
    }
    return size;
  });
}

/**
 * The sha256 and size of a file, under exactly readFileBounded's checks,
 * read in 1 MiB chunks: a large file is checked without being held.
 */
export function hashFileBounded(path: string, max: number, limit: string, options: BoundedReadOptions = {}): { digest: Sha256Digest; size: number } {
  return withBoundedFile(path, max, limit, options, (fd, size, changed) => {
    const h = new Sha256Hasher();
    const buf = Buffer.allocUnsafe(Math.min(size, 1 << 20));
    for (let at = 0; at < size; ) {
      const n = readFullyAt(fd, buf.subarray(0, Math.min(buf.length, size - at)), at);
      if (n === 0) throw changed(); // shrank under us
      h.update(buf.subarray(0, n));
      at += n;
    }
    return { digest: h.digest(), size };
  });
}

/** An open bounded file: its descriptor, what fstat saw, and the refusal for a change. */
interface OpenBounded {
  readonly fd: number;
  readonly before: Stats;
  readonly changed: () => CairnError;
}

/** Opens `path` as readFileBounded does (no-follow, non-blocking, a regular file, within the limit); closes it on a refusal. */
function openBounded(path: string, max: number, limit: string, options: BoundedReadOptions): OpenBounded {
  const shown = options.shownAs ?? path;
  const notRegular = (what: string): CairnError =>
    new CairnError(options.notRegular ?? "IO_ERROR", `${shown} is not a regular file (${what})`, { path: shown, hint: options.notRegularHint });
  const changed = (): CairnError =>
    new CairnError(options.changed ?? "IO_ERROR", `${shown} changed while it was read`, { path: shown, hint: options.changedHint });
  let fd: number;
  try {
    fd = openForRead(path);
  } catch (cause) {
    const errno = (cause as { code?: string }).code;
    // ELOOP: O_NOFOLLOW met a symlink at the final component. (A directory opens read-only; fstat refuses it below.)
    if (errno === "ELOOP") throw notRegular("a symlink");
    if (errno === "ENOENT" && options.missing !== undefined) throw new CairnError(options.missing, `${shown} does not exist`, { path: shown, cause });
    throw ioError(shown, cause);
  }
  try {
    const before = fstatSync(fd);
    if (!before.isFile()) throw notRegular(fileKind(before));
    if (options.expectedSize !== undefined && before.size !== options.expectedSize) throw changed();
    try {
      checkLimit(limit, before.size, max, shown, "bytes", options.limitHint);
    } catch (e) {
      if (options.oversized === undefined || !(e instanceof CairnError)) throw e;
      throw new CairnError(options.oversized, e.message, { path: shown, hint: e.hint, cause: e });
    }
    return { fd, before, changed };
  } catch (cause) {
    closeSync(fd);
    if (cause instanceof CairnError) throw cause;
    throw ioError(shown, cause);
  }
}

/** After the body read the file: nothing may follow its size, and (checkIdentity) it is the same file, also at the path. */
function endBounded(path: string, f: OpenBounded, options: BoundedReadOptions): void {
  if (readSync(f.fd, Buffer.alloc(1), 0, 1, f.before.size) !== 0) throw f.changed(); // grew under us
  readHook?.(path);
  if (options.checkIdentity === true) {
    const after = fstatSync(f.fd);
    let atPath: Stats;
    try {
      atPath = lstatSync(path);
    } catch {
      throw f.changed();
    }
    if (!sameFile(f.before, after) || !sameFile(f.before, atPath)) throw f.changed();
  }
}

/** Opens `path` as readFileBounded does, runs `body` over its descriptor and size, and checks the file did not change. */
function withBoundedFile<T>(
  path: string,
  max: number,
  limit: string,
  options: BoundedReadOptions,
  body: (fd: number, size: number, changed: () => CairnError) => T,
): T {
  const f = openBounded(path, max, limit, options);
  try {
    const out = body(f.fd, f.before.size, f.changed);
    endBounded(path, f, options);
    return out;
  } catch (cause) {
    if (cause instanceof CairnError) throw cause;
    throw ioError(options.shownAs ?? path, cause);
  } finally {
    closeSync(f.fd);
  }
}

/**
 * `hashFileBounded` with the reading and hashing on the inflate thread
 * (core/inflate-thread.ts), so the caller's thread is free meanwhile: the
 * file is opened and checked here, the thread reads it through the open
 * descriptor (/proc/self/fd, never the path again), and the size it read and
 * the end of the file are checked here afterwards, as the synchronous read
 * checks them.
 */
export async function hashFileBoundedOnThread(
  path: string,
  max: number,
  limit: string,
  options: BoundedReadOptions = {},
): Promise<{ digest: Sha256Digest; size: number }> {
  const f = openBounded(path, max, limit, options);
  try {
    const got = await hashOnThread(`/proc/self/fd/${f.fd}`, f.before.size, () => {
      throw f.changed(); // grew under us
    });
    if (got.size !== f.before.size) throw f.changed(); // shrank under us
    endBounded(path, f, options);
    return { digest: `sha256:${got.digest}` as Sha256Digest, size: got.size };
  } catch (cause) {
    if (cause instanceof CairnError) throw cause;
    throw ioError(path, cause);
  } finally {
    closeSync(f.fd);
  }
}

/**
 * The first bytes (at most `maxBytes`) of the regular file at `path`, or
 * undefined when nothing readable is there (absent, a symlink, a directory,
 * a FIFO, a device). For probes that read file heads (os-release, ELF
 * headers) and treat "not there" as a fact, not an error; opened like every
 * other read (`openForRead`).
 */
export function readFilePrefix(path: string, maxBytes: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openForRead(path);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return undefined;
    return readPrefix(fd, Math.min(st.size, maxBytes));
  } finally {
    closeSync(fd);
  }
}
