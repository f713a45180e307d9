/**
 * Where a replay differs from its record: the one comparison `cairn replay`
 * decides a mismatch by (`firstListDifference`, over events.json and
 * assertions.json entry by entry, canonical JSON); the field inside the
 * first differing entry is found by run-receipt.ts `firstDifference` (the one
 * JSON pointer walk), so a page can say `/events/1/code: recorded 0,
 * replayed 3` instead of "event 1".
 */
import { canonicalize, isJsonObject } from "../core/index.ts";

/** The index of the first entry that differs (canonical JSON), or -1 when the lists are equal. An index past either end is a difference. */
export function firstListDifference(a: readonly unknown[], b: readonly unknown[]): number {
  const n = Math.max(a.length, b.length);
  // an index past either end is a difference (a null entry must not stand in for a missing one)
  for (let i = 0; i < n; i++) if (i >= a.length || i >= b.length || canonicalize(a[i]) !== canonicalize(b[i])) return i;
  return -1;
}

/** The value at a JSON pointer this module made (undefined when absent). */
export function valueAt(root: unknown, pointer: string): unknown {
  let v: unknown = root;
  for (const raw of pointer.split("/").slice(1)) {
    const t = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (Array.isArray(v)) v = v[Number(t)];
    else if (isJsonObject(v) && Object.hasOwn(v, t)) v = v[t];
    else return undefined;
  }
  return v;
}
