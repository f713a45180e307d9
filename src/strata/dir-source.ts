/**
 * Reads a build directory into tar entries, without following symlinks and
 * without trusting the directory to hold still: each file is read by core's
 * bounded reader (O_NOFOLLOW | O_NONBLOCK, a regular file of the size the
 * walk saw, refused when it grows or shrinks while read). Sockets, FIFOs
 * and devices are refused (they have no place in a layer). Names must be valid UTF-8 so the sorted byte order is defined.
 */
import { lstatSync, readdirSync, readlinkSync, type Stats } from "node:fs";
import { join } from "node:path";
import { CairnError, checkLimit, FIXED_LIMIT_HINT, decodeUtf8, ioError, readFileBounded } from "../core/index.ts";
import type { TarEntry } from "../tree/index.ts";

export interface DirLimits {
  /** layer.max_entries */
  readonly maxEntries: number;
  /** layer.max_file_bytes */
  readonly maxFileBytes: number;
  /** layer.max_total_bytes */
  readonly maxTotalBytes: number;
}

const BUILD_DIR_HINT = "build from a directory nothing else is writing to";

export const DEFAULT_DIR_LIMITS: DirLimits = {
  maxEntries: 200_000,
  maxFileBytes: 2 * 1024 * 1024 * 1024,
  maxTotalBytes: 8 * 1024 * 1024 * 1024,
};

/**
 * One file of the walk, by core's bounded reader: lstat said it is a regular
 * file of `expectedSize` bytes; anything else at open (a symlink or FIFO
 * swapped in, another size) or a file that grows or shrinks while read is
 * SOURCE_CHANGED.
 */
function readRegular(abs: string, expectedSize: number, maxFileBytes: number): Buffer {
  return readFileBounded(abs, maxFileBytes, "layer.max_file_bytes", {
    expectedSize,
    notRegular: "SOURCE_CHANGED",
    changed: "SOURCE_CHANGED",
    notRegularHint: BUILD_DIR_HINT,
    changedHint: BUILD_DIR_HINT,
    limitHint: FIXED_LIMIT_HINT,
  });
}

/**
 * Every entry under `root`, with relative paths (`usr/bin/x`) prefixed by
 * `prefix` (a relative path, or "" for none). The order is irrelevant: the blob
 * builder sorts.
 */
export function readDirectory(root: string, prefix = "", limits: DirLimits = DEFAULT_DIR_LIMITS): TarEntry[] {
  let st: Stats;
  try {
    st = lstatSync(root);
  } catch (cause) {
    throw ioError(root, cause);
  }
  if (!st.isDirectory()) throw new CairnError("SOURCE_NOT_REGULAR", `${root} is not a directory`, { path: root });
  const out: TarEntry[] = [];
  if (prefix !== "") {
    const parts = prefix.split("/");
    for (let i = 1; i <= parts.length; i++) out.push({ type: "dir", path: parts.slice(0, i).join("/"), mode: 0o755 });
  }
  let total = 0;
  const walk = (abs: string, rel: string): void => {
    let names: Buffer[];
    try {
      names = readdirSync(abs, { encoding: "buffer" });
    } catch (cause) {
      throw ioError(abs, cause);
    }
    for (const raw of names) {
      const name = decodeUtf8(raw, join(abs, raw.toString("latin1")));
      const childAbs = join(abs, name);
      const childRel = rel === "" ? name : `${rel}/${name}`;
      // Layer blobs are read back through the OCI tar gate (fold, lock verify's content check), where
      // `.wh.<name>` deletes <name> from lower layers: such a file would be built as content and read
      // back as a deletion, so the blob would mean two things. Refused at build time instead.
      if (name.startsWith(".wh.")) {
        throw new CairnError("TAR_WHITEOUT", `${childAbs} is named like an OCI whiteout (.wh.*); a layer read back would treat it as a deletion`, {
          path: childAbs,
          hint: "rename the file; names starting with .wh. are reserved by the OCI layer format",
        });
      }
      checkLimit("layer.max_entries", out.length + 1, limits.maxEntries, childAbs, "count", FIXED_LIMIT_HINT);
      const cst = lstatSync(childAbs);
      if (cst.isSymbolicLink()) {
        out.push({ type: "symlink", path: childRel, target: decodeUtf8(readlinkSync(childAbs, { encoding: "buffer" }), childAbs) });
      } else if (cst.isDirectory()) {
        out.push({ type: "dir", path: childRel, mode: cst.mode & 0o7777 });
        walk(childAbs, childRel);
      } else if (cst.isFile()) {
        total += cst.size;
        checkLimit("layer.max_total_bytes", total, limits.maxTotalBytes, childAbs, "bytes", FIXED_LIMIT_HINT);
        out.push({ type: "file", path: childRel, mode: cst.mode & 0o7777, data: readRegular(childAbs, cst.size, limits.maxFileBytes) });
      } else {
        throw new CairnError("SOURCE_NOT_REGULAR", `${childAbs} is a socket, FIFO or device; a layer holds only files, directories and symlinks`, {
          path: childAbs,
        });
      }
    }
  };
  walk(root, prefix);
  return out;
}
