/**
 * A deterministic EROFS image writer: the guest's read-only root disk
 * (`run.root: disk`), written by cairn from the canonical tree alone. No
 * `mkfs` process and nothing from the host enters the image: there is no
 * host copy of the tree whose umask, owner, times or creation order could
 * leak in (erofs-utils' `mkfs.erofs` builds from a directory as it lies on
 * the host, and a non-root user cannot give that directory the tree's
 * owners). Same tree and contents → same bytes, on any host.
 *
 * The subset written (Linux fs/erofs, uncompressed, no xattrs):
 *   - 4 KiB blocks; the superblock at byte 1024 of block 0; the metadata
 *     area starts at block 0 (`meta_blkaddr` 0), so the first inode, the
 *     root's, sits right after the superblock at byte 1152 (nid 36).
 *   - one 64-byte extended inode per entry (its own uid, gid, mtime), in the
 *     byte order of the paths, the root first; nid = byte offset / 32.
 *   - data `FLAT_INLINE` when its last partial block fits after the inode in
 *     the same block (small files, symlink targets, most directories),
 *     otherwise `FLAT_PLAIN` (whole blocks, in the data area after the
 *     inodes, in inode order).
 *   - directories: blocks of 12-byte dirents (nid, name offset, file type)
 *     followed by their names, every name of the directory (with "." and
 *     "..") in byte order across blocks, as the kernel's binary search needs.
 * Every field not named here is zero, the UUID and volume name included.
 */
import { CairnError, checkLimit, compareBytes, FIXED_LIMIT_HINT, Sha256Hasher, type Sha256Digest } from "../core/index.ts";
import type { CanonicalTree, ContentSource, FileEntry, FsEntry } from "../tree/index.ts";
import { streamFile } from "./content-stream.ts";
import type { ByteSink } from "./cpio.ts";

export const EROFS_BLOCK = 4096;
const SUPER_OFFSET = 1024;
const SUPER_SIZE = 128;
const EROFS_MAGIC = 0xe0f5e1e2;
/** EROFS_FEATURE_COMPAT_MTIME: inodes carry their own mtime. */
const FEATURE_COMPAT_MTIME = 0x2;
const INODE_SIZE = 64;
const SLOT = 32;
const DIRENT_SIZE = 12;
const LAYOUT_FLAT_PLAIN = 0;
const LAYOUT_FLAT_INLINE = 2;
/** i_format bit 0: the extended (64-byte) inode. */
const INODE_EXTENDED = 1;
const FILE_TYPE = { file: 1, dir: 2, symlink: 7 } as const;
const MODE_TYPE = { dir: 0o040000, file: 0o100000, symlink: 0o120000 } as const;
/** The root inode's nid must fit the superblock's 16-bit `root_nid`; it is always the first inode. */
const FIRST_NID = (SUPER_OFFSET + SUPER_SIZE) / SLOT;
/** Block addresses are 32-bit: 16 TiB at 4 KiB blocks. */
const BLOCKS_MAX = 0xffffffff;

interface Planned {
  readonly entry: FsEntry;
  /** Byte offset of the inode in the image. */
  offset: number;
  /** Whole blocks written in the data area (FLAT_PLAIN blocks, or the full blocks before an inline tail). */
  readonly fullBlocks: number;
  /** Bytes stored inline after the inode (0 for FLAT_PLAIN). */
  readonly tail: number;
  readonly layout: number;
  readonly size: number;
  blkaddr: number;
  nlink: number;
  /** Directories: child names in byte order ("." and ".." included) with the child's path. */
  readonly children?: Array<{ readonly name: string; readonly path: string }>;
}

export interface ErofsPlan {
  readonly order: readonly Planned[];
  readonly byPath: ReadonlyMap<string, Planned>;
  /** Total image bytes (a whole number of blocks). */
  readonly size: number;
  readonly blocks: number;
  /** First byte of the data area. */
  readonly dataStart: number;
}

/** Splits a directory's sorted names into blocks; returns the directory's i_size. */
function dirBlocks(children: ReadonlyArray<{ readonly name: string }>): { size: number; blocks: number[][] } {
  const blocks: number[][] = [];
  let cur: number[] = [];
  let used = 0;
  children.forEach((c, i) => {
    const need = DIRENT_SIZE + Buffer.byteLength(c.name, "utf8");
    if (used + need > EROFS_BLOCK) {
      blocks.push(cur);
      cur = [];
      used = 0;
    }
    cur.push(i);
    used += need;
  });
  blocks.push(cur);
  return { size: (blocks.length - 1) * EROFS_BLOCK + used, blocks };
}

function dataSize(e: FsEntry, children?: ReadonlyArray<{ readonly name: string }>): number {
  if (e.type === "file") return e.size;
  if (e.type === "symlink") return Buffer.byteLength(e.target, "utf8");
  return dirBlocks(children ?? []).size;
}

/**
 * Lays the image out: where every inode, inline tail and data block goes.
 * Pure: reads no content (sizes come from the tree).
 */
