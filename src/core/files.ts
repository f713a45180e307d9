/**
 * Atomic, private file output. A file appears complete or not at all: bytes go
 * to a temporary sibling created exclusively, are fsynced, then renamed over
 * the target, and the directory is fsynced. Nothing here follows a symlink at
 * the temporary name (O_EXCL), and a failure removes the temporary file.
 */
import {
  closeSync,
  constants,
  fsyncSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  chmodSync,
  linkSync,
  readdirSync,
  unlinkSync,
} from "node:fs";
import { randomBytes } from "node:crypto";
import { dirname, basename, join, resolve } from "node:path";
import { CairnError, ioError } from "./errors.ts";

export interface WriteOptions {
  /** File mode; 0600 for private files. Default 0644. */
  mode?: number;
  /** Replace an existing file (default true). When false an existing target is an error. */
  overwrite?: boolean;
  /**
   * Fsync the file before its rename and the directory after (default true).
   * Off only for private per-run staging that is read back and dropped,
   * never published: the rename is atomic either way, and a crash leaves it
   * to the next writer's clean-up.
   */
  durable?: boolean;
}

/** Fsyncs a directory so a rename inside it is durable; a filesystem that refuses is tolerated. */
export function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some filesystems refuse fsync on directories; the rename is still atomic.
  }
}

export function tempSibling(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
}

/** A tempSibling name: the target's name, the writer's pid, 12 hex. */
const TEMP_SIBLING = /^\.(.+)\.([1-9][0-9]*)\.[0-9a-f]{12}\.tmp$/;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
}

/**
 * Removes the temporary siblings of `target` (tempSibling names) whose
 * writer is gone: a writer killed midway leaves its hidden sibling (a
 * layout, an archive being packed: possibly gigabytes), and the next writer
 * of the same name removes it. Only that exact name with a pid no process
 * has is touched; a live writer's sibling and any other file are kept.
 */
export function removeAbandonedSiblings(target: string): void {
  let names: string[];
  try {
    names = readdirSync(dirname(target));
  } catch {
    return;
  }
  for (const n of names) {
    const m = TEMP_SIBLING.exec(n);
    if (m !== null && m[1] === basename(target) && !alive(Number(m[2]))) rmSync(join(dirname(target), n), { recursive: true, force: true });
  }
}

/** Writes `data` to `path` atomically with the given mode. */
export function writeFileAtomic(path: string, data: string | Uint8Array, options: WriteOptions = {}): void {
  const mode = options.mode ?? 0o644;
  const overwrite = options.overwrite ?? true;
  const tmp = tempSibling(path);
  let fd: number | undefined;
  try {
    fd = createExclusive(tmp, mode);
    writeFully(fd, typeof data === "string" ? Buffer.from(data, "utf8") : data);
    chmodSync(tmp, mode); // the umask must not widen or narrow what we promised
    if (options.durable !== false) fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    if (overwrite) {
      renameSync(tmp, path);
    } else {
      // link() fails with EEXIST instead of replacing, which rename() cannot do.
      try {
        linkSync(tmp, path);
      } catch (cause) {
        if ((cause as { code?: string }).code === "EEXIST") {
          throw new CairnError("IO_ERROR", `${path} already exists; refusing to overwrite`, {
            path,
            hint: "choose another output path or remove the existing file",
          });
        }
        throw cause;
      }
      unlinkSync(tmp);
    }
    if (options.durable !== false) fsyncDir(dirname(path));
  } catch (cause) {
    if (fd !== undefined) closeSync(fd);
    try {
      rmSync(tmp, { force: true });
    } catch {
      // no temporary file could exist there (its parent is not a directory, or not ours): the write's own error is the one to report
    }
    if (cause instanceof CairnError) throw cause;
    throw ioError(path, cause, "write");
  }
}

/**
 * `mkdir -p`: creates `dir` and every missing parent, one mkdir(2) at a
 * time, and returns the first directory it created (undefined when `dir`
 * existed), as `mkdirSync(dir, { recursive: true })` does. Not Node's
 * recursive mkdir: where mkdir(2) answers ENOENT for a path whose parent
 * exists (under /proc, e.g. `--oci /proc/self/x`), Node 20's retries the
 * parent forever at full CPU; here the ENOENT is the error. A component
 * that exists but is not a directory fails as mkdir(2) does (ENOTDIR).
 */
export function makeDirs(dir: string, mode = 0o777): string | undefined {
  const missing: string[] = [];
  for (let cur = resolve(dir); ; ) {
    try {
      statSync(cur);
      break; // exists (a non-directory makes the next mkdir fail with ENOTDIR)
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT") throw e;
    }
    missing.push(cur);
    const up = dirname(cur);
    if (up === cur) break;
    cur = up;
  }
  let first: string | undefined;
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d, { mode });
      first ??= d;
    } catch (e) {
      if ((e as { code?: string }).code !== "EEXIST") throw e; // made meanwhile by another writer
    }
  }
  return first;
}

