/**
 * Replay preflight: `openVerifiedWorkload(lockPath, storeDir)` is the only way
 * the run code obtains a workload. It trusts neither the lock's recorded
 * identities nor the store's files:
 *  1. the lock parses strictly and matches its lock_digest;
 *  2. every raw object the lock names must be in the store with its recorded
 *     size (a missing one fails even when the derived entry exists; nothing
 *     falls back to the live source);
 *  3. the canonical spec is read (digest-checked), reparsed and must
 *     re-encode to the same bytes; then every other raw object is read and
 *     digest-checked, bounded by the spec's limits;
 *  4. the source is re-derived from raw objects only (binary: the ELF gate
 *     again; OCI: the selected graph reparsed, every layer rechecked against
 *     its DiffID, the tree rebuilt), and every identity recomputed;
 *  5. recomputed values are compared with the lock field by field, in a fixed
 *     order, and the first difference is refused naming the field (never an
 *     environment value);
 *  6. the stored derived entry must be present and byte-identical to the
 *     rebuilt one; an OCI tree's content pack is rebuilt with the tree and
 *     replaces a missing or corrupt stored pack (it is derived data); a
 *     binary tree's one file is the stored executable.
 * Only then are the tree, a verifying content source and the launch handed out.
 *
 * With a memo key (`options.memoKeyDir`), an OCI lock that this build of
 * cairn already fully verified on this machine (verify-memo.ts) skips step 4's
 * derivation: every layer is still hashed against the lock, the stored
 * derived entry is read against the lock's digest and strictly parsed
 * (derived-read.ts: its identities, policy and raw closure must be the
 * lock's, and the fs and launch identities are recomputed from it), and every
 * content of the memo's pack is hashed against the pack's index. A changed
 * layer or derived entry refuses exactly as in a full verify; a memo that
 * does not hold, an entry that does not read back, or a pack that fails its
 * check is not an error: the verify re-derives (and repairs) as without a
 * memo. Every full verify with a memo key (`full` included) writes a memo.
 */
import { LEGACY_OCI_ROLES } from "./closure.ts";
import { resolve } from "node:path";
import { CairnError, describeNotWritable, ioError, notWritable, type Progress, type Sha256Digest } from "../core/index.ts";
import { Store, type InspectedPack, type PackIndex, type PackStat } from "../store/index.ts";
import { canonicalSpecBytes, deriveBinary, type Derived } from "./derive.ts";
import type { SourceKind, WorkloadIdentities } from "./workload-identity.ts";
import type { Launch } from "./launch.ts";
import { LOCK_MAX_BYTES, parseWorkloadLock, type WorkloadLock } from "./workload-lock.ts";
import { parseCanonicalSpec, SPEC_MAX_BYTES, type WorkloadSpec } from "./spec.ts";
import { samePolicy, type CanonicalTree, type ContentSource } from "../tree/index.ts";
import { readSourceFile } from "./source-file.ts";
import { inspectPack, packUnchanged, statPack } from "../store/index.ts";
import { readStoredDerived } from "./derived-read.ts";
import { loadVerifyKey, readVerifyMemo, writeVerifyMemo, type Derivation, type VerifyMemo } from "./verify-memo.ts";
import { contentSource } from "./content-source.ts";
import { lockDigestOf } from "./workload-lock.ts";

export interface VerifyOptions {
  /** The directory of the verify memo key (cairnDir("keys")); without it, no memo is read or written. */
  readonly memoKeyDir?: string;
  /** Re-derive even when a memo holds (a memo is still written after). */
  readonly full?: boolean;
  /** Progress of a re-derivation: phase "apply layers" in compressed bytes (none when a memo holds). */
  readonly progress?: Progress | undefined;
}

/**
 * What `verifyWorkloadLock` found: the lock's identities, verified against
 * the store, without the tree, launch and contents a run needs.
 */
export interface LockVerification {
  readonly lock: WorkloadLock;
  readonly kind: SourceKind;
  readonly identities: WorkloadIdentities;
  readonly derivedDigest: Sha256Digest;
  readonly repaired: readonly string[];
  readonly derivation: Derivation;
  /** The tree's entry count, when the tree was re-derived or read back; undefined under a memo (`tree: "hashed only"`). */
  readonly entries: number | undefined;
}

