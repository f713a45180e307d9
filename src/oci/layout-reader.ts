/**
 * Bounded, no-follow reading of an OCI image layout directory.
 *
 * The layout directory is opened once; every later lookup goes through that
 * open descriptor (`/proc/self/fd/N/...`, Linux's openat), so renaming or
 * swapping the directory while cairn reads it cannot redirect a read. Each
 * level below it (`blobs`, `blobs/sha256`, the files) is checked with lstat
 * first (a symlink, FIFO or device is refused without being opened, so a
 * FIFO cannot block and a device cannot be touched), then opened with
 * O_NOFOLLOW and checked again with fstat against the lstat identity.
 *
 * Readers hand out open files; `readVerified` and `copyVerified` read exactly
 * the declared size, refuse a file that is longer, shorter or growing, and
 * check sha256 at the end. Nothing here parses or decompresses.
 */
import { constants, type Stats } from "node:fs";
import { lstat, open, rename, rm, type FileHandle } from "node:fs/promises";
import { existsSync } from "node:fs";
import { CairnError, Sha256Hasher, digestComponents, ioError, tempSibling, type Sha256Digest } from "../core/index.ts";

/** An open regular file and its size at open time. */
export interface OpenedFile {
  readonly handle: FileHandle;
  readonly size: number;
  /** Where it came from, for messages. */
  readonly locator: string;
}

/**
 * Where raw OCI objects come from: a layout directory on disk, or (for
 * `workload verify`) the content store's copies. Implementations must open
 * regular files only and never follow symlinks out of their root.
 */
export interface OciObjectReader {
  /** Opens `oci-layout` or `index.json`. */
  openTop(name: "oci-layout" | "index.json"): Promise<OpenedFile>;
  /** Opens the blob with this digest; OCI_MISSING_BLOB when absent. */
  openBlob(digest: Sha256Digest, path: string): Promise<OpenedFile>;
  close(): Promise<void>;
}

// libuv opens every file with O_CLOEXEC already.
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const DIR_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_DIRECTORY;

function kind(st: Stats): string {
  if (st.isSymbolicLink()) return "a symlink";
  if (st.isFIFO()) return "a FIFO";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  if (st.isSocket()) return "a socket";
  if (st.isDirectory()) return "a directory";
  return "a regular file";
}

/**
 * A function called between the lstat and the open of each layout file or
 * directory, for fault injection in tests. Nothing in cairn sets it and no
 * environment variable does: only tests/oci/layout-reader.test.ts installs
 * one, to swap a file at exactly that point, so the swap checks below are
 * arranged rather than raced. Not part of the public API.
 */
let swapHook: ((fullPath: string) => void) | undefined;

export function setLayoutOpenHook(hook: ((fullPath: string) => void) | undefined): void {
  swapHook = hook;
}

/** lstat-then-open-then-fstat: refuses the wrong type without opening it, and a swap between the two looks. */
async function openChecked(fullPath: string, locator: string, want: "file" | "dir", missing: () => CairnError): Promise<FileHandle> {
  let before: Stats;
  try {
    before = await lstat(fullPath);
  } catch (cause) {
    if ((cause as { code?: string }).code === "ENOENT") throw missing();
    throw ioError(locator, cause);
  }
  const ok = want === "file" ? before.isFile() : before.isDirectory();
  if (!ok) {
    throw new CairnError("SOURCE_NOT_REGULAR", `${locator} is ${kind(before)}, not ${want === "file" ? "a regular file" : "a directory"}`, {
      path: locator,
      hint: "an OCI layout must hold plain files and directories; symlinks, FIFOs and devices are refused",
    });
  }
  swapHook?.(fullPath);
  let handle: FileHandle;
  try {
    handle = await open(fullPath, want === "file" ? FILE_FLAGS : DIR_FLAGS);
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    if (code === "ELOOP" || code === "ENOTDIR") {
      throw new CairnError("SOURCE_CHANGED", `${locator} was replaced while being opened`, { path: locator, cause });
    }
    throw ioError(locator, cause);
  }
  const after = await handle.stat();
  if (after.ino !== before.ino || after.dev !== before.dev) {
    await handle.close();
    throw new CairnError("SOURCE_CHANGED", `${locator} was replaced while being opened`, { path: locator });
  }
  return handle;
}

function procPath(handle: FileHandle, name: string): string {
  return `/proc/self/fd/${handle.fd}/${name}`;
}

