/**
 * The canonical filesystem identity `cairn.fs/1`: one SHA-256 over an
 * explicit binary framing of every entry of a `CanonicalTree`, entries sorted
 * by the UTF-8 bytes of their paths (core's `sortByBytes`, never `localeCompare`
 * or the UTF-16 order of `Array.prototype.sort`). The framing is specified in
 * docs/workload.md well enough to reimplement it; this is its only definition.
 *
 *   digest  = sha256( "cairn.fs/1" 0x00 || u64 count || entry* )
 *   entry   = u8 type || str path || u32 mode || u32 uid || u32 gid || i64 mtime || body
 *   type    = 0x44 'D' dir | 0x46 'F' file | 0x4C 'L' symlink
 *   body    = dir: nothing | file: u64 size || 32 raw sha256 bytes | symlink: str target
 *   str     = u32 byte length || UTF-8 bytes
 * All integers are big-endian. Because every variable-length field carries
 * its length and every entry starts with a type tag, no two different trees
 * frame to the same bytes.
 *
 * Covered: path, type, permission bits (incl. sticky), numeric uid and gid,
 * whole-second mtime, file size and sha256, symlink target, and the presence
 * of every directory. Not covered (not representable in the model, so no tree
 * can differ in them): inode numbers, link counts, atime/ctime, sub-second
 * times, xattrs/ACLs, device numbers, host user names, enumeration order.
 */
import { CairnError, compareBytes, declareIdentity, hexDigestBytes, identityHasher, sortByBytes, type Sha256Digest } from "../core/index.ts";
import type { CanonicalTree, FsEntry } from "./entries.ts";
import { FrozenTree } from "./frozen-tree.ts";
import { isCanonicalPath, parentOf } from "./tree-paths.ts";

export const FS_IDENTITY_TAG = "cairn.fs/1";
export const FS_IDENTITY = declareIdentity({
  name: "canonical filesystem",
  tag: FS_IDENTITY_TAG,
  algorithm: "sha256",
  framing: "tag-nul-binary",
  role: "identity",
  definedIn: "src/tree/fs-digest.ts",
});

const TYPE_TAG = { dir: 0x44, file: 0x46, symlink: 0x4c } as const;
const U32_MAX = 0xffffffff;

function refuse(path: string, message: string): never {
  throw new CairnError("WORKLOAD_MISMATCH", `canonical tree entry ${JSON.stringify(path)}: ${message}`, {
    path,
    hint: "the tree violates the canonical tree model; it cannot be given a cairn.fs/1 identity",
  });
}

declare const CHECKED: unique symbol;
/**
 * A tree's entries in byte order of path, checked by `sortedEntries` (the only
 * maker of one): a derivation checks its tree once and hands the result to
 * both encoders of it (the fs identity and the derived entry).
 */
export type SortedEntries = readonly FsEntry[] & { readonly [CHECKED]: true };

/**
 * Checks the invariants the framing depends on: keys equal entry paths, paths
 * are canonical, "/" is a directory, every parent is an explicit directory,
 * numbers fit their frames. Returns the entries sorted by UTF-8 path bytes.
 */
export function sortedEntries(tree: CanonicalTree): SortedEntries {
  return checkedEntries(tree) as SortedEntries;
}

