/**
 * `cairn store gc`: removes from the content store everything no kept lock
 * needs. The roots (what is kept):
 *
 *  1. every lock recorded in the store's `roots/` while its file exists: a
 *     writer records the absolute path of every lock it writes (`workload
 *     assemble`, and so `run`, whose lock is the run directory's lock.json)
 *     and of every lock it verifies (`workload verify`, replay's preflight).
 *     A record whose lock file is gone is dropped; one whose lock no longer
 *     parses keeps nothing and is reported (`unreadable`), its record kept;
 *  2. every lock given with `--keep-lock FILE` (one that does not parse is
 *     refused: gc never guesses what a named root needs);
 *  3. every run under `--keep-runs DIR` (DIR itself when it is a run
 *     directory, else each run directory in it): its lock.json.
 *
 * A kept lock that is a run directory's lock.json keeps that run's input
 * tree too (`run.inputs`: the listing its run.json names and every file the
 * listing names), which a replay reads from the store and nothing else has.
 *
 * Failure bundles carry identities, never store content, so no bundle is a
 * root. What a kept lock needs: its raw closure (spec, executable or OCI
 * documents and compressed layers), its derived entry, and the content pack
 * recorded for that entry. The pack is derived data: verify (and so every
 * replay's preflight) re-applies the compressed layers anyway and rebuilds a
 * missing pack from them, so `dropPacks` removes packs too and keeps only
 * what a replay cannot rebuild.
 *
 * The sweep runs while gc holds the store (store/gc-lock.ts): no assembler
 * or verifier is open meanwhile, and one that starts waits for the sweep.
 */
