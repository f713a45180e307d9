/**
 * Private staged copies of layer blobs, so no command holds a blob whole in
 * memory: `lock verify --contents`, `layer fold` and `lock export` copy each
 * registry blob into a private directory (0700, created by cairn under the
 * temporary directory, removed when the command ends), one 1 MiB chunk at a
 * time, checking its size and sha256 as it is copied; the layer is then read
 * from that copy. What is decompressed is therefore the copy that was
 * verified, never the registry's file a second time (another writer could
 * change it between the check and the read), and nothing is decompressed
 * before the whole blob has matched its digest.
 *
 * A command killed before it removed its directory (SIGKILL, power loss)
 * leaves it behind; the next command to stage blobs removes such leftovers:
 * directories named `cairn-blobs-<host tag>-<pid>-*`, owned by this user,
 * real directories (never a symlink), whose pid is gone on this host.
 * Anything else in the temporary directory is left alone.
 *
 * Refusals keep the codes a whole read gave: a file of another size is
 * SIZE_MISMATCH (larger: another layer's blob put in its place is a
 * mismatch, not a limit), other bytes DIGEST_MISMATCH, a symlink, FIFO or
 * device where the blob should be REGISTRY_INVALID.
 */
import { closeSync, fstatSync, lstatSync, mkdtempSync, readdirSync, readSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hostTag, processAlive } from "../store/index.ts";
import { CairnError, ioError, openForRead, readFullyAt, Sha256Hasher, writeNewFile, type Sha256Digest } from "../core/index.ts";

/** How much of a blob a copy or hash holds at once. */
export const STAGE_CHUNK_BYTES = 1024 * 1024;

const PREFIX = "cairn-blobs-";
const LEFTOVER = /^cairn-blobs-([0-9a-f]{8})-([1-9][0-9]{0,9})-[A-Za-z0-9]{6}$/;

/** Removes staging directories of dead cairn processes of this user on this host from `parent`; returns how many. */
export function sweepLeftovers(parent: string): number {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return 0; // an unreadable temporary directory holds nothing we can clean; mkdtemp reports it
  }
  const uid = process.getuid?.();
  let removed = 0;
  for (const name of names) {
    const m = LEFTOVER.exec(name);
    if (m === null || m[1] !== hostTag() || processAlive(Number(m[2]))) continue;
    const path = join(parent, name);
    try {
      const st = lstatSync(path);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      rmSync(path, { recursive: true, force: true });
      removed++;
    } catch {
      // gone already, or not ours to remove
    }
  }
  return removed;
}

/** A blob's expected size and digest (from its manifest or lockfile), and a name for messages. */
export interface ExpectedBlob {
  readonly sha256: Sha256Digest;
  readonly size: number;
}

/** A private directory for one command's staged blobs; `dispose` removes it and everything in it. */
export class BlobStaging {
  #n = 0;
  private constructor(readonly dir: string) {}

  /**
   * Creates a fresh private directory (mkdtemp: 0700, a name nobody else
   * holds) under `parent` (default the OS temporary directory), after
   * removing what killed commands left there (see the module comment).
   */
  static create(parent: string = tmpdir()): BlobStaging {
    sweepLeftovers(parent);
    try {
      return new BlobStaging(mkdtempSync(join(parent, `${PREFIX}${hostTag()}-${process.pid}-`)));
    } catch (cause) {
      throw ioError(parent, cause, "create");
    }
  }

  /** A fresh path inside the directory (nothing is created). */
  path(what: string): string {
    this.#n++;
    return join(this.dir, `${this.#n}-${what.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 80)}`);
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Runs `f` with a fresh staging directory and removes it afterwards, whatever happens. */
export async function withBlobStaging<T>(f: (s: BlobStaging) => Promise<T>, parent?: string): Promise<T> {
  const s = BlobStaging.create(parent);
  try {
    return await f(s);
  } finally {
    s.dispose();
  }
}

function openBlob(path: string, where: string): number {
  try {
    return openForRead(path);
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    if (code === "ELOOP") throw new CairnError("REGISTRY_INVALID", `${where} is a symlink, not a blob file`, { path: where });
    if (code === "ENOENT") throw new CairnError("STORE_MISSING", `${where} does not exist`, { path: where });
    throw ioError(path, cause);
  }
}

/**
 * Reads the blob at `path` in chunks, giving each to `each` (when set), and
 * checks it is a regular file of exactly `expected.size` bytes hashing to
 * `expected.sha256`.
 */
function streamChecked(path: string, expected: ExpectedBlob, where: string, each?: (chunk: Buffer) => void): void {
  const fd = openBlob(path, where);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new CairnError("REGISTRY_INVALID", `${where} is not a regular file`, { path: where });
    if (st.size !== expected.size)
      throw new CairnError("SIZE_MISMATCH", `blob ${expected.sha256} is ${st.size} bytes, its manifest names ${expected.size}`, {
        path: where,
        hint: "the registry copy was altered or damaged",
      });
    const h = new Sha256Hasher();
    const buf = Buffer.allocUnsafe(Math.min(STAGE_CHUNK_BYTES, Math.max(1, expected.size)));
    for (let off = 0; off < expected.size; ) {
      const n = readFullyAt(fd, buf.subarray(0, Math.min(buf.length, expected.size - off)), off);
      if (n === 0) throw new CairnError("SIZE_MISMATCH", `blob ${expected.sha256} shrank while it was read`, { path: where });
      h.update(buf.subarray(0, n));
      each?.(buf.subarray(0, n));
      off += n;
    }
    if (readSync(fd, Buffer.alloc(1), 0, 1, expected.size) !== 0)
      throw new CairnError("SIZE_MISMATCH", `blob ${expected.sha256} grew while it was read`, { path: where });
    const found = h.digest();
    if (found !== expected.sha256)
      throw new CairnError("DIGEST_MISMATCH", `blob ${expected.sha256} does not match its digest: its bytes hash to ${found}`, {
        path: where,
        hint: "the registry copy was altered or damaged",
      });
  } catch (cause) {
    if (cause instanceof CairnError) throw cause;
    throw ioError(path, cause);
  } finally {
    closeSync(fd);
  }
}

/** The bytes of a staged file (opened like every read: no symlink, no FIFO), a fresh 1 MiB buffer at a time. */
export function* fileChunks(path: string): Generator<Buffer> {
  const fd = openBlob(path, path);
  try {
    if (!fstatSync(fd).isFile()) throw new CairnError("REGISTRY_INVALID", `${path} is not a regular file`, { path });
    for (let off = 0; ; ) {
      const buf = Buffer.allocUnsafe(STAGE_CHUNK_BYTES);
      const n = readFullyAt(fd, buf, off);
      if (n === 0) return;
      off += n;
      yield buf.subarray(0, n);
    }
  } finally {
    closeSync(fd);
  }
}

/** Checks the blob at `path` against `expected` without keeping or copying it (lock verify, resolve --sign). */
export function checkBlobFile(path: string, expected: ExpectedBlob, where: string): void {
  streamChecked(path, expected, where);
}

/**
 * Copies the blob at `src` to `dst` (created exclusively, 0600), checking
 * size and digest as it is copied; `dst` is removed unless the copy matched.
 */
export function copyVerified(src: string, dst: string, expected: ExpectedBlob, where: string): string {
  writeNewFile(dst, (write) => streamChecked(src, expected, where, write));
  return dst;
}
