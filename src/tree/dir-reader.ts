/**
 * The one reader of a directory on this machine into tree entries: strata
 * builds layer blobs from it (`cairn layer build`), manifest hashes local
 * devcontainer features with it (`--features-dir`). It never follows a
 * symlink and never trusts the directory to hold still: each file is read by
 * core's bounded reader (O_NOFOLLOW | O_NONBLOCK, a regular file of the size
 * the walk saw, refused when it grows or shrinks while read). Sockets, FIFOs
 * and devices are refused (they have no place in a layer or a feature).
 * `readDirectoryStreamed` walks the same way but leaves each file's bytes to
 * be read when they are written (1 MiB at a time, with the same checks), so
 * a layer build does not hold the directory in memory.
 * Names must be valid UTF-8 so the sorted byte order is defined.
 *
 * Two policies differ by caller, both named here rather than copied:
 *  - symlinks "record" (layers): a link is content, its target kept as written;
 *    "inside" (features): a link whose target is absolute or climbs above the
 *    root is refused (PATH_UNSAFE), since the bytes it reaches are outside the
 *    directory the digest covers.
 *  - every limit carries the name its caller documents (`layer.max_entries`,
 *    `features_dir.max_entries`, …), so an error names the limit the user can find.
 */
import { closeSync, fstatSync, lstatSync, readdirSync, readlinkSync, readSync, type Stats } from "node:fs";
import { join } from "node:path";
import {
  CairnError,
  checkLimit,
  descriptorPath,
  FIXED_LIMIT_HINT,
  decodeUtf8,
  ioError,
  openDirectory,
  openForRead,
  readFileBounded,
  readFullyAt,
  sha256,
  sortByBytes,
} from "../core/index.ts";
import type { CanonicalTree, FsEntry } from "./entries.ts";
import { bytesContent, type FileContent, type TarEntry, type TarStreamEntry } from "./tar-writer.ts";
import { TreeModel } from "./tree-builder.ts";

export interface DirLimitNames {
  readonly entries: string;
  readonly fileBytes: string;
  readonly totalBytes: string;
}

export interface DirLimits {
  /** layer.max_entries */
  readonly maxEntries: number;
  /** layer.max_file_bytes */
  readonly maxFileBytes: number;
  /** layer.max_total_bytes */
  readonly maxTotalBytes: number;
  /** The names errors give these limits; the layer names when absent. */
  readonly names?: DirLimitNames;
}

export const LAYER_DIR_LIMIT_NAMES: DirLimitNames = {
  entries: "layer.max_entries",
  fileBytes: "layer.max_file_bytes",
  totalBytes: "layer.max_total_bytes",
};

export const DEFAULT_DIR_LIMITS: DirLimits = {
  maxEntries: 200_000,
  maxFileBytes: 2 * 1024 * 1024 * 1024,
  maxTotalBytes: 8 * 1024 * 1024 * 1024,
};

export interface DirReadPolicy {
  /** "record" (default): links kept as written; "inside": a link leaving the root is refused. */
  readonly symlinks?: "record" | "inside";
  /**
   * "refuse" (default): a device is refused like any special file.
   * "overlayfs": the directory is an overlayfs upper directory; its deletions
   * become OCI whiteout markers (see readDirectory).
   */
  readonly whiteouts?: "refuse" | "overlayfs";
  /**
   * With "overlayfs": reads the `trusted.overlay.*` and `user.overlay.*`
   * attributes of the given paths (by index). Supplied by the caller: the tree
   * area never runs a process (claim O17), and Node has no getxattr.
   */
  readonly overlayXattrs?: OverlayXattrReader;
  /**
   * The name messages give the root when `root` is a descriptor path
   * (`/proc/self/fd/N/name`, a directory opened inside a held one): the
   * path the user knows. Default: `root`.
   */
  readonly shownAs?: string;
}

export type OverlayXattrReader = (paths: readonly string[]) => Map<number, Map<string, Buffer>>;

/** The OCI marker that empties a directory of what lower layers put there. */
export const OPAQUE_MARKER = ".wh..wh..opq";
/** Overlay attributes that mean the upper entry is not complete on its own (data or name in a lower layer): refused. */
const INCOMPLETE_UPPER = ["redirect", "metacopy", "whiteout", "whiteouts"];

const SOURCE_DIR_HINT = "read a directory nothing else is writing to";

/**
 * One file of the walk, by core's bounded reader: lstat said it is a regular
 * file of `expectedSize` bytes; anything else at open (a symlink or FIFO
 * swapped in, another size) or a file that grows or shrinks while read is
 * SOURCE_CHANGED.
 */
