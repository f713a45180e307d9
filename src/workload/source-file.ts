/**
 * Reads one source file (the executable of a binary workload) into memory,
 * bounded and race-checked. The path is a locator chosen by the user; what it
 * points at is hostile until read:
 *  - opened with O_NOFOLLOW|O_NONBLOCK, so a symlink is refused and a FIFO
 *    cannot block the reader (SOURCE_NOT_REGULAR);
 *  - the open descriptor must be a regular file (fstat), not a device;
 *  - its size is checked against a named limit before reading (SOURCE_OVERSIZED);
 *  - the bytes read must equal the size, nothing may follow, and the file's
 *    identity (device, inode, size, mtime, ctime) must be the same before and
 *    after and at the path afterwards, else SOURCE_CHANGED: a file rewritten
 *    or replaced mid-read would otherwise give bytes no one can reproduce.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, type Stats } from "node:fs";
import { CairnError, checkLimit, ioError } from "../core/index.ts";

function sameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}

function changed(path: string): never {
  throw new CairnError("SOURCE_CHANGED", `${path} changed while it was being read`, {
    path,
    hint: "assemble again once nothing is writing the file",
  });
}

/** Returns the complete bytes of the regular file at `path`, at most `maxBytes` (limit `limitName`). */
export function readSourceFile(path: string, maxBytes: number, limitName: string): Buffer {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    if (code === "ELOOP" || code === "EISDIR") {
      throw new CairnError("SOURCE_NOT_REGULAR", `${path} is not a regular file (${code === "ELOOP" ? "a symlink" : "a directory"})`, {
        path,
        hint: "point the spec at the executable itself, not at a link to it",
      });
    }
    throw ioError(path, cause);
  }
  try {
    const before = fstatSync(fd);
    if (!before.isFile()) {
      throw new CairnError("SOURCE_NOT_REGULAR", `${path} is not a regular file`, { path, hint: "point the spec at a regular file" });
    }
    try {
      checkLimit(limitName, before.size, maxBytes, path, "bytes");
    } catch (e) {
      const le = e as CairnError;
      throw new CairnError("SOURCE_OVERSIZED", le.message, { path, hint: le.hint, cause: e });
    }
    const buf = Buffer.alloc(before.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n === 0) changed(path); // shrank under us
      off += n;
    }
    if (readSync(fd, Buffer.alloc(1), 0, 1, off) !== 0) changed(path); // grew under us
    const after = fstatSync(fd);
    let atPath: Stats;
    try {
      atPath = lstatSync(path);
    } catch {
      changed(path);
    }
    if (!sameFile(before, after) || !sameFile(before, atPath)) changed(path);
    return buf;
  } finally {
    closeSync(fd);
  }
}
