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
import { entriesInByteOrder, type CanonicalTree, type ContentSource, type FileEntry, type FsEntry } from "../tree/index.ts";
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
/** The metadata area is written through windows of this many bytes (a whole number of blocks). */
const META_WINDOW = 256 * EROFS_BLOCK;
/** Block addresses are 32-bit: 16 TiB at 4 KiB blocks. */
const BLOCKS_MAX = 0xffffffff;
/** The largest image the format can address (`vm.erofs-blocks` blocks of 4 KiB): the ceiling of a root disk. */
export const EROFS_MAX_BYTES = BLOCKS_MAX * EROFS_BLOCK;

/**
 * The layout, one column per field and one slot per entry in the byte order
 * of the paths (index 0 is the root), so a tree of 200,000 entries costs a
 * few typed arrays rather than 200,000 plan objects, child lists and names.
 */
export interface ErofsPlan {
  /** The tree's entries in byte order of path (the tree's own objects, not copies). */
  readonly entries: readonly FsEntry[];
  /** Byte offset of each inode in the image. */
  readonly offset: Float64Array;
  /** i_size: file bytes, symlink target bytes, directory bytes. */
  readonly iSize: Float64Array;
  /** Bytes stored inline after the inode (0: FLAT_PLAIN, whole blocks in the data area). */
  readonly tail: Uint16Array;
  /** First data block (entries with whole blocks), 0 otherwise. */
  readonly blkaddr: Uint32Array;
  readonly nlink: Uint32Array;
  /** Index of each entry's parent directory (the root's is itself). */
  readonly parent: Int32Array;
  /**
   * Directories' children in byte order of name, "." and ".." included:
   * entry i's are children[childStart[i] .. childStart[i + 1]), each an entry
   * index, or DOT / DOTDOT.
   */
  readonly childStart: Uint32Array;
  readonly children: Int32Array;
  /** Total image bytes (a whole number of blocks). */
  readonly size: number;
  readonly blocks: number;
  /** First byte of the data area. */
  readonly dataStart: number;
}

const DOT = -1;
const DOTDOT = -2;

/** Whole blocks entry i writes in the data area (FLAT_PLAIN blocks, or the full blocks before an inline tail). */
function fullBlocks(plan: Pick<ErofsPlan, "iSize" | "tail">, i: number): number {
  return Math.ceil((plan.iSize[i]! - plan.tail[i]!) / EROFS_BLOCK);
}

/** The name of child slot `c` of directory `i`. */
function childName(plan: Pick<ErofsPlan, "entries" | "children">, c: number): string {
  const k = plan.children[c]!;
  if (k === DOT) return ".";
  if (k === DOTDOT) return "..";
  const p = plan.entries[k]!.path;
  return p.slice(p.lastIndexOf("/") + 1);
}

/** The entry index child slot `c` of directory `i` points at. */
function childTarget(plan: Pick<ErofsPlan, "children" | "parent">, i: number, c: number): number {
  const k = plan.children[c]!;
  return k === DOT ? i : k === DOTDOT ? plan.parent[i]! : k;
}

/**
 * Splits directory i's names into blocks: calls `block(first, end)` for each
 * block's child slots and returns the directory's i_size.
 */
function dirBlocks(plan: Pick<ErofsPlan, "entries" | "children" | "childStart">, i: number, block?: (first: number, end: number) => void): number {
  const start = plan.childStart[i]!;
  const end = plan.childStart[i + 1]!;
  let first = start;
  let used = 0;
  let full = 0;
  for (let c = start; c < end; c++) {
    const need = DIRENT_SIZE + Buffer.byteLength(childName(plan, c), "utf8");
    if (used + need > EROFS_BLOCK) {
      block?.(first, c);
      full++;
      first = c;
      used = 0;
    }
    used += need;
  }
  block?.(first, end);
  return full * EROFS_BLOCK + used;
}

