/**
 * Content packs `cairn.pack/1`: the file contents of one derived tree, in one
 * store file instead of one file per content. Creating a file costs the
 * kernel far more than writing a few KiB into it, so a 20,000-file layer
 * stored as loose objects spent most of its time creating files; as a pack
 * it is one staged file, written sequentially and published by one rename.
 *
 * Format (all integers unsigned big-endian):
 *
 *   body   the distinct contents, concatenated in the order they were added
 *   index  per content: its sha256 (32 bytes) and size (8 bytes)
 *   count  number of index entries (8 bytes)
 *   magic  "cairn.pack/1" (12 bytes)
 *
 * A content's offset is the sum of the sizes before it. The pack is named
 * `packs/sha256/<hex>`, where hex is the sha256 of everything after the body
 * (index, count, magic). Each content's bytes are pinned by its own sha256,
 * so the name pins every byte of the pack without a second hash pass over
 * the body, and a pack can be checked from its bytes alone (`inspectPack`).
 * The magic ends the hashed bytes, so a pack name cannot collide with the
 * digest of a differently framed document.
 *
 * This module holds the format and its writer; reads of a stored pack are
 * in store/pack-read.ts.
 */
import { closeSync, fstatSync, ftruncateSync, rmSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { CairnError, ContentHasher, createExclusive, ioError, openForRead, readFullyAt, Sha256Hasher, writeFullyAt, type Sha256Digest } from "../core/index.ts";

/** A content's address in a pack, and the writer one content streams through (tree's ContentSink shape; store sits beside tree, not above it). */
export interface PackedAddress {
  readonly sha256: Sha256Digest;
  readonly size: number;
}
export interface PackContentWriter {
  write(chunk: Uint8Array): void;
  end(): PackedAddress;
}

import type { Store } from "./store.ts";
import { PackEntries } from "./pack-entries.ts";

export type { PackEntry } from "./pack-entries.ts";

export const PACK_MAGIC = Buffer.from("cairn.pack/1", "latin1");
export const ENTRY_BYTES = 40;
export const TRAILER_BYTES = 8 + PACK_MAGIC.length;
export const WRITE_BUFFER = 1 << 20;

/** Where each content of a pack lies (compact columns: store/pack-entries.ts); `size` is the pack file's size. */
export interface PackIndex {
  readonly digest: Sha256Digest;
  readonly size: number;
  readonly entries: PackEntries;
}

/**
 * A pack a writer finished. `published` says what the store now holds under
 * its name: `written`, the bytes this writer wrote (adopted); `compared`, a
 * present pack found to hold exactly those bytes; `kept`, a present pack of
 * the same name and size kept without comparing its body.
 */
export interface FinishedPack extends PackIndex {
  readonly published: "written" | "compared" | "kept";
}

/** Index records per chunk of the tail: 1,638 records, 64 KiB. */
const TAIL_CHUNK_ENTRIES = Math.floor((64 * 1024) / ENTRY_BYTES);

/**
 * The bytes after the body (index, count, magic; their sha256 names the
 * pack), in chunks of about 64 KiB made from the index's columns as they are
 * asked for: the tail of a 200,000-content pack (8 MB) is never held whole.
 * The chunks are views of one buffer, valid until the next is asked for.
 */
function* tailChunks(entries: PackEntries): Generator<Buffer> {
  const n = entries.size;
  const buf = Buffer.allocUnsafe(Math.max(TAIL_CHUNK_ENTRIES * ENTRY_BYTES, TRAILER_BYTES));
  for (let first = 0; first < n; first += TAIL_CHUNK_ENTRIES) {
    const end = Math.min(n, first + TAIL_CHUNK_ENTRIES);
    for (let i = first; i < end; i++) {
      const at = (i - first) * ENTRY_BYTES;
      entries.copyDigest(i, buf, at);
      writeU64(buf, entries.sizeAt(i), at + 32);
    }
    yield buf.subarray(0, (end - first) * ENTRY_BYTES);
  }
  writeU64(buf, n, 0);
  PACK_MAGIC.copy(buf, 8);
  yield buf.subarray(0, TRAILER_BYTES);
}

/** A safe integer as 8 big-endian bytes, written as two 32-bit halves (no BigInt per entry). */
function writeU64(buf: Buffer, v: number, at: number): void {
  buf.writeUInt32BE(Math.floor(v / 0x1_0000_0000), at);
  buf.writeUInt32BE(v >>> 0, at + 4);
}

export function corrupt(digest: string, what: string): CairnError {
  return new CairnError("STORE_CORRUPT", `stored pack ${digest} ${what}`, {
    path: digest,
    hint: "the store was modified; verify the workload again to rebuild the pack",
  });
}

/** True when two files hold the same bytes (both of `size` bytes). */
function sameBytes(a: string, b: string, size: number): boolean {
  let fa: number | undefined;
  let fb: number | undefined;
  try {
    fa = openForRead(a);
    fb = openForRead(b);
    if (!fstatSync(fa).isFile() || fstatSync(fa).size !== size) return false;
    const ba = Buffer.allocUnsafe(WRITE_BUFFER);
    const bb = Buffer.allocUnsafe(WRITE_BUFFER);
    for (let at = 0; at < size; at += WRITE_BUFFER) {
      const n = Math.min(WRITE_BUFFER, size - at);
      if (readFullyAt(fa, ba.subarray(0, n), at) !== n || readFullyAt(fb, bb.subarray(0, n), at) !== n) return false;
      if (!ba.subarray(0, n).equals(bb.subarray(0, n))) return false;
    }
    return true;
  } catch {
    return false;
  } finally {
    if (fa !== undefined) closeSync(fa);
    if (fb !== undefined) closeSync(fb);
  }
}

/** The index of a pack being built: each distinct content once, in the order added (entry i is the i-th in the body). */
export class PackPlan {
  readonly entries = new PackEntries();
  offset = 0;

  /** Records a content that ends the body so far; false when the pack already holds it (its bytes are then dropped). */
  record(digest: Sha256Digest, size: number): boolean {
    if (!this.entries.add(digest, this.offset, size)) return false;
    this.offset += size;
    return true;
  }

  /** `record` for a digest given as its 32 bytes. */
  recordRaw(raw: Buffer, size: number): boolean {
    if (!this.entries.addRaw(raw, this.offset, size)) return false;
    this.offset += size;
    return true;
  }

  /** The pack's name (the sha256 of its tail) and its size; the tail is hashed chunk by chunk, not held. */
  seal(): { digest: Sha256Digest; size: number } {
    const h = new Sha256Hasher();
    for (const chunk of this.tail()) h.update(chunk);
    return { digest: h.digest(), size: this.offset + h.size };
  }

  /** The tail (index, count, magic) in chunks of about 64 KiB, each valid until the next is asked for. */
  tail(): Iterable<Buffer> {
    return tailChunks(this.entries);
  }
}

/**
 * Writes one pack into the store's staging: each content streams in through
 * `begin` (hashed and written as its chunks arrive, never held whole; a
 * content the pack already holds is dropped at its end by moving the write
 * position back), then `finish` publishes the complete pack with a single
 * rename, or `abort` drops it. Until `finish` returns, nothing is
 * published: a SIGKILL leaves only the staging file.
 */
export class PackWriter {
  readonly #store: Store;
  readonly #tmp: string;
  #fd: number | undefined;
  readonly #plan = new PackPlan();
  readonly #buf = Buffer.allocUnsafe(WRITE_BUFFER);
  /** File offset of `#buf[0]`; `#fill` bytes of the buffer are pending. */
  #pos = 0;
  #fill = 0;
  /** The writer whose content is being written (one at a time). */
  #open: object | undefined;

  constructor(store: Store) {
    this.#store = store;
    this.#tmp = join(store.stagingDir, `pack-${randomBytes(8).toString("hex")}`);
    try {
      this.#fd = createExclusive(this.#tmp, 0o600);
    } catch (cause) {
      throw ioError(this.#tmp, cause, "write");
    }
  }

  /** Starts one content; an earlier writer that never ended (a refused member) is dropped. */
  begin(size: number): PackContentWriter {
    this.#rollback();
    const hash = new ContentHasher(size);
    const token = {};
    this.#open = token;
    return {
      write: (chunk) => {
        if (this.#open !== token) throw new CairnError("USAGE", "pack content written after another began", { path: this.#tmp });
        hash.update(chunk);
        this.#write(chunk);
      },
      end: () => {
        if (this.#open !== token) throw new CairnError("USAGE", "pack content ended after another began", { path: this.#tmp });
        this.#open = undefined;
        if (!this.#plan.recordRaw(hash.raw(), hash.size)) this.#rollback(true);
        return { sha256: hash.digest(), size: hash.size };
      },
    };
  }

  /** Adds one content held whole (copied; the caller may reuse `data`) and returns its address. */
  add(data: Uint8Array): PackedAddress {
    const w = this.begin(data.length);
    w.write(data);
    return w.end();
  }

  /** Moves the write position back to the end of the recorded body, dropping an unfinished or duplicate content's bytes. */
  #rollback(force = false): void {
    if (this.#open === undefined && !force) return;
    this.#open = undefined;
    const start = this.#plan.offset;
    if (start >= this.#pos) this.#fill = start - this.#pos;
    else {
      this.#pos = start;
      this.#fill = 0;
    }
  }

  #write(data: Uint8Array): void {
    const fd = this.#fd;
    if (fd === undefined) throw new CairnError("USAGE", "pack writer already finished", { path: this.#tmp });
    try {
      if (this.#fill + data.length > WRITE_BUFFER) this.#flush(fd);
      if (data.length >= WRITE_BUFFER) {
        writeFullyAt(fd, data, this.#pos);
        this.#pos += data.length;
      } else {
        this.#buf.set(data, this.#fill);
        this.#fill += data.length;
      }
    } catch (cause) {
      throw ioError(this.#tmp, cause, "write");
    }
  }

  #flush(fd: number): void {
    writeFullyAt(fd, this.#buf.subarray(0, this.#fill), this.#pos);
    this.#pos += this.#fill;
    this.#fill = 0;
  }

  /**
   * Completes the pack and publishes it (not fsynced: a pack is derived data
   * that verify rebuilds from the durable layers). A present pack of the same
   * name and size is kept; with `checkExisting` it must also hold exactly the
   * bytes just written, or it is replaced (repair).
   */
  finish(options: { checkExisting?: boolean } = {}): FinishedPack {
    const fd = this.#fd;
    if (fd === undefined) throw new CairnError("USAGE", "pack writer already finished", { path: this.#tmp });
    this.#rollback();
    const { digest, size } = this.#plan.seal();
    try {
      this.#flush(fd);
      // Bytes of a dropped content may lie past the body; the tail overwrites or the truncation removes them.
      ftruncateSync(fd, this.#plan.offset);
      let at = this.#plan.offset;
      for (const chunk of this.#plan.tail()) {
        writeFullyAt(fd, chunk, at);
        at += chunk.length;
      }
      closeSync(fd);
      this.#fd = undefined;
    } catch (cause) {
      this.abort();
      throw ioError(this.#tmp, cause, "write");
    }
    const present = this.#store.has("packs", digest, size);
    let published: FinishedPack["published"];
    if (present && options.checkExisting !== true) published = "kept";
    else if (present && sameBytes(this.#store.pathOf("packs", digest), this.#tmp, size)) published = "compared";
    else {
      // replace: true even when absent a moment ago, so what is under the name is what this writer wrote
      this.#store.adopt("packs", this.#tmp, digest, size, { durable: false, replace: true });
      published = "written";
    }
    if (published !== "written") rmSync(this.#tmp, { force: true });
    return { digest, size, entries: this.#plan.entries, published };
  }

  /** Drops the staged pack (after a refusal). Safe to call more than once. */
  abort(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
    rmSync(this.#tmp, { force: true });
  }
}
