/**
 * Reads one source file (the executable of a binary workload, its spec, a
 * workload lock) into memory, bounded and race-checked. The path is a locator
 * chosen by the user; what it points at is hostile until read. The rules are
 * core's one bounded reader (`readFileBounded`), at its strictest:
 *  - a symlink, directory, FIFO or device is refused (SOURCE_NOT_REGULAR);
 *  - its size is checked against a named limit before reading (SOURCE_OVERSIZED);
 *  - the bytes read must equal the size, nothing may follow, and the file's
 *    identity (device, inode, size, mtime, ctime) must be the same before and
 *    after and at the path afterwards, else SOURCE_CHANGED: a file rewritten
 *    or replaced mid-read would otherwise give bytes no one can reproduce.
 */
import { readFileBounded } from "../core/index.ts";

/** Returns the complete bytes of the regular file at `path`, at most `maxBytes` (limit `limitName`). */
export function readSourceFile(path: string, maxBytes: number, limitName: string): Buffer {
  return readFileBounded(path, maxBytes, limitName, {
    notRegular: "SOURCE_NOT_REGULAR",
    notRegularHint: "point the spec at the file itself (a regular file), not at a link to it",
    oversized: "SOURCE_OVERSIZED",
    changed: "SOURCE_CHANGED",
    changedHint: "assemble again once nothing is writing the file",
    checkIdentity: true,
  });
}