/**
 * Lays the image out: where every inode, inline tail and data block goes.
 * Pure: reads no content (sizes come from the tree).
 */
export function planErofs(tree: CanonicalTree): ErofsPlan {
  const root = tree.get("/");
  if (root === undefined || root.type !== "dir") throw new CairnError("RUN_INVALID", "the canonical tree has no root directory", { path: "/" });
  const entries = entriesInByteOrder(tree);
  const n = entries.length;
  // parents: directories by path (only directories are keys), then one index per entry
  const dirIndex = new Map<string, number>();
  entries.forEach((e, i) => {
    if (e.type === "dir") dirIndex.set(e.path, i);
  });
  const parent = new Int32Array(n);
  const count = new Uint32Array(n + 1);
  for (let i = 1; i < n; i++) {
    const p = entries[i]!.path;
    const cut = p.lastIndexOf("/");
    const at = dirIndex.get(cut === 0 ? "/" : p.slice(0, cut));
    if (at === undefined) throw new CairnError("RUN_INVALID", `the canonical tree has no directory ${p.slice(0, Math.max(cut, 1))} for ${p}`, { path: p });
    parent[i] = at;
    count[at]!++;
  }
  dirIndex.clear();
  // children in byte order of name: siblings' paths share their parent's prefix, so byte order
  // of path is byte order of name; "." and ".." are merged in where their bytes sort
  const childStart = new Uint32Array(n + 1);
  for (let i = 0; i < n; i++) childStart[i + 1] = childStart[i]! + (entries[i]!.type === "dir" ? count[i]! + 2 : 0);
  const children = new Int32Array(childStart[n]!);
  const fill = count; // reused: the next free slot of each directory, relative to its start
  fill.fill(0);
  const place = (dir: number, k: number): void => {
    children[childStart[dir]! + fill[dir]!++] = k;
  };
  const pendingDots = new Uint8Array(n); // 0: both still to place, 1: "." placed, 2: both placed
  const dots = (dir: number, name: string | undefined): void => {
    if (pendingDots[dir] === 0 && (name === undefined || compareBytes(name, ".") > 0)) {
      place(dir, DOT);
      pendingDots[dir] = 1;
    }
    if (pendingDots[dir] === 1 && (name === undefined || compareBytes(name, "..") > 0)) {
      place(dir, DOTDOT);
      pendingDots[dir] = 2;
    }
  };
  for (let i = 1; i < n; i++) {
    const p = entries[i]!.path;
    dots(parent[i]!, p.slice(p.lastIndexOf("/") + 1));
    place(parent[i]!, i);
  }
  for (let i = 0; i < n; i++) if (entries[i]!.type === "dir") dots(i, undefined);
  const nlink = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const e = entries[i]!;
    nlink[i] = e.type === "dir" ? 2 : 1;
    if (i > 0 && e.type === "dir") nlink[parent[i]!]!++;
  }
  const offset = new Float64Array(n);
  const iSize = new Float64Array(n);
  const tail = new Uint16Array(n);
  const cols = { entries, children, childStart, iSize, tail };
  let at = SUPER_OFFSET + SUPER_SIZE;
  for (let i = 0; i < n; i++) {
    const e = entries[i]!;
    const bytes = e.type === "file" ? e.size : e.type === "symlink" ? Buffer.byteLength(e.target, "utf8") : dirBlocks(cols, i);
    const partial = bytes % EROFS_BLOCK;
    // inline only a partial last block that fits after the inode in one block
    const t = partial > 0 && partial <= EROFS_BLOCK - INODE_SIZE ? partial : 0;
    if ((at % EROFS_BLOCK) + INODE_SIZE + t > EROFS_BLOCK) at = Math.ceil(at / EROFS_BLOCK) * EROFS_BLOCK;
    offset[i] = at;
    iSize[i] = bytes;
    tail[i] = t;
    at += Math.ceil((INODE_SIZE + t) / SLOT) * SLOT;
  }
  const dataStart = Math.ceil(at / EROFS_BLOCK) * EROFS_BLOCK;
  const blkaddr = new Uint32Array(n); // 32-bit in the format: a plan needing more blocks is refused below
  let block = dataStart / EROFS_BLOCK;
  for (let i = 0; i < n; i++) {
    const full = fullBlocks(cols, i);
    if (full > 0) {
      blkaddr[i] = block;
      block += full;
    }
  }
  if (block > BLOCKS_MAX) checkLimit("vm.erofs-blocks", block, BLOCKS_MAX, "/guest_image/disk", "count", FIXED_LIMIT_HINT);
  return { entries, offset, iSize, tail, blkaddr, nlink, parent, childStart, children, size: block * EROFS_BLOCK, blocks: block, dataStart };
}

