/**
 * Byte order: the one way strata orders names, paths and keys. Strings are
 * compared by their UTF-8 bytes (`Buffer.compare`), never with
 * `localeCompare` or JavaScript's default UTF-16 sort, so the order — and
 * every blob, lockfile and digest built from it — is the same on every host.
 */
export function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** A plain object with the map's keys in byte order (for stable YAML and JCS-independent output). */
export function sortedRecord<V>(m: ReadonlyMap<string, V>): Record<string, V> {
  const out: Record<string, V> = {};
  for (const k of [...m.keys()].sort(byBytes)) out[k] = m.get(k)!;
  return out;
}