export interface VerifiedWorkload {
  readonly lock: WorkloadLock;
  readonly kind: SourceKind;
  /** The spec as reparsed from its stored canonical form (locators are absent). */
  readonly spec: WorkloadSpec;
  /** The spec's raw `run` section for the runs code, undefined when absent. */
  readonly run: WorkloadSpec["run"];
  readonly tree: CanonicalTree;
  /** File bytes by sha256, read from the store and verified on every call. */
  readonly content: ContentSource;
  readonly launch: Launch;
  readonly identities: WorkloadIdentities;
  readonly derivedDigest: Sha256Digest;
  /**
   * Derived data that verification found missing or different and rebuilt
   * from the verified raw objects (an OCI content pack). Empty when nothing
   * was rewritten. Raw objects are never repaired: those failures refuse.
   */
  readonly repaired: readonly string[];
  readonly derivation: Derivation;
}

function mismatch(field: string, what: string): never {
  throw new CairnError("WORKLOAD_MISMATCH", `${what} differs from the lock (${field})`, {
    path: field,
    hint: "the store or the lock changed since assembly; assemble again from the original inputs",
  });
}

/** Compares re-derived values with the lock; the first incompatible field is refused. */
function compareWithLock(lock: WorkloadLock, d: Derived): void {
  if (d.kind !== lock.kind) mismatch("/source_kind", "the source kind");
  if (d.raw.length !== lock.raw.length) mismatch("/raw", "the raw closure");
  d.raw.forEach((r, i) => {
    const l = lock.raw[i]!;
    if (r.role !== l.role || r.digest !== l.digest || r.size !== l.size) mismatch(`/raw/${i}`, `the raw ${l.role} object`);
  });
  if (d.identities.source !== lock.identities.source) mismatch("/identities/source", "the source identity");
  if (d.identities.fs !== lock.identities.fs) mismatch("/identities/fs", "the canonical filesystem identity");
  if (d.identities.launch !== lock.identities.launch) mismatch("/identities/launch", "the launch identity");
  if (!samePolicy(d.policy, lock.policy)) mismatch("/policy", "the layer policy");
  if (d.identities.workload !== lock.identities.workload) mismatch("/workload", "the workload identity");
  if (d.derivedDigest !== lock.derived.digest || d.derivedSize !== lock.derived.size) mismatch("/derived", "the derived entry");
}

/** Runs a store check for one lock field; a store refusal keeps its code but names the lock field and role. */
function atField<T>(field: string, role: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw fieldError(field, role, e);
  }
}

function fieldError(field: string, role: string, e: unknown): unknown {
  if (!(e instanceof CairnError) || (e.code !== "STORE_MISSING" && e.code !== "STORE_CORRUPT")) return e;
  return new CairnError(e.code, `${role} (${field}): ${e.message}`, { path: field, hint: e.hint, cause: e });
}

function readLock(lockPath: string): WorkloadLock {
  let bytes: Buffer;
  try {
    bytes = readSourceFile(lockPath, LOCK_MAX_BYTES, "lockBytes");
  } catch (e) {
    if (e instanceof CairnError && e.code === "IO_ERROR") throw e;
    if (e instanceof CairnError) throw new CairnError("WORKLOAD_LOCK_INVALID", e.message, { path: lockPath, hint: e.hint, cause: e });
    throw ioError(lockPath, e);
  }
  return parseWorkloadLock(bytes, lockPath);
}

/** Fully verifies a workload lock against a store and returns only verified data. */
export async function openVerifiedWorkload(lockPath: string, storeDir: string, options: VerifyOptions = {}): Promise<VerifiedWorkload> {
  const w = await verifyLockAt(lockPath, storeDir, options, true);
  if (!("tree" in w)) throw new CairnError("INTERNAL", "a verify that reads the tree back returned none");
  return w;
}

/**
 * Verifies a workload lock against a store, as `openVerifiedWorkload` does,
 * for a caller that needs the verdict and the identities but not the tree
 * (`cairn workload verify`). The one difference is under a memo: the stored
 * derived entry is hashed against the lock but not parsed, since nothing
 * here would use what parsing gave (its bytes are the ones this machine's
 * full verify re-derived and compared).
 */
