/**
 * Reads of a stored content pack (the format is store/pack.ts's).
 * `readPacked` and `streamPacked` take one content's range and verify it
 * against the content's sha256 before the caller may use it: a tampered
 * pack yields STORE_CORRUPT, never wrong bytes. `inspectPack` checks a whole
 * pack from its bytes alone (the name against the index, every content
 * against its sha256).
 */
import { createHash } from "node:crypto";
import { type BigIntStats, closeSync, fstatSync } from "node:fs";
import { CairnError, ioError, openForRead, readFullyAt, sha256, Sha256Hasher, type Sha256Digest } from "../core/index.ts";
import { corrupt, ENTRY_BYTES, PACK_MAGIC, type PackIndex, TRAILER_BYTES, WRITE_BUFFER } from "./pack.ts";
import { PackEntries } from "./pack-entries.ts";
import type { Store } from "./store.ts";

export function openPack(store: Store, digest: Sha256Digest): number {
  const path = store.pathOf("packs", digest);
  try {
    return openForRead(path);
  } catch (cause) {
    const code = (cause as { code?: string }).code;
    if (code === "ENOENT") {
      throw new CairnError("STORE_MISSING", `pack ${digest} is not in the store`, { path: digest, cause, hint: "verify the workload again to rebuild it" });
    }
    if (code === "ELOOP") throw corrupt(digest, "is a symlink");
    throw ioError(path, cause);
  }
}

/**
 * Reads one content from a pack and verifies it against its sha256.
 * STORE_MISSING when the pack does not hold it or is absent; STORE_CORRUPT
 * when the pack is not the expected regular file or the bytes do not match.
 */
export function readPacked(store: Store, pack: PackIndex, digest: Sha256Digest, maxBytes: number, limitName = "fileSize"): Buffer {
  // allocUnsafe: a small content is a slice of Node's shared pool, not an ArrayBuffer of its own; every byte
  // is overwritten by the read, and a short read is refused before the buffer is handed out
  return withPackedRange(store, pack, digest, maxBytes, limitName, (fd, e) => readChecked(fd, Buffer.allocUnsafe(e.size), e.offset, pack, digest));
}

/** Fills `buf` (the content's whole size) from the pack at `offset` and returns it once it hashes to `digest`; STORE_CORRUPT otherwise. */
function readChecked(fd: number, buf: Buffer, offset: number, pack: PackIndex, digest: Sha256Digest): Buffer {
  if (readFullyAt(fd, buf, offset) !== buf.length || sha256(buf) !== digest) throw corrupt(pack.digest, `holds wrong bytes for ${digest}`);
  return buf;
}

/**
 * Hands one content of a pack to `chunk` in order, WRITE_BUFFER bytes at a
 * time from one reused buffer (a large content is never held whole), and
 * returns its size; the same refusals as `readPacked`, but STORE_CORRUPT for
 * wrong bytes of a content larger than that buffer comes after its chunks
 * were handed over: the caller must not use them until this returns. A
 * content that fits is read and checked whole, then handed over once.
 */
export function streamPacked(
  store: Store,
  pack: PackIndex,
  digest: Sha256Digest,
  maxBytes: number,
  chunk: (bytes: Buffer) => void,
  limitName = "fileSize",
): number {
  return withPackedRange(store, pack, digest, maxBytes, limitName, (fd, e) => {
    const buf = Buffer.allocUnsafe(Math.max(1, Math.min(e.size, WRITE_BUFFER)));
    if (e.size <= WRITE_BUFFER) {
      // one read, hashed in one call (no native hash object per file), checked before it is handed over
      const whole = readChecked(fd, buf.subarray(0, e.size), e.offset, pack, digest);
      if (e.size > 0) chunk(whole);
      return e.size;
    }
    const h = new Sha256Hasher();
    for (let at = 0; at < e.size; ) {
      const n = Math.min(buf.length, e.size - at);
      if (readFullyAt(fd, buf.subarray(0, n), e.offset + at) !== n) throw corrupt(pack.digest, `holds wrong bytes for ${digest}`);
      h.update(buf.subarray(0, n));
      chunk(buf.subarray(0, n));
      at += n;
    }
    if (h.digest() !== digest) throw corrupt(pack.digest, `holds wrong bytes for ${digest}`);
    return e.size;
  });
}

