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
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/**
 * `items` sorted by the UTF-8 bytes of `key(item)`, each key encoded once
 * (for large lists such as every path of a tree, where encoding inside the
 * comparator would dominate). Equal to sorting with `compareBytes` on the keys.
 */
export function sortByBytes<T>(items: readonly T[], key: (item: T) => string): T[] {
  const keyed = items.map((item) => ({ item, bytes: Buffer.from(key(item), "utf8") }));
  keyed.sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  return keyed.map((k) => k.item);
}

/** A plain object with the map's keys in byte order (for stable YAML and JCS-independent output). */
export function sortedRecord<V>(m: ReadonlyMap<string, V>): Record<string, V> {
  const out: Record<string, V> = {};
  for (const k of [...m.keys()].sort(compareBytes)) out[k] = m.get(k)!;
  return out;
}