function nidOf(plan: ErofsPlan, i: number): number {
  return plan.offset[i]! / SLOT;
}

function superblock(plan: ErofsPlan): Buffer {
  const b = Buffer.alloc(SUPER_SIZE);
  b.writeUInt32LE(EROFS_MAGIC, 0);
  b.writeUInt32LE(FEATURE_COMPAT_MTIME, 8); // feature_compat (no superblock checksum)
  b.writeUInt8(12, 12); // blkszbits: 4 KiB
  b.writeUInt16LE(FIRST_NID, 14); // root_nid
  b.writeBigUInt64LE(BigInt(plan.entries.length), 16); // inos
  b.writeUInt32LE(plan.blocks, 36); // blocks
  return b; // build_time, meta_blkaddr, xattr_blkaddr, uuid, volume_name, feature_incompat: 0
}

/** Writes entry i's inode into `meta` at `at`. */
function inode(plan: ErofsPlan, i: number, meta: Buffer, at: number): void {
  const e = plan.entries[i]!;
  const layout = plan.tail[i]! > 0 ? LAYOUT_FLAT_INLINE : LAYOUT_FLAT_PLAIN;
  meta.writeUInt16LE((layout << 1) | INODE_EXTENDED, at); // i_format
  const perm = e.type === "symlink" ? 0o777 : e.mode & 0o7777;
  meta.writeUInt16LE(MODE_TYPE[e.type] | perm, at + 4);
  meta.writeBigUInt64LE(BigInt(plan.iSize[i]!), at + 8);
  meta.writeUInt32LE(plan.blkaddr[i]!, at + 16); // i_u.raw_blkaddr
  meta.writeUInt32LE(i + 1, at + 20); // ino
  meta.writeUInt32LE(e.uid, at + 24);
  meta.writeUInt32LE(e.gid, at + 28);
  meta.writeBigUInt64LE(BigInt(e.mtime), at + 32);
  meta.writeUInt32LE(plan.nlink[i]!, at + 44);
}

/** A directory's data (every block, the last one only as far as i_size). */
function dirData(plan: ErofsPlan, i: number): Buffer {
  const size = plan.iSize[i]!;
  const out = Buffer.alloc(Math.ceil(size / EROFS_BLOCK) * EROFS_BLOCK || EROFS_BLOCK);
  let base = 0;
  dirBlocks(plan, i, (first, end) => {
    let nameoff = (end - first) * DIRENT_SIZE;
    for (let c = first; c < end; c++) {
      const target = childTarget(plan, i, c);
      const d = base + (c - first) * DIRENT_SIZE;
      out.writeBigUInt64LE(BigInt(nidOf(plan, target)), d);
      out.writeUInt16LE(nameoff, d + 8);
      out.writeUInt8(FILE_TYPE[plan.entries[target]!.type], d + 10);
      nameoff += out.write(childName(plan, c), base + nameoff, "utf8");
    }
    base += EROFS_BLOCK;
  });
  return out.subarray(0, size);
}

