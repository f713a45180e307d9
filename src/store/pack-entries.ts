/**
 * A content pack's index in memory (store/pack.ts): each content's sha256,
 * size and offset, in body order, held as columns (32 raw digest bytes and
 * two numbers per content, in chunks of 4,096 contents, plus a hash table of
 * int32 slots and their hashes), not as a Map of digest strings to entry
 * objects. A tree of 200,000 files costs some 70 bytes per content here
 * instead of ~180, and no digest string is kept (the tree's entries hold
 * their own). To every consumer it is a
 * `ReadonlyMap<Sha256Digest, PackEntry>`; keys and entries are made on demand.
 *
 * The digests may come from a hostile pack's tail (inspectPack reads them
 * before any content is checked), so slots are chosen by a hash of all 32
 * bytes keyed with a per-process random seed: a tail crafted to collide
 * cannot make lookups quadratic without knowing the seed.
 */
import { randomBytes } from "node:crypto";
import { hexDigestBytes, type Sha256Digest } from "../core/index.ts";

export interface PackEntry {
  readonly offset: number;
  readonly size: number;
}

const DIGEST_BYTES = 32;
const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;
const IN_CHUNK = CHUNK - 1;
const SHA256_PREFIX = "sha256:";
const PREFIX = SHA256_PREFIX.length;
const SEED = randomBytes(4).readUInt32LE(0);

export class PackEntries implements ReadonlyMap<Sha256Digest, PackEntry> {
  #count = 0;
  /** Columns in chunks of CHUNK contents: growing allocates one more chunk, never copies (no slack of a doubled array, no garbage). */
  readonly #digests: Buffer[] = [];
  readonly #sizes: Float64Array[] = [];
  readonly #offsets: Float64Array[] = [];
  /** Open addressing, linear probing: 0 is empty, otherwise index + 1. Kept at most half full. */
  #slots: Int32Array;
  /** Each slot's digest hash: a probe past another digest compares a number, not 32 bytes. */
  #tags: Int32Array;
  readonly #scratch = Buffer.alloc(DIGEST_BYTES);

  /** `expected`: how many contents will be added (an index read from a pack's tail), so the table is made once at its final size instead of doubled up to it. */
  constructor(expected = 0) {
    let slots = 16;
    while (slots < 2 * expected + 2 && slots < 1 << 30) slots *= 2;
    this.#slots = new Int32Array(slots);
    this.#tags = new Int32Array(slots);
  }

  get size(): number {
    return this.#count;
  }

  get [Symbol.toStringTag](): string {
    return "PackEntries";
  }