function readRegular(at: string, shown: string, expectedSize: number, maxFileBytes: number, limitName: string): Buffer {
  return readFileBounded(at, maxFileBytes, limitName, {
    shownAs: shown,
    expectedSize,
    notRegular: "SOURCE_CHANGED",
    changed: "SOURCE_CHANGED",
    notRegularHint: SOURCE_DIR_HINT,
    changedHint: SOURCE_DIR_HINT,
    limitHint: FIXED_LIMIT_HINT,
  });
}

/** How much of a file a streamed read holds at once. */
const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * One file of the walk, read only when its bytes are written (a streamed
 * layer build): opened like the bounded reader (O_NOFOLLOW | O_NONBLOCK), it
 * must still be a regular file of `expectedSize` bytes and must not grow or
 * shrink while read (SOURCE_CHANGED); each chunk is a fresh buffer, so a
 * consumer may keep it.
 */
export function streamedRegular(abs: string, expectedSize: number): FileContent {
  const changed = (): CairnError => new CairnError("SOURCE_CHANGED", `${abs} changed while it was read`, { path: abs, hint: SOURCE_DIR_HINT });
  return {
    size: expectedSize,
    *chunks() {
      let fd: number;
      try {
        fd = openForRead(abs);
      } catch (cause) {
        if ((cause as { code?: string }).code === "ELOOP" || (cause as { code?: string }).code === "ENOENT") throw changed();
        throw ioError(abs, cause);
      }
      try {
        const st = fstatSync(fd);
        if (!st.isFile() || st.size !== expectedSize) throw changed();
        for (let off = 0; off < expectedSize; ) {
          const buf = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, expectedSize - off));
          if (readFullyAt(fd, buf, off) !== buf.length) throw changed(); // shrank under us
          off += buf.length;
          yield buf;
        }
        if (readSync(fd, Buffer.alloc(1), 0, 1, expectedSize) !== 0) throw changed(); // grew under us
      } finally {
        closeSync(fd);
      }
    },
  };
}

/**
 * True when the link at `rel` (relative to a root, `a/b/link`) reaches
 * outside that root: its target is absolute, or climbs above the root once
 * joined to the link's parent. Decided on the strings alone, never by
 * following; `..` is counted, not normalized away (path.join clamps `/..` to
 * `/`, which would hide the climb).
 */
export function linkLeavesRoot(rel: string, target: string): boolean {
  let depth = rel.split("/").length - 1;
  let escapes = target.startsWith("/");
  for (const part of target.split("/")) {
    if (part === "..") depth--;
    else if (part !== "" && part !== ".") depth++;
    if (depth < 0) escapes = true;
  }
  return escapes;
}

/**
 * Refuses a link that leaves the root it was found in: an absolute target, or
 * a relative one that climbs above the root once joined to the link's parent.
 * Decided on the strings alone, never by following; `..` is counted, not
 * normalized away (path.join clamps `/..` to `/`, which would hide the climb).
 */
function checkInside(abs: string, rel: string, target: string): void {
  if (linkLeavesRoot(rel, target)) {
    throw new CairnError("PATH_UNSAFE", `${abs} is a symlink that leaves the directory (its target is absolute or climbs above it)`, {
      path: abs,
      hint: "the digest covers only the directory's own bytes; replace the link by the file it points to, or point it inside the directory",
    });
  }
}

/**
 * Every entry under `root`, with relative paths (`usr/bin/x`) prefixed by
 * `prefix` (a relative path, or "" for none). The order is irrelevant: the blob
 * builder and `entriesTree` sort.
 */
export function readDirectory(root: string, prefix = "", limits: DirLimits = DEFAULT_DIR_LIMITS, policy: DirReadPolicy = {}): TarEntry[] {
  const names = limits.names ?? LAYER_DIR_LIMIT_NAMES;
  return walkDirectory(root, prefix, limits, policy, (at, shown, size) => readRegular(at, shown, size, limits.maxFileBytes, names.fileBytes)).map((e) =>
    e.type === "file" ? { type: "file", path: e.path, mode: e.mode, data: e.content } : e,
  );
}

/**
 * The same walk and checks as `readDirectory`, but a file's bytes are not
 * read here: each file entry's content reads them (in 1 MiB chunks) when it
 * is written, so a layer build holds one chunk of a file at a time.
 */
export function readDirectoryStreamed(root: string, prefix = "", limits: DirLimits = DEFAULT_DIR_LIMITS, policy: DirReadPolicy = {}): TarStreamEntry[] {
  const names = limits.names ?? LAYER_DIR_LIMIT_NAMES;
  // read later, by the path (the walk's descriptors are closed by then); streamedRegular's own checks hold at that read
  return walkDirectory(root, prefix, limits, policy, (_at, shown, size) => {
    checkLimit(names.fileBytes, size, limits.maxFileBytes, shown, "bytes", FIXED_LIMIT_HINT);
    return streamedRegular(shown, size);
  }).map((e) =>
    e.type === "file"
      ? { type: "file", path: e.path, mode: e.mode, content: e.content instanceof Buffer ? bytesContent(e.content) : (e.content as FileContent) }
      : e,
  );
}