export async function verifyWorkloadLock(lockPath: string, storeDir: string, options: VerifyOptions = {}): Promise<LockVerification> {
  const w = await verifyLockAt(lockPath, storeDir, options, false);
  if (!("tree" in w)) return w;
  return {
    lock: w.lock,
    kind: w.kind,
    identities: w.identities,
    derivedDigest: w.derivedDigest,
    repaired: w.repaired,
    derivation: w.derivation,
    entries: w.tree.size,
  };
}

async function verifyLockAt(lockPath: string, storeDir: string, options: VerifyOptions, readBack: boolean): Promise<VerifiedWorkload | LockVerification> {
  const lock = readLock(lockPath);
  // Open for writing for the whole verify (gc waits for an open writer), and root the lock:
  // a verified lock (a replay's) keeps its closure through `cairn store gc` while the file exists.
  new Store(storeDir, { write: false }); // STORE_MISSING when there is no store: verify never creates one
  // On read-only media (or a store this user may not write) verify writes nothing at all: no staging
  // (gc cannot run there either, so there is nothing to hold off), no root record, no pack record,
  // no memo; the result says the memo was skipped and why (issue 31: it failed as INTERNAL).
  const why = notWritable(storeDir);
  if (why !== undefined) return verifyAgainst(lock, storeDir, undefined, options, readBack, `the store is read-only: ${describeNotWritable(storeDir, why)}`);
  const writable = new Store(storeDir);
  try {
    writable.registerRoot(resolve(lockPath));
    return await verifyAgainst(lock, storeDir, writable, options, readBack);
  } finally {
    writable.close();
  }
}