/** Opens the pack holding `digest` as a regular file of the indexed size, after the index and limit checks, for `fn` to read the content's range. */
function withPackedRange<T>(
  store: Store,
  pack: PackIndex,
  digest: Sha256Digest,
  maxBytes: number,
  limitName: string,
  fn: (fd: number, e: { readonly offset: number; readonly size: number }) => T,
): T {
  const e = pack.entries.get(digest);
  if (e === undefined) throw new CairnError("STORE_MISSING", `${digest} is not in pack ${pack.digest}`, { path: digest });
  if (e.size > maxBytes)
    throw new CairnError("LIMIT_EXCEEDED", `limit ${limitName} exceeded by stored ${digest}`, { path: digest, hint: `raise the limit "${limitName}"` });
  const fd = openPack(store, pack.digest);
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== pack.size) throw corrupt(pack.digest, `is not a regular file of ${pack.size} bytes`);
    return fn(fd, e);
  } finally {
    closeSync(fd);
  }
}

/**
 * A pack file's identity on its file system, as fstat gives it: device,
 * inode, size, and modification and change times in nanoseconds (decimal
 * strings). Any write, truncation, chmod, utimes or replacement through the
 * file system changes the change time (which no unprivileged call can set
 * back), so an equal stat means the file was not changed through the file
 * system since it was taken. It says nothing of damage below the file
 * system (bit rot, writes to the raw device): those are found when a
 * content is read, every read being checked against the content's sha256.
 */
export interface PackStat {
  readonly dev: string;
  readonly ino: string;
  readonly size: string;
  readonly mtimeNs: string;
  readonly ctimeNs: string;
}

/** A pack's index with its stat, and whether its body was hashed (false: its stat equalled `unchangedSince`). */
export interface InspectedPack extends PackIndex {
  readonly stat: PackStat;
  readonly bodyChecked: boolean;
}

function packStatOf(st: BigIntStats): PackStat {
  return { dev: String(st.dev), ino: String(st.ino), size: String(st.size), mtimeNs: String(st.mtimeNs), ctimeNs: String(st.ctimeNs) };
}

/** The stat of a stored pack file (opened no-follow), for a verify memo written after the pack was checked. */
export function statPack(store: Store, digest: Sha256Digest): PackStat {
  const fd = openPack(store, digest);
  try {
    return packStatOf(fstatSync(fd, { bigint: true }));
  } finally {
    closeSync(fd);
  }
}

export function samePackStat(a: PackStat, b: PackStat): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/**
 * Hashes every content of the pack's body in one sequential read through
 * one buffer (the contents lie in index order, each right after the one
 * before) and refuses the first whose bytes are not its sha256
 * (STORE_CORRUPT). One pass, not one open and positioned read per content:
 * for 20,000 small contents that was 6x the time of hashing them.
 */
function checkBody(fd: number, pack: PackIndex, tail: Buffer, bodySize: number): void {
  const buf = Buffer.allocUnsafe(WRITE_BUFFER);
  let fill = 0; // bytes of buf holding body bytes, from body offset `base`
  let base = 0;
  let at = 0; // body offset of what remains of the current content
  const count = pack.entries.size;
  for (let i = 0; i < count; i++) {
    let left = pack.entries.sizeAt(i);
    const h = createHash("sha256");
    while (true) {
      const have = base + fill - at;
      if (have >= left) {
        h.update(buf.subarray(at - base, at - base + left));
        at += left;
        break;
      }
      // not all here: hash what is, then refill the buffer from where this content goes on
      if (have > 0) h.update(buf.subarray(at - base, at - base + have));
      at += have;
      left -= have;
      base = at;
      const want = Math.min(buf.length, bodySize - base);
      fill = want > 0 ? readFullyAt(fd, buf.subarray(0, want), base) : 0;
      if (fill === 0 || fill < Math.min(want, left)) throw corrupt(pack.digest, "is shorter than its index");
    }
    if (h.digest().compare(tail, i * ENTRY_BYTES, i * ENTRY_BYTES + 32) !== 0) throw corrupt(pack.digest, `holds wrong bytes for ${pack.entries.digestAt(i)}`);
  }
}