export function planErofs(tree: CanonicalTree): ErofsPlan {
  const root = tree.get("/");
  if (root === undefined || root.type !== "dir") throw new CairnError("RUN_INVALID", "the canonical tree has no root directory", { path: "/" });
  const paths = [...tree.keys()].sort(compareBytes);
  // names are kept as strings (encoded where the directory is written), not one Buffer per entry
  const kids = new Map<string, Array<{ name: string; path: string }>>();
  for (const p of paths) {
    const e = tree.get(p)!;
    if (e.type === "dir") kids.set(p, [{ name: ".", path: p }]);
  }
  for (const p of paths) {
    if (p === "/") continue;
    const cut = p.lastIndexOf("/");
    const parent = cut === 0 ? "/" : p.slice(0, cut);
    const list = kids.get(parent);
    if (list === undefined) throw new CairnError("RUN_INVALID", `the canonical tree has no directory ${parent} for ${p}`, { path: p });
    list.push({ name: p.slice(cut + 1), path: p });
  }
  for (const [p, list] of kids) {
    const cut = p.lastIndexOf("/");
    list.push({ name: "..", path: p === "/" ? "/" : cut === 0 ? "/" : p.slice(0, cut) });
    list.sort((a, b) => compareBytes(a.name, b.name));
  }
  const order: Planned[] = [];
  const byPath = new Map<string, Planned>();
  let offset = SUPER_OFFSET + SUPER_SIZE;
  for (const p of paths) {
    const entry = tree.get(p)!;
    const children = kids.get(p);
    const size = dataSize(entry, children);
    const partial = size % EROFS_BLOCK;
    // inline only a partial last block that fits after the inode in one block
    const canInline = partial > 0 && partial <= EROFS_BLOCK - INODE_SIZE;
    const tail = canInline ? partial : 0;
    if ((offset % EROFS_BLOCK) + INODE_SIZE + tail > EROFS_BLOCK) offset = Math.ceil(offset / EROFS_BLOCK) * EROFS_BLOCK;
    const planned: Planned = {
      entry,
      offset,
      fullBlocks: canInline ? Math.floor(size / EROFS_BLOCK) : Math.ceil(size / EROFS_BLOCK),
      tail,
      layout: canInline ? LAYOUT_FLAT_INLINE : LAYOUT_FLAT_PLAIN,
      size,
      blkaddr: 0,
      nlink: entry.type === "dir" ? 2 : 1,
      ...(children ? { children } : {}),
    };
    order.push(planned);
    byPath.set(p, planned);
    offset += Math.ceil((INODE_SIZE + tail) / SLOT) * SLOT;
  }
  for (const p of paths) {
    if (p === "/" || tree.get(p)!.type !== "dir") continue;
    const cut = p.lastIndexOf("/");
    byPath.get(cut === 0 ? "/" : p.slice(0, cut))!.nlink++;
  }
  const dataStart = Math.ceil(offset / EROFS_BLOCK) * EROFS_BLOCK;
  let block = dataStart / EROFS_BLOCK;
  for (const pl of order) {
    if (pl.fullBlocks > 0) {
      pl.blkaddr = block;
      block += pl.fullBlocks;
    }
  }
  if (block > BLOCKS_MAX) checkLimit("vm.erofs-blocks", block, BLOCKS_MAX, "/guest_image/disk", "count", FIXED_LIMIT_HINT);
  return { order, byPath, size: block * EROFS_BLOCK, blocks: block, dataStart };
}

function nidOf(pl: Planned): number {
  return pl.offset / SLOT;
}

function superblock(plan: ErofsPlan): Buffer {
  const b = Buffer.alloc(SUPER_SIZE);
  b.writeUInt32LE(EROFS_MAGIC, 0);
  b.writeUInt32LE(FEATURE_COMPAT_MTIME, 8); // feature_compat (no superblock checksum)
  b.writeUInt8(12, 12); // blkszbits: 4 KiB
  b.writeUInt16LE(FIRST_NID, 14); // root_nid
  b.writeBigUInt64LE(BigInt(plan.order.length), 16); // inos
  b.writeUInt32LE(plan.blocks, 36); // blocks
  return b; // build_time, meta_blkaddr, xattr_blkaddr, uuid, volume_name, feature_incompat: 0
}

function inode(pl: Planned, ino: number): Buffer {
  const e = pl.entry;
  const b = Buffer.alloc(INODE_SIZE);
  b.writeUInt16LE((pl.layout << 1) | INODE_EXTENDED, 0); // i_format
  const perm = e.type === "symlink" ? 0o777 : e.mode & 0o7777;
  b.writeUInt16LE(MODE_TYPE[e.type] | perm, 4);
  b.writeBigUInt64LE(BigInt(pl.size), 8);
  b.writeUInt32LE(pl.blkaddr, 16); // i_u.raw_blkaddr
  b.writeUInt32LE(ino, 20);
  b.writeUInt32LE(e.uid, 24);
  b.writeUInt32LE(e.gid, 28);
  b.writeBigUInt64LE(BigInt(e.mtime), 32);
  b.writeUInt32LE(pl.nlink, 44);
  return b;
}