async function verifyAgainst(
  lock: WorkloadLock,
  storeDir: string,
  writable: Store | undefined,
  options: VerifyOptions,
  readBack: boolean,
  readOnly?: string,
): Promise<VerifiedWorkload | LockVerification> {
  const store = new Store(storeDir, { write: false });
  // 2. every raw object present with its recorded size, in lock order, before anything is parsed
  const legacy = lock.raw.findIndex((r) => (LEGACY_OCI_ROLES as readonly string[]).includes(r.role));
  if (legacy >= 0) {
    throw new CairnError("WORKLOAD_MISMATCH", `the lock pins the layout's ${lock.raw[legacy]!.role}, which no longer belongs to a raw closure`, {
      path: `/raw/${legacy}`,
      hint: "this lock was written by a cairn that pinned index.json; assemble the spec again",
    });
  }
  lock.raw.forEach((r, i) => {
    atField(`/raw/${i}`, r.role, () => store.require("objects", r.digest, r.size));
  });
  // 3. the canonical spec (bounded like a spec file), reparsed and re-encoded
  const specRef = lock.raw[0];
  if (specRef?.role !== "spec") mismatch("/raw/0/role", "the first raw object (the spec)");
  const specBytes = atField("/raw/0", "spec", () => store.read("objects", specRef.digest, Math.min(specRef.size, SPEC_MAX_BYTES), "specBytes"));
  const spec = parseCanonicalSpec(specBytes, `stored spec ${specRef.digest}`);
  if (!canonicalSpecBytes(spec).equals(specBytes)) mismatch("/raw/0", "the stored spec's canonical form");
  // ... then every other raw object's bytes, bounded by the spec's own limits. Layers are
  // large: their digest is checked when they are re-read and re-applied (step 4).
  const raw = new Map<Sha256Digest, Buffer>();
  lock.raw.forEach((r, i) => {
    if (i === 0 || r.role === "layer") return;
    const max = r.role === "executable" ? spec.limits.fileSize : spec.limits.ociJsonBytes;
    raw.set(
      r.digest,
      atField(`/raw/${i}`, r.role, () => store.read("objects", r.digest, Math.min(r.size, max), r.role === "executable" ? "fileSize" : "ociJsonBytes")),
    );
  });
  if (spec.source.kind !== lock.kind) mismatch("/source_kind", "the spec's source kind");
  // a memo of an earlier full verify (OCI only): when it holds, the layers are hashed on the inflate
  // thread while this thread reads the tree back (step 4 under the memo)
  const key = options.memoKeyDir !== undefined && lock.kind === "oci" ? loadVerifyKey(options.memoKeyDir) : undefined;
  const lockDigest = key !== undefined ? lockDigestOf(lock) : undefined;
  let why: string | undefined;
  if (key !== undefined && lockDigest !== undefined) {
    const found = options.full === true ? { memo: undefined, why: "--full asked for a re-derivation" } : readVerifyMemo(store, key, lockDigest);
    if (found.memo === undefined) why = found.why;
    else {
      const memo = found.memo;
      // beside the read-back on the inflate thread; with nothing to read back, here (no thread to start)
      const layersHashed = readBack ? hashLayers(lock, store, true) : hashLayers(lock, store, false);
      let fast: { got: VerifiedWorkload | LockVerification | { why: string } } | { failed: unknown };
      try {
        fast = {
          got: underMemo(lock, spec, store, memo, readBack, (stat) => {
            if (writable !== undefined) writeVerifyMemo(writable, key, lockDigest, { ...memo.pack, stat }, memo.derivedBy);
          }),
        };
      } catch (e) {
        fast = { failed: e };
      }
      const layers = await layersHashed; // settled whatever this thread found: no hashing runs on after the verify
      if (layers !== undefined) throw layers.refused; // a changed layer refuses first, memo or not
      if ("failed" in fast) throw fast.failed;
      if (!("why" in fast.got)) return fast.got;
      why = fast.got.why;
    }
  }
  // 4. re-derive from raw objects only
  let derived: Derived;
  let pack: PackIndex | undefined;
  const repaired: string[] = [];
  if (spec.source.kind === "binary") {
    const exeRef = lock.raw.find((r) => r.role === "executable");
    if (exeRef === undefined) mismatch("/raw", "the raw closure (no executable)");
    derived = deriveBinary(spec, raw.get(exeRef.digest)!, `stored executable ${exeRef.digest}`);
  } else {
    const { verifyOci } = await import("./oci-workload.ts");
    const oci = await verifyOci(spec, lock, writable ?? { reader: store, readOnly: readOnly ?? "the store is read-only" }, options.progress);
    ({ derived, contents: pack } = oci);
    if (oci.repaired) repaired.push(`content pack ${oci.contents.digest}`);
  }
  // 5. compare, first incompatible field wins
  compareWithLock(lock, derived);
  // 6. the stored derived entry must be exactly the rebuilt one
  // checked in chunks, not held: it hashes to the lock's digest, which the rebuilt entry's digest equals (compared above)
  atField("/derived", "derived entry", () => store.check("derived", lock.derived.digest, lock.derived.size, "derivedBytes"));
  if (derived.derivedDigest !== lock.derived.digest) mismatch("/derived", "the stored derived entry");
  // every file's content is in the store, checked as the content source marks the tree's files (one lookup per
  // file); a caller that reads no file (`workload verify`) gets no content source, and needs no marks: every file
  // of a tree derived here got its sha256 from a content recorded into this very pack (OCI) or from the executable
  // object step 2 required (binary)
  const content = readBack ? contentSource(store, derived.tree, pack) : undefined;
  if (pack !== undefined) writable?.recordPack(lock.derived.digest, pack.digest);
  let memoWritten = false;
  let memoSkipped: string | undefined;
  if (key !== undefined && lockDigest !== undefined && pack !== undefined) {
    if (writable === undefined) memoSkipped = readOnly;
    else {
      writeVerifyMemo(writable, key, lockDigest, { digest: pack.digest, size: pack.size, stat: statPack(store, pack.digest) }, "verify");
      memoWritten = true;
    }
  }
  const derivation: Derivation = {
    how: "re-derived",
    memoWritten,
    ...(why !== undefined ? { why } : {}),
    ...(memoSkipped !== undefined ? { memoSkipped } : {}),
  };
  const verdict = { lock, kind: lock.kind, identities: derived.identities, derivedDigest: derived.derivedDigest, repaired, derivation };
  if (content === undefined) return { ...verdict, entries: derived.tree.size };
  return { ...verdict, spec, run: spec.run, tree: derived.tree, content, launch: derived.launch };
}

