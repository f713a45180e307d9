/**
 * `assemble`: spec → verified source bytes → canonical tree, launch and
 * identities → content store (raw objects, tree contents, derived entry) →
 * private workload lock. Order of publication is what makes a crash safe:
 * raw objects and file contents first, the derived entry (which names them)
 * next, the lock (which names the entry) last, then the lock's path as a gc
 * root in the store (store/gc.ts). Every step publishes a
 * complete file atomically, so a SIGKILL at any moment leaves either no lock
 * or a lock whose whole closure is in the store.
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { basename, dirname, extname, join, resolve } from "node:path";
import { CairnError, writeFileAtomic, writeNewFile, writeRefusal, type Progress, type Sha256Digest } from "../core/index.ts";
import { statPack, Store, type FinishedPack } from "../store/index.ts";
import { deriveBinary, derivedEntryOf, type Derived } from "./derive.ts";
import { hashDerived } from "./derived-entry.ts";
import type { SourceKind, WorkloadIdentities } from "./workload-identity.ts";
import { loadVerifyKey, writeVerifyMemo } from "./verify-memo.ts";
import { encodeWorkloadLock, lockDigestOf, type WorkloadLock } from "./workload-lock.ts";
import { readSourceFile, readSpecExecutable, specLayoutDir, type SourceScope } from "./source-file.ts";
import { parseWorkloadSpec, SPEC_MAX_BYTES } from "./spec.ts";
import type { RemoteOptions } from "./registry-pull.ts";
import type { PolicyListing } from "./oci-workload.ts";

export interface AssembleOptions {
  readonly specPath: string;
  readonly storeDir: string;
  /** Default: beside the spec, `<spec name without extension>.lock.json`. */
  readonly lockOut?: string | undefined;
  readonly cairnVersion: string;
  /** Wall clock for the lock's `created` provenance (not part of any identity). */
  readonly now?: () => Date;
  /** Messages about the work (what is applied; a stored object fetched again). */
  readonly log?: ((line: string) => void) | undefined;
  /** Progress events: "pull" in bytes for a registry image, "apply layers" in compressed bytes (core/progress.ts). */
  readonly progress?: Progress | undefined;
  /** How to reach a registry when the spec names `oci.ref` (credentials come from the environment's files). Without it, `env` is empty and https only. */
  readonly remote?: RemoteOptions | undefined;
  /**
   * The verify memo key's directory (verify-memo.ts). With it, an OCI
   * assembly that wrote its content pack itself also writes a verify memo
   * for the new lock (`derived_by: assemble`), so the first verify or
   * replay on this machine hashes the raw closure instead of re-deriving it.
   * The key is read (or made) before any work.
   */
  readonly memoKeyDir?: string | undefined;
  /**
   * --inputs-root DIR: the directory the spec's source (`source.binary.path`,
   * `source.oci.layout`) may be read from, absolute paths inside it allowed.
   * Without it the source lies beneath the spec's directory (source-file.ts).
   */
  readonly hostRoot?: string | undefined;
  /**
   * The spec's bytes, when the spec assembled is a variant of the file at
   * `specPath` that lives nowhere on disk (a campaign's matrix point,
   * fleet/expand.ts): its relative host paths start from `specPath`'s
   * directory exactly as the file's would. Default: the file's bytes.
   */
  readonly specBytes?: Buffer | undefined;
}

/** Whether an assembly asked for a memo wrote one (`why` when it did not). */
export type AssembleMemo = { readonly written: true } | { readonly written: false; readonly why: string };

export interface AssembleResult {
  readonly kind: SourceKind;
  readonly identities: WorkloadIdentities;
  readonly lockPath: string;
  readonly derivedDigest: Sha256Digest;
  readonly files: number;
  readonly entries: number;
  readonly treeBytes: number;
  readonly rawBytes: number;
  readonly durationMs: number;
  /** OCI: device nodes and FIFOs left out (`devices: skip`) and members whose xattrs were dropped (`xattrs: drop`); empty otherwise. */
  readonly listing: PolicyListing;
  /** With `memoKeyDir`, for an OCI workload: whether a verify memo was written; otherwise undefined. */
  readonly memo: AssembleMemo | undefined;
}

/**
 * Writes the derived entry into the store as it is encoded, 64 KiB at a time
 * (hashDerived), into a private staged file adopted under its digest: the
 * entry (some 35 MB for 200,000 entries) is never held whole. A present
 * entry is kept; bytes that hash to another digest than the derivation's are
 * refused (STORE_CONFLICT) and the staged file removed.
 */
function publishDerived(store: Store, derived: Derived): void {
  if (store.has("derived", derived.derivedDigest, derived.derivedSize)) return;
  const tmp = join(store.stagingDir, `derived-${randomBytes(8).toString("hex")}`);
  const written = writeNewFile(tmp, (write) => hashDerived(derivedEntryOf(derived), write));
  if (written.digest !== derived.derivedDigest || written.size !== derived.derivedSize) {
    rmSync(tmp, { force: true });
    throw new CairnError("STORE_CONFLICT", "derived entry digest changed while publishing", { path: written.digest });
  }
  store.adopt("derived", tmp, written.digest, written.size);
}

