/**
 * A run's qcow2 files (checkpoints.qcow2, a branch's branch-start.qcow2) are
 * standalone: cairn makes them with `qemu-img create` and `savevm`, never
 * with a backing file or an external data file. Their bytes come from run
 * directories and bundles, hostile input whose run.json can be made to agree
 * with them, so a digest check does not settle this: a qcow2 naming a
 * backing file makes `qemu-img` and QEMU open that host path (a FIFO hangs
 * them; a regular file is read as the image's unallocated clusters, the
 * snapshot's state among them, so host bytes could become guest RAM). The
 * header is read here (its first bytes, no tool, nothing else opened) before
 * either touches the file, and such a file is refused, naming the field.
 *
 * The header (QEMU's docs/interop/qcow2.txt), big-endian: magic `QFI\xfb` at
 * 0, version at 4 (2 or 3), backing_file_offset (u64) at 8, and for version
 * 3 incompatible_features (u64) at 72, whose bit 2 is "external data file".
 */
import { closeSync, fstatSync } from "node:fs";
import { CairnError, openForRead, readFullyAt } from "../core/index.ts";

const MAGIC = 0x514649fb;
const HEADER_BYTES = 104;
/** incompatible_features bit 2: the image's data lives in another (host) file. */
const EXTERNAL_DATA_FILE = 1n << 2n;

/** The first bytes of a qcow2 that say whether it stands alone. */
export const QCOW2_HEADER_BYTES = HEADER_BYTES;

/**
 * Why the qcow2 whose first bytes are `h` does not stand alone (not a qcow2
 * of version 2 or 3, a backing file, an external data file), or undefined
 * when it does.
 */
export function qcow2NotStandalone(h: Uint8Array): string | undefined {
  const b = Buffer.from(h.buffer, h.byteOffset, Math.min(h.length, HEADER_BYTES));
  if (b.length < 72 || b.readUInt32BE(0) !== MAGIC) return "is not a qcow2 image";
  const version = b.readUInt32BE(4);
  if (version !== 2 && version !== 3) return `is a qcow2 image of version ${version}; cairn writes versions 2 and 3`;
  if (b.readBigUInt64BE(8) !== 0n || b.readUInt32BE(16) !== 0) return "names a backing file (QEMU would open that host path)";
  if (version === 3 && (b.length < 80 || (b.readBigUInt64BE(72) & EXTERNAL_DATA_FILE) !== 0n))
    return "keeps its data in an external file (QEMU would open that host path)";
  return undefined;
}

/**
 * The first bytes of `file` (a regular file the caller checked by digest),
 * opened as the bounded reader opens (no symlink followed, never blocking
 * on a FIFO): what is read is a regular file's, or nothing is.
 */
export function qcow2Header(file: string): Buffer {
  let fd: number;
  try {
    fd = openForRead(file); // no symlink followed, no FIFO waited on
  } catch (e) {
    if ((e as { code?: string }).code === "ELOOP") return Buffer.alloc(0); // a symlink: not a qcow2 image cairn wrote
    throw e;
  }
  try {
    if (!fstatSync(fd).isFile()) return Buffer.alloc(0); // not a qcow2 image
    const h = Buffer.alloc(HEADER_BYTES);
    return h.subarray(0, readFullyAt(fd, h, 0));
  } finally {
    closeSync(fd);
  }
}

/** Refuses (RUN_INVALID naming `field`) unless `file` is a qcow2 (version 2 or 3) with no backing file and no external data file. */
export function checkStandaloneQcow2(file: string, field: string, name: string): void {
  const why = qcow2NotStandalone(qcow2Header(file));
  if (why !== undefined)
    throw new CairnError("RUN_INVALID", `${name} ${why}`, {
      path: field,
      hint: "cairn's snapshot files are standalone qcow2 images; this one was made or edited elsewhere, and neither qemu-img nor QEMU was started on it",
    });
}
