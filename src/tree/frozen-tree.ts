/**
 * The frozen canonical tree: every entry once, in the byte order of its path
 * (core's compareBytes), held as one sorted array and looked up by binary
 * search. It is a `ReadonlyMap<string, FsEntry>` (CanonicalTree) to every
 * consumer, iterating in byte order, but costs one array slot per entry
 * instead of a hash-table entry, and freezing makes no second table: a
 * tree of a million entries is held once. It cannot be changed after it is
 * made (no setter, the array is frozen), so a consumer cannot alter the
 * tree an identity was computed over; `ordered()` hands the frozen array
 * out, so a pass in byte order copies nothing.
 */
import { compareBytes, inByteOrder, sortByBytes } from "../core/index.ts";
import type { FsEntry } from "./entries.ts";

/** Passed by `fromEntries` alone: its array was just sorted here, so the constructor does not compare it again. */
const SORTED_HERE = Symbol("sorted here");

export class FrozenTree implements ReadonlyMap<string, FsEntry> {
  readonly #sorted: readonly FsEntry[];

  /** `sorted` must be in strictly ascending byte order of path; it is checked, and frozen. */
  constructor(sorted: readonly FsEntry[], trust?: typeof SORTED_HERE) {
    if (trust !== SORTED_HERE) {
      for (let i = 1; i < sorted.length; i++) {
        if (compareBytes(sorted[i - 1]!.path, sorted[i]!.path) >= 0) throw new TypeError(`FrozenTree: ${sorted[i]!.path} is out of byte order`);
      }
    }
    this.#sorted = Object.freeze(sorted);
  }

  /**
   * The tree of `entries` in any order (TreeModel.freeze): sorted here by
   * core's byte order, and refused (TypeError) when two share a path. A
   * sorted array with no two equal neighbours is strictly ascending, so the
   * constructor's comparison of every pair is not run a second time (on
   * 20,000 entries it cost as much as a third of the sort).
   */
  static fromEntries(entries: readonly FsEntry[]): FrozenTree {
    const sorted = sortByBytes(entries, (e) => e.path);
    for (let i = 1; i < sorted.length; i++) if (sorted[i - 1]!.path === sorted[i]!.path) throw new TypeError(`FrozenTree: ${sorted[i]!.path} appears twice`);
    return new FrozenTree(sorted, SORTED_HERE);
  }

  /** Every entry in byte order of path: the tree's own array, frozen (so handing it out copies nothing and changes nothing). */
  ordered(): readonly FsEntry[] {
    return this.#sorted;
  }

  get size(): number {
    return this.#sorted.length;
  }

  get [Symbol.toStringTag](): string {
    return "FrozenTree";
  }

  get(path: string): FsEntry | undefined {
    const s = this.#sorted;
    let lo = 0;
    let hi = s.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const e = s[mid]!;
      if (e.path === path) return e;
      if (compareBytes(e.path, path) < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  has(path: string): boolean {
    return this.get(path) !== undefined;
  }

  forEach(fn: (value: FsEntry, key: string, map: ReadonlyMap<string, FsEntry>) => void, thisArg?: unknown): void {
    for (const e of this.#sorted) fn.call(thisArg, e, e.path, this);
  }

  *entries(): MapIterator<[string, FsEntry]> {
    for (const e of this.#sorted) yield [e.path, e];
  }

  *keys(): MapIterator<string> {
    for (const e of this.#sorted) yield e.path;
  }

  *values(): MapIterator<FsEntry> {
    yield* this.#sorted;
  }

  [Symbol.iterator](): MapIterator<[string, FsEntry]> {
    return this.entries();
  }
}

/**
 * A tree's entries in byte order of path without validating them: a frozen
 * tree's own array (no copy), another map's entries copied, sorted if they
 * are not in order already.
 */
export function entriesInByteOrder(tree: ReadonlyMap<string, FsEntry>): readonly FsEntry[] {
  if (tree instanceof FrozenTree) return tree.ordered();
  const out = [...tree.values()];
  return inByteOrder(out.map((e) => e.path)) ? out : out.sort((a, b) => compareBytes(a.path, b.path));
}
