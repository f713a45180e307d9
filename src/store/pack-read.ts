/**
 * Reads of a stored content pack (the format is store/pack.ts's).
 * `readPacked` and `streamPacked` take one content's range and verify it
 * against the content's sha256 before the caller may use it: a tampered
 * pack yields STORE_CORRUPT, never wrong bytes. `inspectPack` checks a whole
 * pack from its bytes alone (the name against the index, every content
 * against its sha256).
 */
import { closeSync, fstatSync } from "node:fs";
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
 * Checks a stored pack from its bytes alone (the name against the index, and
 * every content against its sha256) and returns its index. `maxBytes` bounds
 * the pack's size. The digest is validated (it may come from a directory
 * listing) and, once the index hashes to it, is known to be a sha256.
 */
export function inspectPack(store: Store, unsafeDigest: string, maxBytes: number): PackIndex {
  store.pathOf("packs", unsafeDigest); // validates the digest before it names a file
  const digest = unsafeDigest as Sha256Digest;
  const fd = openPack(store, digest);
  try {
    const st = fstatSync(fd);
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
    const entries = new PackEntries();
    let offset = 0;
    for (let i = 0; i < Number(count); i++) {
      const d = `sha256:${tail.toString("hex", i * ENTRY_BYTES, i * ENTRY_BYTES + 32)}` as Sha256Digest;
      const size = Number(tail.readBigUInt64BE(i * ENTRY_BYTES + 32));
      if (offset + size > st.size - tail.length || !entries.add(d, offset, size)) throw corrupt(digest, "has a malformed index");
      offset += size;
    }
    if (offset !== st.size - tail.length) throw corrupt(digest, "has a body of another length than its index");
    const index: PackIndex = { digest, size: st.size, entries };
    for (const d of entries.keys()) readPacked(store, index, d, Number.MAX_SAFE_INTEGER);
    return index;
  } finally {
    closeSync(fd);
  }
}
