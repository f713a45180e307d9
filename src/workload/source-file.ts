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
import { dirname, resolve } from "node:path";
import { readFileBounded } from "../core/index.ts";
import { hostPathBeneath, resolveBeneath, specHostScope, withBeneath, type HostScope } from "../tree/index.ts";

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

/**
 * The host paths a spec's source names (`source.binary.path`,
 * `source.oci.layout`) are someone else's choice: each is resolved beneath
 * the spec's directory, or beneath the directory the user named with
 * --inputs-root, by the tree area's one resolver (tree/host-beneath.ts), and
 * refused as PATH_UNSAFE naming the field when it leads out (an absolute
 * path without the flag, `..` above the root, a symlink out, given or a
 * parent). Otherwise a spec from someone else could copy a private program
 * or image from anywhere on the host into the store and every bundle.
 */
export interface SourceScope {
  /** The spec's path: a relative locator starts from its directory. */
  readonly specPath: string;
  /** --inputs-root DIR: the wider directory the user named, absolute paths inside it allowed. */
  readonly hostRoot?: string | undefined;
}

function scopeOf(s: SourceScope): HostScope {
  return specHostScope(dirname(s.specPath), s.hostRoot);
}

/** Reads a binary workload's executable beneath the scope, opened from the root through descriptors (no symlink followed). */
export function readSpecExecutable(s: SourceScope, unsafePath: string, maxBytes: number, limitName: string): { bytes: Buffer; path: string } {
  const where = resolveBeneath(scopeOf(s), unsafePath, "/source/binary/path");
  if (where === undefined) {
    const path = resolve(dirname(s.specPath), unsafePath);
    return { bytes: readSourceFile(path, maxBytes, limitName), path };
  }
  return { bytes: withBeneath(where, (at) => readSourceFile(at, maxBytes, limitName)), path: where.shown };
}

/** An OCI workload's layout directory beneath the scope: its real path, with no symlink in it. */
export function specLayoutDir(s: SourceScope, unsafeLayout: string): string {
  return hostPathBeneath(scopeOf(s), unsafeLayout, "/source/oci/layout");
}

/** Refuses (PATH_UNSAFE naming the field) a spec whose source path leads out of the scope, before any other work reads it. */
export function checkSourcePaths(s: SourceScope, source: { kind: "binary"; path: string } | { kind: "oci"; layout: string; ref?: string | undefined }): void {
  if (source.kind === "binary") resolveBeneath(scopeOf(s), source.path, "/source/binary/path");
  else if (source.ref === undefined) specLayoutDir(s, source.layout);
}