function checkedEntries(tree: CanonicalTree): readonly FsEntry[] {
  const root = tree.get("/");
  if (root === undefined || root.type !== "dir") refuse("/", "the root must be an explicit directory");
  // A frozen tree is in strict byte order by construction (its constructor compares every pair, or
  // fromEntries sorted it and refused repeats): its own array is handed out uncompared. Another map's
  // order is compared here, and its entries copied and sorted when out of order.
  const frozen = tree instanceof FrozenTree;
  let sorted = true;
  let prev: string | undefined;
  // The directories met so far: in byte order a parent comes before its children, so its lookup is a hash
  // probe, not a search of the tree; an entry met before its parent (another map's order) falls back to `get`.
  const dirs = new Set<string>();
  const check = (key: string, e: FsEntry): void => {
    if (!frozen) {
      if (sorted && prev !== undefined && compareBytes(prev, key) >= 0) sorted = false;
      prev = key;
    }
    if (key !== e.path) refuse(key, "map key differs from the entry path");
    if (!isCanonicalPath(e.path)) refuse(e.path, "path is not absolute and normalized");
    if (e.path !== "/" && !dirs.has(parentOf(e.path)) && tree.get(parentOf(e.path))?.type !== "dir") refuse(e.path, "parent is not an explicit directory");
    if (e.type === "dir") dirs.add(e.path);
    checkFields(e);
  };
  // a frozen tree's keys are its entries' paths (it yields [e.path, e]): its own array is walked, no pair allocated per entry
  if (frozen) for (const e of tree.ordered()) check(e.path, e);
  else for (const [key, e] of tree) check(key, e);
  if (frozen) return tree.ordered();
  const out = [...tree.values()];
  return sorted ? out : sortByBytes(out, (e) => e.path);
}

/** The fields the frame holds fit it: a type it has a tag for, numbers in range (the frame writes them unchecked), a symlink's target non-empty and free of NUL. */
function checkFields(e: FsEntry): void {
  // an unknown type would frame as tag 0x00, alike for every unknown type
  if (!Object.hasOwn(TYPE_TAG, e.type)) refuse(e.path, `type ${JSON.stringify(String(e.type).slice(0, 40))} is not dir, file or symlink`);
  if (!Number.isInteger(e.mode) || e.mode < 0 || e.mode > 0o7777) refuse(e.path, "mode out of range");
  if (!Number.isInteger(e.uid) || e.uid < 0 || e.uid > U32_MAX) refuse(e.path, "uid out of range");
  if (!Number.isInteger(e.gid) || e.gid < 0 || e.gid > U32_MAX) refuse(e.path, "gid out of range");
  if (!Number.isSafeInteger(e.mtime)) refuse(e.path, "mtime is not a whole number of seconds");
  if (e.type === "file" && (!Number.isSafeInteger(e.size) || e.size < 0)) refuse(e.path, "size out of range");
  if (e.type === "symlink" && (e.target.length === 0 || e.target.includes("\0"))) refuse(e.path, "symlink target empty or holds NUL");
}

/** Bytes of one entry's frame. */
function frameSize(e: FsEntry): number {
  const base = 1 + 4 + Buffer.byteLength(e.path, "utf8") + 4 + 4 + 4 + 8;
  if (e.type === "file") return base + 8 + 32;
  if (e.type === "symlink") return base + 4 + Buffer.byteLength(e.target, "utf8");
  return base;
}

/** Bytes one entry's frame takes at most, without encoding it: UTF-8 needs at most 3 bytes per UTF-16 unit. */
function frameBound(e: FsEntry): number {
  const base = 1 + 4 + 3 * e.path.length + 4 + 4 + 4 + 8;
  if (e.type === "file") return base + 8 + 32;
  if (e.type === "symlink") return base + 4 + 3 * e.target.length;
  return base;
}

/**
 * Writes `v` (an integer in 0..2^32-1, checked by the caller) as a
 * big-endian u32: byte stores, not writeUInt32BE, whose checks cost more
 * than the store on a frame per entry (a Uint8Array keeps the low 8 bits).
 */
function putU32(buf: Buffer, at: number, v: number): void {
  buf[at] = v >>> 24;
  buf[at + 1] = v >>> 16;
  buf[at + 2] = v >>> 8;
  buf[at + 3] = v;
}

/** Writes a `str` frame at `at` (room for frameBound checked by the caller); returns the offset after it. */
function putStr(buf: Buffer, at: number, s: string): number {
  const n = buf.write(s, at + 4, "utf8");
  putU32(buf, at, n);
  return at + 4 + n;
}

