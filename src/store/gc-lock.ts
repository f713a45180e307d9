/**
 * Garbage collection and writers exclude each other, so a gc never deletes
 * an object that a writer has found present (and will name in a lock) but
 * not yet rooted. Each side first announces itself, then looks for the
 * other, and backs off when it sees it:
 *
 *  - a writer (every `Store` opened for writing: assembly and verify) holds
 *    its staging directory `staging/<host>-<pid>-<random>/` from open to
 *    close; after creating it, it looks for `gc.lock` and, when a live gc
 *    holds it, removes its staging and waits for the gc to finish;
 *  - `cairn store gc` creates `gc.lock` exclusively (O_EXCL), then looks at
 *    `staging/`; when a live writer is there, it removes `gc.lock` and tries
 *    again, up to its wait (STORE_BUSY after that).
 *
 * Both announce before they look (create, then list), so whichever comes
 * second sees the first: a gc never sweeps while a writer is open. A marker
 * or staging directory whose owner died is ignored (same host tag, pid gone)
 * or, from another host, once it is older than a day: a SIGKILL never wedges
 * the store.
 */
import { closeSync, lstatSync, readdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { CairnError, createExclusive, readFileBounded, writeFully } from "../core/index.ts";
import { abandoned, FOREIGN_STAGING_MAX_AGE_MS, hostTag, processAlive } from "./staging.ts";

export const GC_MARKER = "gc.lock";
/** How long a gc marker with unreadable content (its owner died between create and write) still counts as held. */
const GARBLED_MARKER_MS = 10_000;
const OWNER = /^([0-9a-f]{8})-([1-9][0-9]{0,9})\n$/;

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** Blocks this thread for `ms` (store operations are synchronous). */
export function sleepSync(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

/** True when a live gc holds the store at `root`. */
export function gcHeld(root: string, now = Date.now()): boolean {
  const path = join(root, GC_MARKER);
  let text: string;
  let age: number;
  try {
    age = now - lstatSync(path).mtimeMs;
    text = readFileBounded(path, 64, "gcMarkerBytes").toString("latin1");
  } catch {
    return false; // absent (or removed while we looked)
  }
  const m = OWNER.exec(text);
  if (m === null) return age < GARBLED_MARKER_MS;
  if (m[1] === hostTag()) return Number(m[2]) === process.pid || processAlive(Number(m[2]));
  return age < FOREIGN_STAGING_MAX_AGE_MS;
}

/** Live writers' staging directories under `root`, other than this process's own. */
export function liveWriters(root: string, now = Date.now()): string[] {
  let names: string[];
  try {
    names = readdirSync(join(root, "staging"));
  } catch {
    return [];
  }
  const own = `${hostTag()}-${process.pid}-`;
  return names.filter((n) => !n.startsWith(own) && !abandoned(join(root, "staging"), n, now));
}

function tryCreateMarker(root: string): boolean {
  const path = join(root, GC_MARKER);
  let fd: number;
  try {
    fd = createExclusive(path, 0o600);
  } catch (e) {
    if ((e as { code?: string }).code !== "EEXIST") throw e;
    if (!gcHeld(root)) unlinkSync(path); // its owner died: the next attempt takes it
    return false;
  }
  try {
    writeFully(fd, Buffer.from(`${hostTag()}-${process.pid}\n`, "latin1"));
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Takes the store for a gc: returns the release function once this process
 * holds `gc.lock` and no live writer is open. STORE_BUSY after `waitMs`.
 */
export function holdForGc(root: string, waitMs: number): () => void {
  const deadline = Date.now() + waitMs;
  const release = () => {
    try {
      unlinkSync(join(root, GC_MARKER));
    } catch {
      // already gone
    }
  };
  for (;;) {
    if (tryCreateMarker(root)) {
      if (liveWriters(root).length === 0) return release;
      release();
    }
    if (Date.now() >= deadline) {
      throw new CairnError("STORE_BUSY", `the store at ${root} stayed in use (a writer or another gc) for ${waitMs} ms`, {
        path: root,
        hint: "run gc again when no assembly or verify is running, or give it a longer --wait",
      });
    }
    sleepSync(20 + Math.floor(Math.random() * 60));
  }
}
