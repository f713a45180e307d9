/**
 * The tree model's table of entries by path (tree-builder.ts) while layers
 * are applied: keys and values held by reference in chunks of 4,096 and a
 * hash table of int32 slots, about 24 bytes per entry, where a Map costs
 * some 45 and, as it doubles, leaves tables of as much again behind for the
 * collector (on a 200,000-entry layer, megabytes of large-object space).
 * It answers as a Map does for what the model asks (get, set, delete, size,
 * iteration in insertion order, a replaced key keeping its place).
 *
 * Paths come from hostile layers: slots are chosen by path-set.ts's seeded
 * hash, so a layer crafted to collide cannot make lookups quadratic.
 */
import { pathHash } from "./path-set.ts";

const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;
const EMPTY = 0;
const DELETED = -1;

export class PathMap<V> {
  readonly #keys: Array<Array<string | undefined>> = [];
  readonly #values: Array<Array<V | undefined>> = [];
  /** Entries appended so far (removed ones leave holes until the next rebuild). */
  #used = 0;
  #live = 0;
  #deleted = 0;
  /** Open addressing, linear probing: EMPTY, DELETED, or index + 1. Live and deleted slots together at most half. */
  #slots = new Int32Array(64);

  get size(): number {
    return this.#live;
  }

  #key(i: number): string | undefined {
    return this.#keys[i >>> CHUNK_BITS]![i & (CHUNK - 1)];
  }

  /** The slot holding `key`, or -1. */
  #find(key: string): number {
    const mask = this.#slots.length - 1;
    for (let s = pathHash(key) & mask; ; s = (s + 1) & mask) {
      const v = this.#slots[s]!;
      if (v === EMPTY) return -1;
      if (v > 0 && this.#key(v - 1) === key) return s;
    }
  }

  get(key: string): V | undefined {
    const s = this.#find(key);
    if (s < 0) return undefined;
    const i = this.#slots[s]! - 1;
    return this.#values[i >>> CHUNK_BITS]![i & (CHUNK - 1)];
  }

  has(key: string): boolean {
    return this.#find(key) >= 0;
  }

  set(key: string, value: V): void {
    const found = this.#find(key);
    if (found >= 0) {
      const i = this.#slots[found]! - 1;
      this.#values[i >>> CHUNK_BITS]![i & (CHUNK - 1)] = value;
      return;
    }
    const i = this.#used++;
    if ((i & (CHUNK - 1)) === 0) {
      this.#keys.push([]);
      this.#values.push([]);
    }
    this.#keys[i >>> CHUNK_BITS]!.push(key);
    this.#values[i >>> CHUNK_BITS]!.push(value);
    this.#live++;
    this.#place(key, i);
    if ((this.#live + this.#deleted) * 2 > this.#slots.length) this.#rebuild();
  }

  /** Puts index i in the first empty or deleted slot of its probe sequence. */
  #place(key: string, i: number): void {
    const mask = this.#slots.length - 1;
    for (let s = pathHash(key) & mask; ; s = (s + 1) & mask) {
      const v = this.#slots[s]!;
      if (v === EMPTY || v === DELETED) {
        if (v === DELETED) this.#deleted--;
        this.#slots[s] = i + 1;
        return;
      }
    }
  }

  delete(key: string): boolean {
    const s = this.#find(key);
    if (s < 0) return false;
    const i = this.#slots[s]! - 1;
    this.#slots[s] = DELETED;
    this.#keys[i >>> CHUNK_BITS]![i & (CHUNK - 1)] = undefined;
    this.#values[i >>> CHUNK_BITS]![i & (CHUNK - 1)] = undefined;
    this.#live--;
    this.#deleted++;
    return true;
  }

  /** New slots sized for the live entries; the holes of removed entries are closed up first, in place, in the same order. */
  #rebuild(): void {
    if (this.#used > this.#live) {
      let j = 0;
      for (let i = 0; i < this.#used; i++) {
        const k = this.#key(i);
        if (k === undefined) continue;
        this.#keys[j >>> CHUNK_BITS]![j & (CHUNK - 1)] = k;
        this.#values[j >>> CHUNK_BITS]![j & (CHUNK - 1)] = this.#values[i >>> CHUNK_BITS]![i & (CHUNK - 1)];
        j++;
      }
      const chunks = Math.ceil(j / CHUNK);
      this.#keys.length = chunks;
      this.#values.length = chunks;
      if (chunks > 0) {
        this.#keys[chunks - 1]!.length = j - (chunks - 1) * CHUNK;
        this.#values[chunks - 1]!.length = j - (chunks - 1) * CHUNK;
      }
      this.#used = j;
    }
    this.#deleted = 0;
    let cap = 64;
    while (cap < this.#live * 4) cap *= 2;
    this.#slots = new Int32Array(cap);
    for (let i = 0; i < this.#used; i++) this.#place(this.#key(i)!, i);
  }

  *entries(): Generator<[string, V]> {
    for (let i = 0; i < this.#used; i++) {
      const k = this.#key(i);
      if (k !== undefined) yield [k, this.#values[i >>> CHUNK_BITS]![i & (CHUNK - 1)]!];
    }
  }

  *keys(): Generator<string> {
    for (let i = 0; i < this.#used; i++) {
      const k = this.#key(i);
      if (k !== undefined) yield k;
    }
  }

  *values(): Generator<V> {
    for (let i = 0; i < this.#used; i++) if (this.#key(i) !== undefined) yield this.#values[i >>> CHUNK_BITS]![i & (CHUNK - 1)]!;
  }
}