export function defaultLockPath(specPath: string): string {
  const name = basename(specPath, extname(specPath));
  return join(dirname(specPath), `${name}.lock.json`);
}

export async function assembleWorkload(opts: AssembleOptions): Promise<AssembleResult> {
  try {
    return await assembleInto(opts);
  } catch (e) {
    // a full, read-only or forbidden file system under the store (ENOSPC from the inflate thread's copy, a publish,
    // a staging write) is said as such, naming it; it escaped as INTERNAL (issue 31). Nothing half-written was published.
    throw writeRefusal(resolve(opts.storeDir), e, "into the content store");
  }
}

async function assembleInto(opts: AssembleOptions): Promise<AssembleResult> {
  const started = performance.now();
  const specPath = resolve(opts.specPath);
  const specBytes = opts.specBytes ?? readSourceFile(specPath, SPEC_MAX_BYTES, "specBytes");
  let spec = parseWorkloadSpec(specBytes, specPath);
  const scope: SourceScope = { specPath, hostRoot: opts.hostRoot };
  const lockPath = resolve(opts.lockOut ?? defaultLockPath(specPath));
  // Open for writing until the lock is rooted: `cairn store gc` waits for an open writer (store/gc-lock.ts).
  // the memo key before any work: a key that cannot be read refuses the assembly, not a finished one
  const memoKey = opts.memoKeyDir !== undefined && spec.source.kind === "oci" ? loadVerifyKey(opts.memoKeyDir) : undefined;
  const store = new Store(opts.storeDir);
  let derived: Derived;
  let listing: PolicyListing = { skipped: [], droppedXattrs: [] };
  let memo: AssembleMemo | undefined;
  try {
    let pack: FinishedPack | undefined;
    if (spec.source.kind === "binary") {
      // The path is a locator, resolved beneath the spec's directory (or --inputs-root) and never recorded.
      const { bytes: exe, path: exePath } = readSpecExecutable(scope, spec.source.path, spec.limits.fileSize, "fileSize");
      derived = deriveBinary(spec, exe, exePath);
      store.put("objects", exe);
    } else {
      let layoutDir = spec.source.ref === undefined ? specLayoutDir(scope, spec.source.layout) : "";
      if (spec.source.ref !== undefined) {
        // a registry image: pulled into the store by digest (nothing is requested when the store has it), then read
        // as a layout cairn writes into its own staging, exactly like a user's layout
        const { pullToLayout } = await import("./registry-pull.ts");
        layoutDir = join(store.stagingDir, "pulled-layout");
        const pulled = await pullToLayout(spec.source.ref, layoutDir, store, opts.remote ?? { env: {}, cwd: dirname(specPath) }, {
          log: opts.log,
          progress: opts.progress,
        });
        if (spec.source.manifestFromRef === true) spec = { ...spec, source: { ...spec.source, manifest: pulled.image.manifest.digest } };
      }
      // Loaded on demand: the OCI path compiles the image-spec schemas, which a binary workload never needs.
      const { assembleOci } = await import("./oci-workload.ts");
      // asked for a memo, which vouches for the pack's bytes, a pack already stored is compared, not kept unchecked
      const oci = await assembleOci(spec, layoutDir, store, { log: opts.log, progress: opts.progress }, memoKey !== undefined);
      derived = oci.derived;
      listing = oci.listing;
      pack = oci.contents;
    }
    store.put("objects", derived.specBytes);
    publishDerived(store, derived);
    if (pack !== undefined) store.recordPack(derived.derivedDigest, pack.digest);
    const lock: WorkloadLock = {
      kind: derived.kind,
      identities: derived.identities,
      policy: derived.policy,
      raw: derived.raw,
      derived: { digest: derived.derivedDigest, size: derived.derivedSize },
      created: (opts.now ?? (() => new Date()))().toISOString(),
      cairnVersion: opts.cairnVersion,
    };
    // The gc root is recorded before the lock appears: a kill in between leaves a root whose lock is absent (gc
    // drops such a record), never a lock whose objects no root protects.
    store.registerRoot(lockPath);
    writeFileAtomic(lockPath, encodeWorkloadLock(lock), { mode: 0o600 });
    // After the lock: a kill before this line leaves a lock without a memo, whose first verify re-derives.
    // The memo vouches for the pack's bytes, so only a pack this assembly wrote gets one.
    if (memoKey !== undefined && pack !== undefined) {
      if (pack.published === "kept") {
        memo = { written: false, why: "its content pack was already in the store and was kept without comparing its bytes" };
      } else {
        writeVerifyMemo(store, memoKey, lockDigestOf(lock), { digest: pack.digest, size: pack.size, stat: statPack(store, pack.digest) }, "assemble");
        memo = { written: true };
      }
    }
  } finally {
    store.close();
  }
  let files = 0;
  let treeBytes = 0;
  for (const e of derived.tree.values()) {
    if (e.type === "file") {
      files++;
      treeBytes += e.size;
    }
  }
  return {
    kind: derived.kind,
    identities: derived.identities,
    lockPath,
    derivedDigest: derived.derivedDigest,
    files,
    entries: derived.tree.size,
    treeBytes,
    rawBytes: derived.raw.reduce((n, r) => n + r.size, 0),
    durationMs: Math.round(performance.now() - started),
    listing,
    memo,
  };
}