/**
 * Creates `dir` (and parents) and makes `dir` owner-only (0700) when this
 * call created it. An existing directory keeps its mode: cairn never
 * chmods a directory it did not create (a `/tmp`-like 1777 directory given
 * as a location must stay 1777).
 */
export function mkdirPrivate(dir: string): void {
  try {
    const created = makeDirs(dir, 0o700);
    const st = statSync(dir);
    if (!st.isDirectory()) throw new CairnError("IO_ERROR", `${dir} is not a directory`, { path: dir });
    if (created !== undefined && (st.mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
  } catch (cause) {
    if (cause instanceof CairnError) throw cause;
    throw ioError(dir, cause, "create");
  }
}

/**
 * The one way cairn opens an existing file to read: never through a symlink
 * at `path` (O_NOFOLLOW: the link could point at a secret or a device) and
 * without blocking on a planted FIFO (O_NONBLOCK; no effect on regular
 * files). The caller fstat()s the descriptor before trusting what it is.
 */
export function openForRead(path: string): number {
  return openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
}

/**
 * Opens a directory for use as a descriptor: `follow` false adds O_NOFOLLOW,
 * so a symlink at `path` is refused (ELOOP) instead of followed. Used by
 * core/owned-root.ts to walk inside a root one component at a time.
 */
export function openDirectory(path: string, follow: boolean): number {
  return openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NONBLOCK | (follow ? 0 : constants.O_NOFOLLOW));
}

/**
 * The one way cairn creates a file: exclusively (O_EXCL, so an existing
 * file or a planted symlink at the name is never written through) with the
 * given mode. Used for temporary files that are renamed or linked into
 * place, and for lock files.
 */
export function createExclusive(path: string, mode: number): number {
  return openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
}

/**
 * Creates `dst` exclusively (0600, see createExclusive) and lets `produce`
 * write its bytes in order; the file is closed when `produce` returns, and
 * removed when it (or a write) throws, so a refused or failed copy leaves
 * nothing under the name. A non-CairnError becomes IO_ERROR naming `dst`.
 * Used for the private staged copies of large inputs (blobs, bundles).
 */
export function writeNewFile<T>(dst: string, produce: (write: (chunk: Uint8Array) => void) => T): T {
  let fd: number | undefined;
  try {
    fd = createExclusive(dst, 0o600);
    const out = fd;
    const result = produce((chunk) => writeFully(out, chunk));
    closeSync(fd);
    fd = undefined;
    return result;
  } catch (cause) {
    abandonNewFile(fd, dst, cause);
  }
}

/** `writeNewFile` for a `produce` that awaits between its writes (a guest image read from the store a MiB at a time). */
export async function writeNewFileAsync<T>(dst: string, produce: (write: (chunk: Uint8Array) => void) => Promise<T>): Promise<T> {
  let fd: number | undefined;
  try {
    fd = createExclusive(dst, 0o600);
    const out = fd;
    const result = await produce((chunk) => writeFully(out, chunk));
    closeSync(fd);
    fd = undefined;
    return result;
  } catch (cause) {
    abandonNewFile(fd, dst, cause);
  }
}

/** The failure path of writeNewFile and writeNewFileAsync: close the file, remove its name, and throw the cause (IO_ERROR naming `dst` unless it is already a CairnError). */
function abandonNewFile(fd: number | undefined, dst: string, cause: unknown): never {
  if (fd !== undefined) closeSync(fd);
  rmSync(dst, { force: true });
  if (cause instanceof CairnError) throw cause;
  throw ioError(dst, cause, "write");
}

/** Writes all of `data` at the file's current position (a short write is retried, never dropped). */
export function writeFully(fd: number, data: Uint8Array): void {
  let off = 0;
  while (off < data.length) off += writeSync(fd, data, off, data.length - off);
}

/** Writes all of `data` at `position` of an open file (a short write is retried, never dropped); the file position is not used. */
export function writeFullyAt(fd: number, data: Uint8Array, position: number): void {
  let off = 0;
  while (off < data.length) off += writeSync(fd, data, off, data.length - off, position + off);
}

/**
 * Fills `buf` from `position` of an open file. It returns how many bytes it
 * read, fewer only when the file ends first; whether that means the file
 * changed under the reader is the caller's decision.
 */
export function readFullyAt(fd: number, buf: Uint8Array, position: number): number {
  let off = 0;
  while (off < buf.length) {
    const n = readSync(fd, buf, off, buf.length - off, position + off);
    if (n === 0) break;
    off += n;
  }
  return off;
}

/** Reads up to `size` bytes from the start of an open file (fewer only at end of file). */
export function readPrefix(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size);
  const n = readFullyAt(fd, buf, 0);
  return n === size ? buf : buf.subarray(0, n);
}