/**
 * Writes a safe integer as a big-endian two's-complement i64 (a u64 for the
 * non-negative sizes), as two 32-bit halves: the same bytes as
 * writeBigInt64BE(BigInt(v)) without a BigInt per entry.
 */
function putI64(buf: Buffer, at: number, v: number): void {
  const hi = Math.floor(v / 0x1_0000_0000);
  putU32(buf, at, hi >>> 0); // a negative high half as its two's complement
  putU32(buf, at + 4, v - hi * 0x1_0000_0000);
}

/**
 * Writes the 32 bytes the digest's 64 hex digits (after its `algo:` prefix)
 * spell into `buf` at `at`: the bytes of `buf.write(digestHex(d), at, "hex")`,
 * decoded here through a table instead of a native call and a sliced string
 * per file. False when that write would not give exactly 32 bytes (a non-hex
 * digit, too few digits) and when more than 64 digits follow the prefix
 * (which that write refused, writing past 32 bytes, wherever the scratch
 * buffer had room after the frame, and accepted at its end).
 */
export function putDigestBytes(buf: Buffer, at: number, d: string): boolean {
  const from = d.indexOf(":") + 1;
  return d.length - from === 64 && hexDigestBytes(d, from, buf, at, true);
}

/** Writes `e`'s frame into `buf` at `base` (at least frameSize(e) bytes free there: frameBound(e) is always enough); returns the offset after it. */
function frameInto(e: FsEntry, buf: Buffer, base: number): number {
  buf[base] = TYPE_TAG[e.type];
  let at = putStr(buf, base + 1, e.path);
  putU32(buf, at, e.mode);
  putU32(buf, at + 4, e.uid);
  putU32(buf, at + 8, e.gid);
  putI64(buf, at + 12, e.mtime);
  at += 20;
  if (e.type === "file") {
    putI64(buf, at, e.size);
    at += 8;
    if (!putDigestBytes(buf, at, e.sha256)) refuse(e.path, "sha256 is not 32 bytes");
    at += 32;
  } else if (e.type === "symlink") {
    at = putStr(buf, at, e.target);
  }
  return at;
}

/** The framed bytes of one entry (exported for the framing test vectors in the docs); its fields are checked as the identity checks them. */
export function frameEntry(e: FsEntry): Buffer {
  checkFields(e);
  const buf = Buffer.alloc(frameSize(e));
  frameInto(e, buf, 0);
  return buf;
}

/** The full framing (without the domain tag) of a tree. */
export function frameTree(tree: CanonicalTree): Buffer {
  const entries = sortedEntries(tree);
  const count = Buffer.alloc(8);
  count.writeBigUInt64BE(BigInt(entries.length));
  return Buffer.concat([count, ...entries.map(frameEntry)]);
}

/** The `cairn.fs/1` identity of a tree (streamed into the hash; equal to hashing the tag and `frameTree`). */
export function fsIdentity(tree: CanonicalTree): Sha256Digest {
  return fsIdentityOf(sortedEntries(tree));
}

/** The `cairn.fs/1` identity of a tree's checked entries (`sortedEntries`). */
export function fsIdentityOf(entries: SortedEntries): Sha256Digest {
  const h = identityHasher(FS_IDENTITY);
  const count = Buffer.alloc(8);
  count.writeBigUInt64BE(BigInt(entries.length));
  h.update(count);
  // frames written end to end into one scratch buffer (grown for a long path or target) and hashed
  // whenever the next does not fit: neither a few buffers nor a hash call per entry
  let scratch = Buffer.allocUnsafe(64 * 1024);
  let fill = 0;
  for (const e of entries) {
    const need = frameBound(e);
    if (fill + need > scratch.length) {
      h.update(scratch.subarray(0, fill));
      fill = 0;
    }
    if (need > scratch.length) scratch = Buffer.allocUnsafe(need);
    fill = frameInto(e, scratch, fill);
  }
  h.update(scratch.subarray(0, fill));
  return h.digest();
}