  #hash(buf: Buffer, at: number): number {
    let h = SEED;
    for (let k = at; k < at + DIGEST_BYTES; k += 4) {
      // the little-endian u32 at k, read byte by byte (readUInt32LE's checks cost several times the read, on every add and lookup)
      h = Math.imul(h ^ (buf[k]! | (buf[k + 1]! << 8) | (buf[k + 2]! << 16) | (buf[k + 3]! << 24)), 0x9e3779b1);
      h ^= h >>> 15;
    }
    return h | 0; // signed, as the Int32Array of tags holds it
  }

  /** The slot holding the digest in `buf` at `at` (whose #hash is `tag`), or the empty slot where it would go. */
  #slot(buf: Buffer, at: number, tag: number): number {
    const mask = this.#slots.length - 1;
    for (let s = tag & mask; ; s = (s + 1) & mask) {
      const v = this.#slots[s]!;
      if (v === 0) return s;
      if (this.#tags[s] === tag && this.#sameDigest(v - 1, buf, at)) return s;
    }
  }

  /** Content i's digest equals the 32 bytes of `buf` at `at` (compared here: a native compare costs more per call than 32 bytes do). */
  #sameDigest(i: number, buf: Buffer, at: number): boolean {
    const column = this.#digests[i >>> CHUNK_BITS]!;
    const from = (i & IN_CHUNK) * DIGEST_BYTES;
    for (let k = 0; k < DIGEST_BYTES; k++) if (column[from + k] !== buf[at + k]) return false;
    return true;
  }

  /**
   * The digest's raw bytes in the scratch buffer; false when it is not a
   * sha256 digest ("sha256:" and 64 lower-case hex digits, nothing more, as
   * the regex /^sha256:[0-9a-f]{64}$/), decoded through core's table: a
   * regex test, a sliced string and a native hex write per lookup cost more
   * than the rest of it.
   */
  #parse(digest: string): boolean {
    return digest.length === PREFIX + 2 * DIGEST_BYTES && digest.startsWith(SHA256_PREFIX) && hexDigestBytes(digest, PREFIX, this.#scratch, 0, false);
  }

  /** The content's index in body order, or -1. */
  indexOf(digest: string): number {
    if (!this.#parse(digest)) return -1;
    return this.#slots[this.#slot(this.#scratch, 0, this.#hash(this.#scratch, 0))]! - 1;
  }

  digestAt(i: number): Sha256Digest {
    const d = i & IN_CHUNK;
    return `sha256:${this.#digests[i >>> CHUNK_BITS]!.toString("hex", d * DIGEST_BYTES, (d + 1) * DIGEST_BYTES)}` as Sha256Digest;
  }

  sizeAt(i: number): number {
    return this.#sizes[i >>> CHUNK_BITS]![i & IN_CHUNK]!;
  }

  offsetAt(i: number): number {
    return this.#offsets[i >>> CHUNK_BITS]![i & IN_CHUNK]!;
  }

  /** Copies content i's 32 digest bytes into `out` at `at`. */
  copyDigest(i: number, out: Buffer, at: number): void {
    const d = i & IN_CHUNK;
    this.#digests[i >>> CHUNK_BITS]!.copy(out, at, d * DIGEST_BYTES, (d + 1) * DIGEST_BYTES);
  }

  /** Appends a content (in body order); false, and nothing added, when the digest is already present. */
  add(digest: Sha256Digest, offset: number, size: number): boolean {
    if (!this.#parse(digest)) throw new TypeError(`PackEntries: ${digest} is not a sha256 digest`);
    return this.addRaw(this.#scratch, offset, size);
  }

  /** `add` for a digest given as its 32 bytes (straight from the hasher: nothing to parse). */
  addRaw(raw: Buffer, offset: number, size: number): boolean {
    if (raw.length !== DIGEST_BYTES) throw new TypeError(`PackEntries: a sha256 digest has ${DIGEST_BYTES} bytes, not ${raw.length}`);
    const tag = this.#hash(raw, 0);
    const slot = this.#slot(raw, 0, tag);
    if (this.#slots[slot] !== 0) return false;
    const i = this.#count;
    const c = i >>> CHUNK_BITS;
    if (c === this.#sizes.length) {
      this.#digests.push(Buffer.alloc(CHUNK * DIGEST_BYTES));
      this.#sizes.push(new Float64Array(CHUNK));
      this.#offsets.push(new Float64Array(CHUNK));
    }
    raw.copy(this.#digests[c]!, (i & IN_CHUNK) * DIGEST_BYTES);
    this.#sizes[c]![i & IN_CHUNK] = size;
    this.#offsets[c]![i & IN_CHUNK] = offset;
    this.#count++;
    if (this.#count * 2 > this.#slots.length) this.#rehash();
    else {
      this.#slots[slot] = i + 1;
      this.#tags[slot] = tag;
    }
    return true;
  }

  #rehash(): void {
    this.#slots = new Int32Array(this.#slots.length * 2);
    this.#tags = new Int32Array(this.#slots.length);
    for (let i = 0; i < this.#count; i++) {
      const column = this.#digests[i >>> CHUNK_BITS]!;
      const at = (i & IN_CHUNK) * DIGEST_BYTES;
      const tag = this.#hash(column, at);
      const s = this.#slot(column, at, tag);
      this.#slots[s] = i + 1;
      this.#tags[s] = tag;
    }
  }

  get(digest: Sha256Digest): PackEntry | undefined {
    const i = this.indexOf(digest);
    return i < 0 ? undefined : { offset: this.offsetAt(i), size: this.sizeAt(i) };
  }

  has(digest: Sha256Digest): boolean {
    return this.indexOf(digest) >= 0;
  }

  forEach(fn: (value: PackEntry, key: Sha256Digest, map: ReadonlyMap<Sha256Digest, PackEntry>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }

  *entries(): MapIterator<[Sha256Digest, PackEntry]> {
    for (let i = 0; i < this.#count; i++) yield [this.digestAt(i), { offset: this.offsetAt(i), size: this.sizeAt(i) }];
  }

  *keys(): MapIterator<Sha256Digest> {
    for (let i = 0; i < this.#count; i++) yield this.digestAt(i);
  }

  *values(): MapIterator<PackEntry> {
    for (let i = 0; i < this.#count; i++) yield { offset: this.offsetAt(i), size: this.sizeAt(i) };
  }

  [Symbol.iterator](): MapIterator<[Sha256Digest, PackEntry]> {
    return this.entries();
  }
}
