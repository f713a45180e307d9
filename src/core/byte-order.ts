/**
 * Byte order: the one way cairn orders names, paths and keys. Strings are
 * compared by their UTF-8 bytes (`Buffer.compare`), never with
 * `localeCompare` (the locale would change the order) or JavaScript's default
 * UTF-16 sort (which puts U+E000..U+FFFF after astral characters, unlike
 * UTF-8), so the order — and every blob, lockfile, tree and digest built from
 * it — is the same on every host and in every implementation.
 */

/** Compares two strings by their UTF-8 bytes; use as a sort comparator. */
export function compareBytes(a: string, b: string): number {
  // Without allocating: for code units outside the surrogate range, UTF-16
  // order is UTF-8 byte order, and an equal prefix of units is an equal
  // prefix of bytes. Where a surrogate decides (pairs, and lone ones, which
  // encode as U+FFFD), the encodings are compared.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (isSurrogate(x) || isSurrogate(y)) return encodedCompare(a, b);
    return x < y ? -1 : 1;
  }
  if (a.length === b.length) return 0;
  const longer = a.length > b.length ? a : b;
  if ((n > 0 && isSurrogate(longer.charCodeAt(n - 1))) || isSurrogate(longer.charCodeAt(n))) return encodedCompare(a, b);
  return a.length < b.length ? -1 : 1;
}

const isSurrogate = (unit: number): boolean => (unit & 0xf800) === 0xd800;

function encodedCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

const SURROGATE = /[\uD800-\uDFFF]/;

/**
 * `items` sorted by the UTF-8 bytes of `key(item)`, nothing encoded per item.
 * When no key holds a surrogate code unit, UTF-16 order is UTF-8 byte order
 * (every unit is then its code point), so the engine's own string comparison
 * sorts; it is several times faster than compareBytes on the long shared
 * prefixes of tree paths. Otherwise compareBytes decides.
 */
export function sortByBytes<T>(items: readonly T[], key: (item: T) => string): T[] {
  const out = [...items];
  for (const item of out) if (SURROGATE.test(key(item))) return out.sort((a, b) => compareBytes(key(a), key(b)));
  return out.sort((a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

/** True when `keys` are in strictly ascending byte order (no repeats): a sorted list is then not sorted again. */
export function inByteOrder(keys: Iterable<string>): boolean {
  let prev: string | undefined;
  for (const k of keys) {
    if (prev !== undefined && compareBytes(prev, k) >= 0) return false;
    prev = k;
  }
  return true;
}

/** A plain object with the map's keys in byte order (for stable YAML and JCS-independent output). */
export function sortedRecord<V>(m: ReadonlyMap<string, V>): Record<string, V> {
  const out: Record<string, V> = {};
  for (const k of [...m.keys()].sort(compareBytes)) out[k] = m.get(k)!;
  return out;
}

/**
 * The devcontainers CLI's order (`String.prototype.localeCompare` with the
 * host's default collation): only for writing and reading the CLI's own file
 * formats exactly as it does (devcontainer-lock.json key order, its feature
 * install order), never for an identity, which follows the bytes.
 */
export function devcontainersCliOrder(a: string, b: string): number {
  return a.localeCompare(b);
}