/**
 * Checks a stored pack from its bytes alone (the name against the index, and
 * every content against its sha256) and returns its index. With
 * `unchangedSince` (the stat a verify memo recorded after a full check), the
 * body is hashed only when the pack's stat differs from it; the index is
 * always read and checked against the name. `maxBytes` bounds
 * the pack's size. The digest is validated (it may come from a directory
 * listing) and, once the index hashes to it, is known to be a sha256.
 */
export function inspectPack(store: Store, unsafeDigest: string, maxBytes: number, options: { unchangedSince?: PackStat } = {}): InspectedPack {
  const { digest, fd, size, stat, tail, count } = openTail(store, unsafeDigest, maxBytes);
  try {
    const entries = new PackEntries(count);
    let offset = 0;
    for (let i = 0; i < count; i++) {
      const n = Number(tail.readBigUInt64BE(i * ENTRY_BYTES + 32));
      if (offset + n > size - tail.length || !entries.addRaw(tail.subarray(i * ENTRY_BYTES, i * ENTRY_BYTES + 32), offset, n)) {
        throw corrupt(digest, "has a malformed index");
      }
      offset += n;
    }
    if (offset !== size - tail.length) throw corrupt(digest, "has a body of another length than its index");
    const index: PackIndex = { digest, size, entries };
    const unchanged = options.unchangedSince !== undefined && samePackStat(stat, options.unchangedSince);
    if (!unchanged) checkBody(fd, index, tail, size - tail.length);
    return { ...index, stat, bodyChecked: !unchanged };
  } finally {
    closeSync(fd);
  }
}

/**
 * True when the pack's file stat is `since` (what a verify that checked the
 * whole pack recorded) and its index still hashes to its name: the pack is
 * then the bytes that verify checked, short of a change below the file
 * system (docs/store.md). Builds no in-memory index, so a caller that needs
 * no lookups (a verify that hands out no tree) pays one read of the index.
 * False, not an error, when the stat differs; a pack that is missing or
 * fails the index check is refused as `inspectPack` refuses it.
 */
export function packUnchanged(store: Store, unsafeDigest: string, maxBytes: number, since: PackStat): boolean {
  const { fd, stat } = openTail(store, unsafeDigest, maxBytes);
  closeSync(fd);
  return samePackStat(stat, since);
}

/** Opens a pack and reads its index, checked against its name; the caller closes `fd`. */
function openTail(
  store: Store,
  unsafeDigest: string,
  maxBytes: number,
): { digest: Sha256Digest; fd: number; size: number; stat: PackStat; tail: Buffer; count: number } {
  store.pathOf("packs", unsafeDigest); // validates the digest before it names a file
  const digest = unsafeDigest as Sha256Digest;
  const fd = openPack(store, digest);
  try {
    const st = fstatSync(fd);
    const stat = packStatOf(fstatSync(fd, { bigint: true }));
    if (!st.isFile()) throw corrupt(digest, "is not a regular file");
    if (st.size > maxBytes) throw new CairnError("LIMIT_EXCEEDED", `limit storeObjectBytes exceeded by pack ${digest}`, { path: digest });
    if (st.size < TRAILER_BYTES) throw corrupt(digest, "is too short");
    const trailer = Buffer.alloc(TRAILER_BYTES);
    readFullyAt(fd, trailer, st.size - TRAILER_BYTES);
    if (!trailer.subarray(8).equals(PACK_MAGIC)) throw corrupt(digest, "does not end with the pack magic");
    const count = trailer.readBigUInt64BE(0);
    const tailBytes = count * BigInt(ENTRY_BYTES) + BigInt(TRAILER_BYTES);
    if (tailBytes > BigInt(st.size)) throw corrupt(digest, "has an index longer than itself");
    const tail = Buffer.alloc(Number(tailBytes));
    readFullyAt(fd, tail, st.size - tail.length);
    if (sha256(tail) !== digest) throw corrupt(digest, "does not match its name");
    return { digest, fd, size: st.size, stat, tail, count: Number(count) };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}
