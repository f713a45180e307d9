/**
 * The set of paths one layer has named so far (a second member at the same
 * normalized path is TAR_DUPLICATE). It holds a reference to each path
 * string in chunks of 4,096 and a hash table of int32 slots and their
 * hashes, about 24 bytes per member, where a Set<string> costs some 35 and,
 * as it doubles, leaves tables of as much again behind for the collector: a
 * 200,000-member layer is the case it exists for.
 *
 * Member names are hostile, so slots are chosen by a hash of every UTF-16
 * unit keyed with a per-process random seed: a layer crafted to collide
 * cannot make the checks quadratic without knowing the seed.
 */
import { randomBytes } from "node:crypto";

const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;
const SEED = randomBytes(4).readUInt32LE(0);

/** A path's slot hash, keyed with the per-process seed (also PathMap's). */
export function pathHash(s: string): number {
  let h = SEED ^ s.length;
  for (let i = 0; i < s.length; i++) {
    h = Math.imul(h ^ s.charCodeAt(i), 0x9e3779b1);
    h ^= h >>> 15;
  }
  return Math.imul(h ^ (h >>> 13), 0x85ebca6b) >>> 0;
}

export class PathSet {
  readonly #chunks: string[][] = [];
  #count = 0;
  /** Open addressing, linear probing: 0 is empty, otherwise index + 1. Kept at most half full. */
  #slots = new Int32Array(64);
  /** Each slot's path hash: a probe past another path compares a number, and growing hashes no path again. */
  #tags = new Int32Array(64);

  get size(): number {
    return this.#count;
  }

  #at(i: number): string {
    return this.#chunks[i >>> CHUNK_BITS]![i & (CHUNK - 1)]!;
  }

  /** The slot holding `path`, or the empty slot where it would go. */
  #slot(path: string, h: number): number {
    const mask = this.#slots.length - 1;
    const tag = h | 0;
    for (let s = h & mask; ; s = (s + 1) & mask) {
      const v = this.#slots[s]!;
      if (v === 0 || (this.#tags[s] === tag && this.#at(v - 1) === path)) return s;
    }
  }

  has(path: string): boolean {
    return this.#slots[this.#slot(path, pathHash(path))] !== 0;
  }

  /** Adds `path`; false, and nothing changed, when it is already in the set. */
  add(path: string): boolean {
    const h = pathHash(path);
    const s = this.#slot(path, h);
    if (this.#slots[s] !== 0) return false;
    const i = this.#count++;
    if ((i & (CHUNK - 1)) === 0) this.#chunks.push([]);
    this.#chunks[i >>> CHUNK_BITS]!.push(path);
    this.#slots[s] = i + 1;
    this.#tags[s] = h | 0;
    if (this.#count * 2 > this.#slots.length) this.#grow();
    return true;
  }

  /** Doubles the table, placing every path by its kept hash (all distinct: no comparison needed). */
  #grow(): void {
    const slots = this.#slots;
    const tags = this.#tags;
    this.#slots = new Int32Array(slots.length * 2);
    this.#tags = new Int32Array(slots.length * 2);
    const mask = this.#slots.length - 1;
    for (let old = 0; old < slots.length; old++) {
      const v = slots[old]!;
      if (v === 0) continue;
      const tag = tags[old]!;
      let s = tag & mask;
      while (this.#slots[s] !== 0) s = (s + 1) & mask;
      this.#slots[s] = v;
      this.#tags[s] = tag;
    }
  }
}