/**
 * Under a memo, every layer blob hashed in full against the lock, one after
 * another on the inflate thread (store.checkOnThread: the store's bounded
 * read) while the caller reads the tree back, or on this thread
 * (store.check, the same read) when there is nothing to read back: an
 * async body that never awaits runs to its end before it returns. Settles with the first
 * refusal (a changed layer is STORE_CORRUPT naming its lock field), or with
 * nothing when every layer matched; it never rejects, so the caller can
 * await it after a refusal of its own.
 */
async function hashLayers(lock: WorkloadLock, store: Store, onThread: boolean): Promise<{ refused: unknown } | undefined> {
  for (const [i, r] of lock.raw.entries()) {
    if (r.role !== "layer") continue;
    try {
      if (onThread) await store.checkOnThread("objects", r.digest, r.size);
      else store.check("objects", r.digest, r.size);
    } catch (e) {
      return { refused: fieldError(`/raw/${i}`, r.role, e) };
    }
  }
  return undefined;
}

/**
 * Step 4 under a memo (the caller hashes the layers beside it, hashLayers):
 * the memo's pack checked by its index (and its body when its file stat is
 * not the memo's); then, to hand out the tree (`readBack`), the stored
 * derived entry read back and checked against the lock and every file found
 * in the pack, or else the entry only hashed against the lock. A result
 * with `why` says why the memo could not be used; the caller then
 * re-derives.
 */
function underMemo(
  lock: WorkloadLock,
  spec: WorkloadSpec,
  store: Store,
  memo: VerifyMemo,
  readBack: boolean,
  restat: (stat: PackStat) => void,
): VerifiedWorkload | LockVerification | { why: string } {
  let pack: InspectedPack | undefined;
  try {
    // no tree to hand out, no lookups to make: an unchanged pack is checked by its stat and index alone
    if (readBack || !packUnchanged(store, memo.pack.digest, memo.pack.size, memo.pack.stat))
      pack = inspectPack(store, memo.pack.digest, memo.pack.size, { unchangedSince: memo.pack.stat });
  } catch (e) {
    if (!(e instanceof CairnError)) throw e;
    return { why: `the memo's content pack failed its check: ${e.message}` };
  }
  if (pack !== undefined && pack.size !== memo.pack.size) return { why: "the memo's content pack has another size than recorded" };
  const packBody = pack?.bodyChecked === true ? "hashed" : "unchanged";
  if (!readBack) {
    // the entry's bytes hashed against the lock, not parsed: what they say is what the full verify compared
    atField("/derived", "derived entry", () => store.check("derived", lock.derived.digest, lock.derived.size, "derivedBytes"));
    if (pack?.bodyChecked === true) restat(pack.stat);
    return {
      lock,
      kind: lock.kind,
      identities: lock.identities,
      derivedDigest: lock.derived.digest,
      repaired: [],
      derivation: { how: "memo", verifiedAt: memo.verifiedAt, derivedBy: memo.derivedBy, packBody, tree: "hashed only" },
      entries: undefined,
    };
  }
  const bytes = atField("/derived", "derived entry", () => store.read("derived", lock.derived.digest, lock.derived.size, "derivedBytes"));
  let read: ReturnType<typeof readStoredDerived>;
  try {
    read = readStoredDerived(bytes, lock);
  } catch (e) {
    if (!(e instanceof CairnError)) throw e;
    return { why: `the stored derived entry did not read back: ${e.message}` };
  }
  if (pack === undefined) throw new CairnError("INTERNAL", "a verify that reads the tree back inspected no pack");
  let content: ContentSource;
  try {
    content = contentSource(store, read.tree, pack);
  } catch (e) {
    if (!(e instanceof CairnError)) throw e;
    return { why: `the memo's content pack does not hold every file: ${e.message}` };
  }
  if (pack.bodyChecked) restat(pack.stat); // changed on disk, same bytes: the next verify need not hash it again
  return {
    lock,
    kind: lock.kind,
    spec,
    run: spec.run,
    tree: read.tree,
    content,
    launch: read.launch,
    identities: lock.identities,
    derivedDigest: lock.derived.digest,
    repaired: [],
    derivation: { how: "memo", verifiedAt: memo.verifiedAt, derivedBy: memo.derivedBy, packBody, tree: "read back" },
  };
}

/** Reads a lock without verifying the store (for `workload show`); still checks lock_digest. */
export function readWorkloadLock(lockPath: string): WorkloadLock {
  return readLock(lockPath);
}