/** A directory's or symlink's data (file contents are streamed: fileRange). */
function entryData(plan: ErofsPlan, i: number): Uint8Array {
  const e = plan.entries[i]!;
  if (e.type === "dir") return dirData(plan, i);
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

/** Where the plan put the entry at `path` (for tests and diagnostics; a binary search, no index by path). */
export function planned(plan: ErofsPlan, path: string): { readonly size: number; readonly tail: number; readonly blkaddr: number } | undefined {
  let lo = 0;
  let hi = plan.entries.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareBytes(plan.entries[mid]!.path, path);
    if (c === 0) return { size: plan.iSize[mid]!, tail: plan.tail[mid]!, blkaddr: plan.blkaddr[mid]! };
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

export interface ErofsImage {
  readonly digest: Sha256Digest;
  readonly size: number;
  readonly inodes: number;
}

/**
 * Writes the image to `sink` in order (metadata area, then data blocks) and
 * returns its sha256. Memory: one 1 MiB window of the metadata area, the
 * directories' blocks and a MiB of a file at a time (file contents are
 * streamed from the source). The sink must take what it keeps of a chunk
 * before `write` returns (the window and the stream's buffer are reused).
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
  // The metadata area (inodes and inline tails, in offset order) is written
  // through a window of META_WINDOW bytes, emitted as each fills: it is about
  // 100 bytes per entry, and is never held whole. An inode and its tail never
  // cross a block, so never a window (a whole number of blocks).
  // The window is reused (zeroed) after each is emitted: the sink must take what it keeps before `write` returns.
  const window = Buffer.alloc(Math.min(META_WINDOW, plan.dataStart));
  let meta = window;
  let metaStart = 0;
  const advance = (to: number): void => {
    while (meta.length > 0 && to >= metaStart + meta.length) {
      emit(meta);
      metaStart += meta.length;
      meta = window.subarray(0, Math.min(META_WINDOW, plan.dataStart - metaStart));
      meta.fill(0);
    }
  };
  superblock(plan).copy(meta, SUPER_OFFSET);
  // the whole blocks of directory and symlink data are made again for the data area (keeping them
  // was some 22 bytes per entry of a large directory), as file contents are streamed again there
  const n = plan.entries.length;
  for (let i = 0; i < n; i++) {
    advance(plan.offset[i]!);
    const base = plan.offset[i]! - metaStart;
    inode(plan, i, meta, base);
    const e = plan.entries[i]!;
    const tail = plan.tail[i]!;
    if (e.type === "file") {
      // a file with an inline tail is read here for its tail and once more below for its blocks
      let at = base + INODE_SIZE;
      if (tail > 0)
        await fileRange(
          content,
          e,
          fullBlocks(plan, i) * EROFS_BLOCK,
          e.size,
          (c) => void (at += Buffer.from(c.buffer, c.byteOffset, c.length).copy(meta, at)),
        );
    } else {
      if (tail > 0) {
        const data = entryData(plan, i);
        Buffer.from(data.buffer, data.byteOffset, data.length).copy(meta, base + INODE_SIZE, fullBlocks(plan, i) * EROFS_BLOCK);
      }
    }
  }
  advance(plan.dataStart);
  const pad = Buffer.alloc(EROFS_BLOCK);
  for (let i = 0; i < n; i++) {
    const full = fullBlocks(plan, i);
    if (full === 0) continue;
    const bytes = full * EROFS_BLOCK;
    const e = plan.entries[i]!;
    let body: number;
    if (e.type === "file") {
      await fileRange(content, e, 0, bytes, emit);
      body = Math.min(e.size, bytes);
    } else {
      const data = entryData(plan, i);
      body = Math.min(data.length, bytes);
      emit(data.subarray(0, body));
    }
    emit(pad.subarray(0, bytes - body));
  }
  if (written !== plan.size)
    throw new CairnError("RUN_INFRASTRUCTURE", `the EROFS writer wrote ${written} bytes, its plan says ${plan.size}`, { path: "/guest_image/disk" });
  return { digest: hasher.digest(), size: written, inodes: plan.entries.length };
}