type WalkEntry<C> =
  | Exclude<TarEntry, { readonly type: "file" }>
  | { readonly type: "file"; readonly path: string; readonly mode: number; readonly content: C | Buffer };

function walkDirectory<C>(
  root: string,
  prefix: string,
  limits: DirLimits,
  policy: DirReadPolicy,
  file: (at: string, shown: string, size: number) => C,
): WalkEntry<C>[] {
  const names = limits.names ?? LAYER_DIR_LIMIT_NAMES;
  const shownRoot = policy.shownAs ?? root;
  let st: Stats;
  try {
    st = lstatSync(root);
  } catch (cause) {
    throw ioError(shownRoot, cause);
  }
  if (!st.isDirectory()) throw new CairnError("SOURCE_NOT_REGULAR", `${shownRoot} is not a directory`, { path: shownRoot });
  const out: WalkEntry<C>[] = [];
  if (prefix !== "") {
    const parts = prefix.split("/");
    for (let i = 1; i <= parts.length; i++) out.push({ type: "dir", path: parts.slice(0, i).join("/"), mode: 0o755 });
  }
  let total = 0;
  const changed = (shown: string, cause?: unknown): CairnError =>
    new CairnError("SOURCE_CHANGED", `${shown} changed while it was read`, { path: shown, hint: SOURCE_DIR_HINT, cause });
  // Each directory is opened with O_NOFOLLOW and walked through its descriptor (core's descriptorPath): a
  // directory swapped for a symlink between its lstat and its listing is refused, never followed out.
  const walk = (at: string, shown: string, rel: string, relInRoot: string): void => {
    let fd: number;
    try {
      fd = openDirectory(at, false);
    } catch (cause) {
      const code = (cause as { code?: string }).code;
      if (code === "ELOOP" || code === "ENOTDIR" || code === "ENOENT") throw changed(shown, cause);
      throw ioError(shown, cause);
    }
    try {
      const dir = descriptorPath(fd);
      let entries: Buffer[];
      try {
        entries = readdirSync(dir, { encoding: "buffer" });
      } catch (cause) {
        throw ioError(shown, cause);
      }
      for (const raw of entries) {
        const name = decodeUtf8(raw, join(shown, raw.toString("latin1")));
        const childAt = `${dir}/${name}`;
        const childAbs = join(shown, name);
        const childRel = rel === "" ? name : `${rel}/${name}`;
        const childInRoot = relInRoot === "" ? name : `${relInRoot}/${name}`;
        // Layer blobs are read back through the OCI tar gate (fold, lock verify's content check), where
        // `.wh.<name>` deletes <name> from lower layers: such a file would be built as content and read
        // back as a deletion, so the blob would mean two things. Refused at read time instead.
        if (name.startsWith(".wh.")) {
          throw new CairnError("TAR_WHITEOUT", `${childAbs} is named like an OCI whiteout (.wh.*); a layer read back would treat it as a deletion`, {
            path: childAbs,
            hint: "rename the file; names starting with .wh. are reserved by the OCI layer format",
          });
        }
        checkLimit(names.entries, out.length + 1, limits.maxEntries, childAbs, "count", FIXED_LIMIT_HINT);
        let cst: Stats;
        try {
          cst = lstatSync(childAt);
        } catch (cause) {
          throw changed(childAbs, cause); // listed, then gone
        }
        if (cst.isSymbolicLink()) {
          let target: string;
          try {
            target = decodeUtf8(readlinkSync(childAt, { encoding: "buffer" }), childAbs);
          } catch (cause) {
            if (cause instanceof CairnError) throw cause;
            throw changed(childAbs, cause);
          }
          if (policy.symlinks === "inside") checkInside(childAbs, childInRoot, target);
          out.push({ type: "symlink", path: childRel, target });
        } else if (cst.isDirectory()) {
          out.push({ type: "dir", path: childRel, mode: cst.mode & 0o7777 });
          walk(childAt, childAbs, childRel, childInRoot);
        } else if (cst.isFile()) {
          total += cst.size;
          checkLimit(names.totalBytes, total, limits.maxTotalBytes, childAbs, "bytes", FIXED_LIMIT_HINT);
          out.push({ type: "file", path: childRel, mode: cst.mode & 0o7777, content: file(childAt, childAbs, cst.size) });
        } else if (policy.whiteouts === "overlayfs" && cst.isCharacterDevice() && cst.rdev === 0) {
          // overlayfs records a deletion as a 0:0 character device; the OCI layer format as an empty `.wh.<name>`.
          const marker = rel === "" ? `.wh.${name}` : `${rel}/.wh.${name}`;
          out.push({ type: "file", path: marker, mode: 0o644, content: Buffer.alloc(0) });
        } else {
          throw new CairnError("SOURCE_NOT_REGULAR", `${childAbs} is a socket, FIFO or device; a layer holds only files, directories and symlinks`, {
            path: childAbs,
          });
        }
      }
    } finally {
      closeSync(fd);
    }
  };
  walk(root, shownRoot, prefix, "");
  if (policy.whiteouts === "overlayfs") {
    if (policy.overlayXattrs === undefined) throw new CairnError("INTERNAL", "reading an overlayfs upper directory needs an attribute reader", { path: root });
    out.push(...overlayMarkers(root, prefix, out, policy.overlayXattrs));
  }
  return out;
}

