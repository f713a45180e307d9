/**
 * Store garbage collection, the store's half: what is in the store
 * (`storeUsage`), which locks its writers recorded as roots (`listRoots`),
 * and the sweep that removes every object, derived entry, pack and pack
 * record outside a live set. Which locks are kept and what each one needs
 * (the mark) is decided above the store, where locks are understood
 * (vm/store-gc.ts); the sweep runs only while `holdForGc` holds the store,
 * so no writer is open while files are removed.
 */
import { lstatSync, readdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { readFileBounded, type Progress, type Sha256Digest } from "../core/index.ts";
import { cleanStaging } from "./staging.ts";
import type { Store, StoreArea } from "./store.ts";

/** Every content area gc sweeps, in the order it sweeps them (records after what they name). */
export const SWEPT_AREAS: readonly StoreArea[] = ["derived", "objects", "packs", "derived-packs", "verified"];

/** Files and bytes. */
export interface Tally {
  files: number;
  bytes: number;
}

/** What to keep, by area. */
export type LiveSet = Readonly<Record<StoreArea, ReadonlySet<Sha256Digest>>>;

export interface SweepResult {
  /** What was removed (or, in a dry run, would be), by area. */
  readonly removed: Readonly<Record<StoreArea, Tally>>;
  /** What stays, by area. */
  readonly kept: Readonly<Record<StoreArea, Tally>>;
}

export interface StoreUsage {
  readonly areas: Readonly<Record<StoreArea, Tally>>;
  /** Writers' staging directories (live or leftovers). */
  readonly staging: Tally;
  readonly roots: number;
}

const emptyTallies = (): Record<StoreArea, Tally> => ({
  objects: { files: 0, bytes: 0 },
  derived: { files: 0, bytes: 0 },
  packs: { files: 0, bytes: 0 },
  "derived-packs": { files: 0, bytes: 0 },
  verified: { files: 0, bytes: 0 },
});

/** The regular files of one area as (digest, size); anything else there is counted by the caller as not ours. */
function areaFiles(store: Store, area: StoreArea): Array<{ digest: Sha256Digest; path: string; size: number }> {
  const dir = join(store.root, area, "sha256");
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: Array<{ digest: Sha256Digest; path: string; size: number }> = [];
  for (const name of names) {
    if (!/^[0-9a-f]{64}$/.test(name)) continue; // a temporary sibling or a stranger: never ours to remove
    try {
      const st = lstatSync(join(dir, name));
      if (st.isFile()) out.push({ digest: `sha256:${name}` as Sha256Digest, path: join(dir, name), size: st.size });
    } catch {
      // removed while we looked
    }
  }
  return out;
}

function treeBytes(dir: string): Tally {
  const t: Tally = { files: 0, bytes: 0 };
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return t;
  }
  for (const n of names) {
    try {
      const st = lstatSync(join(dir, n));
      if (st.isDirectory()) {
        const sub = treeBytes(join(dir, n));
        t.files += sub.files;
        t.bytes += sub.bytes;
      } else {
        t.files++;
        t.bytes += st.size;
      }
    } catch {
      // removed while we looked
    }
  }
  return t;
}

/** What uses the space in a store. */
export function storeUsage(store: Store): StoreUsage {
  const areas = emptyTallies();
  for (const area of SWEPT_AREAS) {
    for (const f of areaFiles(store, area)) {
      areas[area].files++;
      areas[area].bytes += f.size;
    }
  }
  return { areas, staging: treeBytes(join(store.root, "staging")), roots: listRoots(store).length };
}

/** A recorded root: the record's name and the lock path it holds. */
export interface RootRecord {
  readonly name: string;
  readonly lockPath: string;
}

/** The roots writers recorded (`Store.registerRoot`); a record that does not read as one path is skipped. */
export function listRoots(store: Store): RootRecord[] {
  const dir = join(store.root, "roots");
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: RootRecord[] = [];
  for (const name of names.sort()) {
    if (!/^[0-9a-f]{64}$/.test(name)) continue;
    try {
      const text = readFileBounded(join(dir, name), 64 * 1024, "rootRecordBytes").toString("utf8");
      if (text.endsWith("\n") && !text.slice(0, -1).includes("\n")) out.push({ name, lockPath: text.slice(0, -1) });
    } catch {
      // unreadable record: not a root
    }
  }
  return out;
}

/** Removes one root record (its lock is gone). */
export function dropRoot(store: Store, name: string): void {
  if (!/^[0-9a-f]{64}$/.test(name)) return;
  try {
    unlinkSync(join(store.root, "roots", name));
  } catch {
    // already gone
  }
}

/**
 * Removes every file of the swept areas that `live` does not name (nothing
 * in a dry run), and dead writers' staging. Call only while `holdForGc`
 * holds the store.
 */
export function sweepStore(store: Store, live: LiveSet, dryRun: boolean, progress?: Progress): SweepResult {
  const removed = emptyTallies();
  const kept = emptyTallies();
  // phase "sweep": every file of the swept areas, listed first so the total is known
  const areas = SWEPT_AREAS.map((area) => ({ area, files: areaFiles(store, area) }));
  const total = areas.reduce((n, a) => n + a.files.length, 0);
  let done = 0;
  progress?.({ phase: "sweep", done, total, unit: "files" });
  for (const { area, files } of areas) {
    for (const f of files) {
      progress?.({ phase: "sweep", done: ++done, total, unit: "files" });
      const t = live[area].has(f.digest) ? kept[area] : removed[area];
      t.files++;
      t.bytes += f.size;
      if (t === removed[area] && !dryRun) {
        try {
          unlinkSync(f.path);
        } catch (e) {
          if ((e as { code?: string }).code !== "ENOENT") throw e;
        }
      }
    }
  }
  if (!dryRun) cleanStaging(store.root);
  return { removed, kept };
}