/** A directory's data (every block, the last one only as far as i_size). */
function dirData(plan: ErofsPlan, pl: Planned): Buffer {
  const children = pl.children!;
  const { size, blocks } = dirBlocks(children);
  const out = Buffer.alloc(blocks.length * EROFS_BLOCK);
  blocks.forEach((idx, bi) => {
    const base = bi * EROFS_BLOCK;
    let nameoff = idx.length * DIRENT_SIZE;
    idx.forEach((ci, k) => {
      const c = children[ci]!;
      const target = plan.byPath.get(c.path)!;
      const d = base + k * DIRENT_SIZE;
      out.writeBigUInt64LE(BigInt(nidOf(target)), d);
      out.writeUInt16LE(nameoff, d + 8);
      out.writeUInt8(FILE_TYPE[target.entry.type], d + 10);
      nameoff += out.write(c.name, base + nameoff, "utf8");
    });
  });
  return out.subarray(0, size);
}

/** A directory's or symlink's data (file contents are streamed: fileRange). */
function entryData(plan: ErofsPlan, pl: Planned): Uint8Array {
  const e = pl.entry;
  if (e.type === "dir") return dirData(plan, pl);
  if (e.type === "symlink") return Buffer.from(e.target, "utf8");
  throw new CairnError("RUN_INFRASTRUCTURE", `${e.path} is a file: its content is streamed`, { path: e.path });
}

/** Streams a file's content (verified as it passes, exactly its size: streamFile), handing `emit` only its bytes in [from, to). */
async function fileRange(content: ContentSource, e: FileEntry, from: number, to: number, emit: (chunk: Uint8Array) => void): Promise<void> {
  let at = 0;
  await streamFile(content, e, (chunk) => {
    const start = Math.max(from - at, 0);
    const end = Math.min(to - at, chunk.length);
    if (start < end) emit(chunk.subarray(start, end));
    at += chunk.length;
  });
}

export interface ErofsImage {
  readonly digest: Sha256Digest;
  readonly size: number;
  readonly inodes: number;
}

/**
 * Writes the image to `sink` in order (metadata area, then data blocks) and
 * returns its sha256. Memory: the metadata area, the directories' blocks and
 * a MiB of a file at a time (file contents are streamed from the source).
 */
export async function writeErofs(tree: CanonicalTree, content: ContentSource, sink: ByteSink, plan = planErofs(tree)): Promise<ErofsImage> {
  const hasher = new Sha256Hasher();
  let written = 0;
  const emit = (chunk: Uint8Array): void => {
    if (chunk.length === 0) return;
    hasher.update(chunk);
    sink.write(chunk);
    written += chunk.length;
  };
  const meta = Buffer.alloc(plan.dataStart);
  superblock(plan).copy(meta, SUPER_OFFSET);
  // directory and symlink data with whole blocks is kept for the data area;
  // file contents are streamed again there
  const blocksOf = new Map<Planned, Uint8Array>();
  for (let i = 0; i < plan.order.length; i++) {
    const pl = plan.order[i]!;
    inode(pl, i + 1).copy(meta, pl.offset);
    const e = pl.entry;
    if (e.type === "file") {
      // a file with an inline tail is read here for its tail and once more below for its blocks
      let at = pl.offset + INODE_SIZE;
      if (pl.tail > 0)
        await fileRange(content, e, pl.fullBlocks * EROFS_BLOCK, e.size, (c) => void (at += Buffer.from(c.buffer, c.byteOffset, c.length).copy(meta, at)));
    } else {
      const data = entryData(plan, pl);
      if (pl.tail > 0) Buffer.from(data.buffer, data.byteOffset, data.length).copy(meta, pl.offset + INODE_SIZE, pl.fullBlocks * EROFS_BLOCK);
      if (pl.fullBlocks > 0) blocksOf.set(pl, data);
    }
  }
  emit(meta);
  const pad = Buffer.alloc(EROFS_BLOCK);
  for (const pl of plan.order) {
    if (pl.fullBlocks === 0) continue;
    const bytes = pl.fullBlocks * EROFS_BLOCK;
    const e = pl.entry;
    let body: number;
    if (e.type === "file") {
      await fileRange(content, e, 0, bytes, emit);
      body = Math.min(e.size, bytes);
    } else {
      const data = blocksOf.get(pl)!;
      body = Math.min(data.length, bytes);
      emit(data.subarray(0, body));
    }
    emit(pad.subarray(0, bytes - body));
  }
  if (written !== plan.size)
    throw new CairnError("RUN_INFRASTRUCTURE", `the EROFS writer wrote ${written} bytes, its plan says ${plan.size}`, { path: "/guest_image/disk" });
  return { digest: hasher.digest(), size: written, inodes: plan.order.length };
}