/**
 * The opaque markers of an overlayfs upper directory: a directory whose
 * `trusted.overlay.opaque` (or, for a userxattr overlay, `user.overlay.opaque`)
 * is `y` hid everything lower layers had there, which the OCI format says with
 * `<dir>/.wh..wh..opq`. An entry whose contents or name live in a lower layer
 * (redirect, metacopy, xattr whiteouts) cannot be frozen from the upper
 * directory alone and is refused, naming it.
 */
function overlayMarkers<C>(root: string, prefix: string, entries: readonly WalkEntry<C>[], overlayXattrs: OverlayXattrReader): WalkEntry<C>[] {
  const strip = prefix === "" ? 0 : prefix.length + 1;
  // A marker this walk made is an empty Buffer; a real file's content is the caller's (never a Buffer when streamed).
  const isMarker = (e: WalkEntry<C>): boolean =>
    e.type === "file" && e.content instanceof Buffer && e.content.length === 0 && e.path.split("/").pop()!.startsWith(".wh.");
  const candidates = entries.filter((e) => e.type !== "symlink" && !isMarker(e));
  const real = candidates.filter((e) => e.path.length >= strip);
  const abs = real.map((e) => join(root, e.path.slice(strip)));
  const attrs = overlayXattrs([root, ...abs]);
  const out: WalkEntry<C>[] = [];
  const check = (a: Map<string, Buffer> | undefined, at: string, rel: string, isDir: boolean): void => {
    for (const [name, value] of a ?? []) {
      const key = name.replace(/^(trusted|user)\.overlay\./, "");
      if (INCOMPLETE_UPPER.includes(key) || (key === "opaque" && value.toString("latin1") !== "y")) {
        throw new CairnError("LAYER_INVALID", `${at} carries ${name}: part of it lives in a lower layer, so the upper directory alone cannot be frozen`, {
          path: at,
          hint: "copy the entry up fully (or mount the overlay without redirect_dir/metacopy) before freezing",
        });
      }
      if (key === "opaque" && isDir)
        out.push({ type: "file", path: rel === "" ? OPAQUE_MARKER : `${rel}/${OPAQUE_MARKER}`, mode: 0o644, content: Buffer.alloc(0) });
    }
  };
  check(attrs.get(0), root, prefix, true);
  for (const [i, e] of real.entries()) check(attrs.get(i + 1), abs[i]!, e.path, e.type === "dir");
  return out;
}

/**
 * The one mode normalization of entries read from a host directory, so the
 * umask and the creating user leave no trace: directories 0755, files 0755
 * when any execute bit is set and 0644 otherwise (what git keeps), symlinks 0777.
 */
export function normalizeMode(type: TarEntry["type"], mode: number): number {
  if (type === "dir") return 0o755;
  if (type === "symlink") return 0o777;
  return (mode & 0o111) !== 0 ? 0o755 : 0o644;
}

/**
 * Entries read from a directory as a canonical tree, with the host's traces
 * removed: owner 0:0, mtime 0, modes by `normalizeMode`. Its `cairn.fs/1`
 * digest is therefore the same for the same names, bytes, executable bits and
 * link targets on every host (a fresh git checkout gives the same tree).
 */
export function entriesTree(entries: readonly TarEntry[]): CanonicalTree {
  const model = new TreeModel();
  // Sorted by path bytes, a parent comes before its children.
  for (const e of sortByBytes([...entries], (x) => x.path)) {
    const path = `/${e.path}`;
    const base = { path, uid: 0, gid: 0, mtime: 0, mode: normalizeMode(e.type, e.type === "symlink" ? 0o777 : e.mode) };
    const entry: FsEntry =
      e.type === "file"
        ? { ...base, type: "file", size: e.data.length, sha256: sha256(e.data) }
        : e.type === "symlink"
          ? { ...base, type: "symlink", target: e.target }
          : { ...base, type: "dir" };
    model.set(entry);
  }
  return model.freeze();
}