import { existsSync, readdirSync, type Stats, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { CairnError, notWritable, writeRefusal, type Progress, type Sha256Digest } from "../core/index.ts";
import { dropRoot, holdForGc, listRoots, Store, sweepStore, type StoreArea, type SweepResult, type Tally } from "../store/index.ts";
import { lockDigestOf, readWorkloadLock, type WorkloadLock } from "../workload/index.ts";
import { RUN_FILES } from "./rundir.ts";
import { LISTING_MAX_BYTES, parseListingModel } from "./input-listing.ts";
import type { RunManifest } from "./run-manifest.ts";
import { readRunManifest } from "./replay-run.ts";

export interface StoreGcOptions {
  readonly storeDir: string;
  readonly cwd: string;
  /** Locks kept besides the recorded roots. */
  readonly keepLocks?: readonly string[];
  /** Runs directories (or run directories) whose runs' locks are kept. */
  readonly keepRuns?: readonly string[];
  /** Report what would be removed; remove nothing (and take no hold on the store). */
  readonly dryRun?: boolean;
  /** Remove content packs too (a replay's preflight rebuilds them from the kept layers). */
  readonly dropPacks?: boolean;
  /** How long to wait for open writers before STORE_BUSY (default 60 s). */
  readonly waitMs?: number;
  /** Progress: phase "mark" in locks read (the recorded roots), then "sweep" in files of the swept areas. */
  readonly progress?: Progress | undefined;
}

export interface StoreGcResult {
  readonly dryRun: boolean;
  readonly roots: {
    /** Locks whose closures were kept (recorded, named and runs, without repeats). */
    readonly kept: number;
    /** Recorded roots whose lock file is gone (dropped, or in a dry run, would be). */
    readonly stale: number;
    /** Recorded roots whose lock does not parse: nothing kept for them. */
    readonly unreadable: readonly string[];
  };
  readonly removed: Readonly<Record<StoreArea, Tally>>;
  readonly kept: Readonly<Record<StoreArea, Tally>>;
  /** Bytes removed (or that would be). */
  readonly freedBytes: number;
}

function runLocks(unsafeDir: string, cwd: string): string[] {
  const dir = resolve(cwd, unsafeDir);
  let st: Stats;
  try {
    st = statSync(dir);
  } catch (cause) {
    throw new CairnError("USAGE", `--keep-runs ${unsafeDir}: no such directory`, { path: unsafeDir, cause, hint: "name a runs directory or a run directory" });
  }
  if (!st.isDirectory()) throw new CairnError("USAGE", `--keep-runs ${unsafeDir} is not a directory`, { path: unsafeDir });
  if (existsSync(join(dir, RUN_FILES.lock))) return [join(dir, RUN_FILES.lock)];
  return readdirSync(dir)
    .sort()
    .map((n) => join(dir, n, RUN_FILES.lock))
    .filter((p) => existsSync(p));
}

function keep(live: Record<StoreArea, Set<Sha256Digest>>, store: Store, lock: WorkloadLock, dropPacks: boolean): void {
  for (const r of lock.raw) live.objects.add(r.digest);
  live.derived.add(lock.derived.digest);
  live.verified.add(lockDigestOf(lock));
  const pack = store.packOf(lock.derived.digest);
  if (pack !== undefined && !dropPacks) {
    live.packs.add(pack);
    live["derived-packs"].add(lock.derived.digest);
  }
}

/** The input tree of the run whose lock.json is `lockPath` (none when it is not a run's, or the run has none). */
function keepRunInputs(live: Record<StoreArea, Set<Sha256Digest>>, store: Store, lockPath: string): void {
  const runDir = dirname(lockPath);
  if (basename(lockPath) !== RUN_FILES.lock || !existsSync(join(runDir, RUN_FILES.manifest))) return;
  let ref: RunManifest["run_inputs"];
  try {
    ref = readRunManifest(runDir).run_inputs;
  } catch {
    return; // an unreadable run manifest names nothing to keep; replay refuses that run anyway
  }
  if (ref === undefined) return;
  live.objects.add(ref.listing);
  try {
    const listing = store.read("objects", ref.listing, Math.min(ref.size, LISTING_MAX_BYTES), "run.inputs-listing-bytes");
    for (const e of parseListingModel(listing, `store object ${ref.listing}`).entries) if (e.sha256 !== undefined) live.objects.add(e.sha256);
  } catch {
    // a missing or edited listing keeps only itself: that run's replay is refused either way
  }
}

/** Marks what the roots need and sweeps the rest (see the file comment for the roots). */
export function collectStoreGarbage(opts: StoreGcOptions): StoreGcResult {
  const dryRun = opts.dryRun ?? false;
  const store = new Store(opts.storeDir, { write: false });
  // Named roots first, outside the hold: a bad name is refused before anything is touched.
  const named: WorkloadLock[] = [];
  const namedPaths = [...(opts.keepLocks ?? []).map((p) => resolve(opts.cwd, p)), ...(opts.keepRuns ?? []).flatMap((d) => runLocks(d, opts.cwd))];
  for (const p of namedPaths) named.push(readWorkloadLock(p));
  // a gc deletes: on read-only media (or a store this user may not write) it is refused as such, naming the file
  // system, before the first write (the hold's marker) fails; a dry run only reads and works there
  const readOnly = dryRun ? undefined : notWritable(store.root);
  if (readOnly !== undefined)
    throw writeRefusal(store.root, Object.assign(new Error(readOnly), { code: readOnly }), "into the content store (gc removes from it)");
  const release = dryRun ? () => {} : holdForGc(store.root, opts.waitMs ?? 60_000);
  try {
    const live: Record<StoreArea, Set<Sha256Digest>> = {
      objects: new Set(),
      derived: new Set(),
      packs: new Set(),
      "derived-packs": new Set(),
      verified: new Set(),
    };
    const keptPaths = new Set<string>(namedPaths);
    for (const lock of named) keep(live, store, lock, opts.dropPacks ?? false);
    for (const p of namedPaths) keepRunInputs(live, store, p);
    let stale = 0;
    const unreadable: string[] = [];
    const roots = listRoots(store);
    for (const [i, root] of roots.entries()) {
      opts.progress?.({ phase: "mark", done: i, total: roots.length, unit: "files" });
      let lock: WorkloadLock;
      try {
        lock = readWorkloadLock(root.lockPath);
      } catch {
        if (!existsSync(root.lockPath)) {
          stale++;
          if (!dryRun) dropRoot(store, root.name);
        } else {
          unreadable.push(root.lockPath);
        }
        continue;
      }
      keptPaths.add(root.lockPath);
      keep(live, store, lock, opts.dropPacks ?? false);
      keepRunInputs(live, store, root.lockPath);
    }
    opts.progress?.({ phase: "mark", done: roots.length, total: roots.length, unit: "files" });
    const swept: SweepResult = sweepStore(store, live, dryRun, opts.progress);
    const freedBytes = Object.values(swept.removed).reduce((n, t) => n + t.bytes, 0);
    return { dryRun, roots: { kept: keptPaths.size, stale, unreadable }, removed: swept.removed, kept: swept.kept, freedBytes };
  } finally {
    release();
  }
}