/** Opens the OCI layout at `layoutDir` (the one path cairn follows as given). */
export async function openLayoutDir(layoutDir: string): Promise<OciObjectReader> {
  if (!existsSync("/proc/self/fd")) {
    throw new CairnError("PREREQUISITE_MISSING", "reading an OCI layout needs Linux /proc (openat through /proc/self/fd)", {
      hint: "run cairn on Linux with /proc mounted",
    });
  }
  let root: FileHandle;
  try {
    root = await open(layoutDir, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new CairnError("OCI_INVALID", `${layoutDir} is not a directory`, {
        path: layoutDir,
        hint: "point the spec's oci.layout at an OCI image layout directory",
        cause,
      });
    }
    throw ioError(layoutDir, cause);
  }
  const handles: FileHandle[] = [root];
  let blobDir: FileHandle | undefined;
  const blobsDir = async (): Promise<FileHandle> => {
    if (blobDir) return blobDir;
    const missing = (): CairnError => new CairnError("OCI_MISSING_BLOB", `${layoutDir} has no blobs/sha256 directory`, { path: `${layoutDir}/blobs/sha256` });
    const blobs = await openChecked(procPath(root, "blobs"), `${layoutDir}/blobs`, "dir", missing);
    handles.push(blobs);
    blobDir = await openChecked(procPath(blobs, "sha256"), `${layoutDir}/blobs/sha256`, "dir", missing);
    handles.push(blobDir);
    return blobDir;
  };
  const opened = async (handle: FileHandle, locator: string): Promise<OpenedFile> => ({ handle, size: (await handle.stat()).size, locator });
  return {
    async openTop(name) {
      const locator = `${layoutDir}/${name}`;
      const h = await openChecked(
        procPath(root, name),
        locator,
        "file",
        () => new CairnError("OCI_INVALID", `${locator} is missing`, { path: locator, hint: "an OCI image layout has oci-layout and index.json at its top" }),
      );
      return opened(h, locator);
    },
    async openBlob(digest, path) {
      const [, hex] = digestComponents(digest, path); // the one validated way from a digest to a path component
      const locator = `${layoutDir}/blobs/sha256/${hex}`;
      const dir = await blobsDir();
      const h = await openChecked(
        procPath(dir, hex),
        locator,
        "file",
        () => new CairnError("OCI_MISSING_BLOB", `blob ${digest} is not in the layout`, { path, hint: `expected ${locator}` }),
      );
      return opened(h, locator);
    },
    async close() {
      await Promise.all(handles.splice(0).map((h) => h.close().catch(() => undefined)));
    },
  };
}

const CHUNK = 1024 * 1024;

/**
 * Reads exactly `expectedSize` bytes in 1 MiB chunks, hashing each and handing
 * it to `onChunk`. Two buffers alternate, so the next read (and its hash)
 * overlaps the previous chunk's `onChunk` (a write): a buffer is reused only
 * after the `onChunk` given it has settled.
 */
async function readExactly(file: OpenedFile, expectedSize: number, path: string, onChunk: (chunk: Uint8Array) => Promise<void> | void): Promise<Sha256Digest> {
  if (file.size !== expectedSize) {
    throw new CairnError("SIZE_MISMATCH", `${file.locator} has ${file.size} bytes, its descriptor says ${expectedSize}`, {
      path,
      hint: "the layout is corrupt or was modified",
    });
  }
  const hasher = new Sha256Hasher();
  const size = Math.min(CHUNK, Math.max(expectedSize, 1));
  const bufs = [Buffer.allocUnsafe(size), Buffer.allocUnsafe(size)];
  let pending: Promise<void> = Promise.resolve();
  let pos = 0;
  try {
    for (let i = 0; pos < expectedSize; i++) {
      const buf = bufs[i % 2]!;
      const { bytesRead } = await file.handle.read(buf, 0, Math.min(buf.length, expectedSize - pos), pos);
      if (bytesRead === 0) throw new CairnError("SOURCE_CHANGED", `${file.locator} shrank while being read`, { path });
      const chunk = buf.subarray(0, bytesRead);
      hasher.update(chunk);
      await pending;
      pending = Promise.resolve(onChunk(chunk));
      pending.catch(() => undefined); // handled: the next await (or the catch below) rethrows it
      pos += bytesRead;
    }
    await pending;
  } catch (e) {
    await pending.catch(() => undefined); // never leave a write running into a buffer or a file being removed
    throw e;
  }
  // One more read: a file that grew after fstat is refused rather than silently cut.
  const extra = await file.handle.read(bufs[0]!, 0, 1, pos);
  if (extra.bytesRead !== 0) throw new CairnError("SOURCE_CHANGED", `${file.locator} grew while being read`, { path });
  return hasher.digest();
}

function mismatch(file: OpenedFile, expected: Sha256Digest, actual: Sha256Digest, path: string): CairnError {
  return new CairnError("DIGEST_MISMATCH", `${file.locator} does not match its descriptor digest`, { path, hint: `expected ${expected}, computed ${actual}` });
}

/** Reads exactly `size` bytes and checks them against `digest` (when given). Closes the file. */
export async function readVerified(file: OpenedFile, size: number, digest: Sha256Digest | undefined, path: string): Promise<Buffer> {
  try {
    const out = Buffer.allocUnsafe(size);
    let at = 0;
    const actual = await readExactly(file, size, path, (c) => {
      out.set(c, at);
      at += c.length;
    });
    if (digest !== undefined && actual !== digest) throw mismatch(file, digest, actual, path);
    return out;
  } finally {
    await file.handle.close();
  }
}

/**
 * Streams exactly `size` bytes into `dest` (a new private 0600 file, written
 * to a temporary sibling and renamed only when the digest matched). Closes
 * the source file.
 *
 * The copy is not fsynced before it is named: it is private staging that
 * this process reads, and a crash leaves it to the next writer's clean-up
 * like any staging leftover. Durability is the store's: `Store.adopt`
 * fsyncs the file before it gets its store name.
 */
export async function copyVerified(file: OpenedFile, size: number, digest: Sha256Digest, dest: string, path: string): Promise<void> {
  const tmp = tempSibling(dest);
  let out: FileHandle | undefined;
  try {
    out = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    const w = out;
    let at = 0;
    const actual = await readExactly(file, size, path, async (c) => {
      const n = c.length;
      const where = at;
      at += n;
      for (let done = 0; done < n; ) done += (await w.write(c, done, n - done, where + done)).bytesWritten;
    });
    if (actual !== digest) throw mismatch(file, digest, actual, path);
    await out.chmod(0o600);
    await rename(tmp, dest);
    const done = out;
    out = undefined;
    await done.close();
  } catch (cause) {
    if (out) await out.close().catch(() => undefined);
    await rm(tmp, { force: true });
    if (cause instanceof CairnError) throw cause;
    throw ioError(dest, cause, "write");
  } finally {
    await file.handle.close().catch(() => undefined);
  }
}
