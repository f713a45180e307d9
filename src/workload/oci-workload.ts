/**
 * OCI workloads: glue between the OCI area (reading and staging an image),
 * the tree area (layer application, in-root resolution) and the store, for both assembly (reading the user's layout)
 * and verification (reading the store's raw copies through the same reader
 * code, so verify reparses the selected graph with every check assembly ran).
 */
import { closeSync, constants, createReadStream, mkdtempSync, rmSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnError, createExclusive, Sha256Hasher, writeFileAtomic, type Progress, type Reporter, type Sha256Digest } from "../core/index.ts";
import { PackCheck, PackWriter, type FinishedPack, type PackIndex, type Store } from "../store/index.ts";
import type { RawRef } from "./closure.ts";
import { finishDerivation, type DeriveFor, type Derived } from "./derive.ts";
import { launchFromOci, ociLaunchWithSpec, type Launch } from "./launch.ts";
import type { WorkloadLock } from "./workload-lock.ts";
import type { WorkloadSpec } from "./spec.ts";
import { readOciSource, selectionDocuments, type OciObjectReader, type OciSource, type OpenedFile } from "../oci/index.ts";
import { applyLayers, resolveInTree, type CanonicalTree, type ContentSink, type DroppedXattrs, type FsEntry, type SkippedMember } from "../tree/index.ts";

/**
 * The raw closure of an OCI source, in lock order: the selected manifest, its
 * config and its layers, which are what runs. The layout's own `oci-layout`,
 * `index.json` and the selecting descriptor are not in it: tags, annotations
 * and other entries do not change the image, and pinning them made a run
 * recorded from one layout fail to replay from a store filled from a
 * re-tagged (`umoci tag`) or copied (`skopeo copy`) layout of the same
 * manifest (STORE_MISSING at /raw/2). Verification selects the manifest
 * through cairn's own one-entry index (oci `selectionDocuments`).
 */
function rawRefs(src: OciSource): RawRef[] {
  const refs: RawRef[] = [
    { role: "manifest", digest: src.manifest.digest, size: src.manifest.size },
    { role: "config", digest: src.config.digest, size: src.config.size },
  ];
  for (const l of src.layers) refs.push({ role: "layer", digest: l.digest, size: l.size });
  return refs;
}

/** File bytes into one content pack (see store/pack.ts): one staged file instead of one file per content. */
function packSink(pack: PackWriter | PackCheck): ContentSink {
  return { begin: (size) => pack.begin(size) };
}

/** A derived OCI workload and the pack holding its tree's file contents. */
export interface DerivedOci {
  readonly derived: Derived;
  /** Device nodes and FIFOs left out, xattrs dropped (by the spec's policy). */
  readonly listing: PolicyListing;
  readonly contents: PackIndex;
  /** True when verification found the pack missing or different and wrote a new one. */
  readonly repaired?: boolean;
}

/**
 * Applies the layers with every file's bytes going into one pack, which is
 * published only when the whole derivation succeeded (a refused workload
 * leaves nothing in the store). `checkExisting` (verify) replaces a present
 * pack that does not hold exactly the rebuilt bytes.
 */
async function deriveAndPack(
  spec: WorkloadSpec,
  src: OciSource,
  store: Store,
  mode: "assemble" | "verify",
  checkExisting: boolean,
  progress: Progress | undefined,
  copies?: ReadonlyMap<number, number>,
): Promise<DerivedOci & { readonly contents: FinishedPack }> {
  const pack = new PackWriter(store);
  try {
    // verify reads the store's layer files unstaged: every byte is re-hashed as it is read
    const { derived, listing } = await deriveFromSource(spec, src, packSink(pack), mode, copies, progress);
    return { derived, listing, contents: pack.finish({ checkExisting }) };
  } catch (e) {
    pack.abort();
    throw e;
  }
}

/**
 * A launch path resolved in the image. Too many symlinks (a loop) is refused
 * as the launch being invalid, as a missing path is, naming the limit it hit.
 */
async function resolveLaunchPath(tree: CanonicalTree, unsafePath: string, path: string): Promise<FsEntry | undefined> {
  try {
    return await resolveInTree(tree, unsafePath);
  } catch (cause) {
    if (cause instanceof CairnError && cause.code === "LIMIT_EXCEEDED") {
      throw new CairnError("LAUNCH_INVALID", `${unsafePath} does not resolve in the image: ${cause.message}`, {
        path,
        cause,
        hint: "a launch path may not pass through a symlink loop",
      });
    }
    throw cause;
  }
}

/**
 * The launch checked against the tree, every problem in order (the workdir,
 * then the program). The workdir must be a directory of the tree itself:
 * missing, it would be created by some runtimes and refused by others; reached
 * through a symlink, it would depend on where the link points at run time.
 */
export async function launchTreeProblems(tree: CanonicalTree, launch: Launch, workdirFromSpec: boolean): Promise<CairnError[]> {
  const out: CairnError[] = [];
  const wdPath = workdirFromSpec ? "/source/oci/launch/workdir" : "/config/config/WorkingDir";
  const wd = tree.get(launch.workdir);
  if (wd?.type !== "dir") {
    const through = wd?.type === "symlink" || (wd === undefined && (await resolveLaunchPath(tree, launch.workdir, wdPath)) !== undefined);
    const what = through ? "is reached through a symlink" : wd === undefined ? "is missing" : "is not a directory";
    out.push(
      new CairnError("LAUNCH_INVALID", `the working directory ${launch.workdir} ${what} in the image`, {
        path: wdPath,
        hint: "the working directory must be a directory the layers create, named by its own path (no symlink on the way)",
      }),
    );
  }
  // No shell, no PATH: the program must be a regular file with an execute bit, in the image.
  const program = await resolveLaunchPath(tree, launch.argv[0]!, "/config/config/Entrypoint");
  if (program?.type !== "file" || (program.mode & 0o111) === 0) {
    out.push(
      new CairnError("LAUNCH_INVALID", `the program ${launch.argv[0]} is not an executable file in the image`, {
        path: "/config/config/Entrypoint",
        hint: "Entrypoint (or Cmd) must name an executable file the layers create, by absolute path",
      }),
    );
  }
  return out;
}

/** What a derivation listed besides the tree: members left out or changed by a policy. */
export interface PolicyListing {
  readonly skipped: readonly SkippedMember[];
  readonly droppedXattrs: readonly DroppedXattrs[];
}

async function deriveFromSource(
  spec: WorkloadSpec,
  src: OciSource,
  sink: ContentSink,
  purpose: DeriveFor,
  copies?: ReadonlyMap<number, number>,
  progress?: Progress,
): Promise<{ derived: Derived; listing: PolicyListing }> {
  if (spec.source.kind !== "oci") throw new CairnError("WORKLOAD_SPEC_INVALID", "not an OCI spec", { path: "/source" });
  // Launch first: a root or shell-form image is refused before any layer is expanded.
  const launch = launchFromOci(ociLaunchWithSpec(src.launch, spec.source.launch));
  const total = src.layers.reduce((n, l) => n + l.size, 0);
  const { tree, skipped, droppedXattrs } = await applyLayers({
    layers: copies === undefined ? src.layers : src.layers.map((l) => (copies.has(l.index) ? { ...l, copyFd: copies.get(l.index) } : l)),
    policy: spec.policy,
    limits: spec.limits,
    sink,
    // verify reads the store's files, assembly the user's layout unstaged: either way every byte is re-hashed as read
    recheckStored: purpose === "verify" || copies !== undefined,
    // phase "apply layers": compressed bytes read of all layers, on each chunk
    onProgress: progress && ((p) => progress({ phase: "apply layers", done: p.compressedBytes, total, unit: "bytes" })),
  });
  const problems = await launchTreeProblems(tree, launch, spec.source.launch?.workdir !== undefined);
  if (problems.length > 0) throw problems[0];
  const derived = finishDerivation({ spec, tree, launch, source: { kind: "oci", manifest: src.manifest.digest }, raw: rawRefs(src) });
  return { derived, listing: { skipped, droppedXattrs } };
}

/**
 * Assembly: reads the user's layout, derives, and adopts the raw objects.
 * Each layer blob is read once: opened (not staged), re-hashed as the inflate
 * thread reads it, and written by that same read into a private copy in the
 * store's staging (created here, exclusively, 0600); a copy is adopted only
 * after the whole derivation succeeded, so it holds exactly the bytes that
 * were hashed and applied, and is removed on any refusal.
 */
export async function assembleOci(
  spec: WorkloadSpec,
  layoutDir: string,
  store: Store,
  report: Reporter,
  /** A pack of the same name already stored is compared with the written bytes (and replaced if it differs) instead of kept. */
  checkExisting = false,
): Promise<DerivedOci & { readonly contents: FinishedPack }> {
  if (spec.source.kind !== "oci") throw new CairnError("WORKLOAD_SPEC_INVALID", "not an OCI spec", { path: "/source" });
  const staging = join(store.stagingDir, "oci");
  const src = await readOciSource({
    layoutDir,
    manifestDigest: spec.source.manifest,
    stagingDir: staging,
    limits: spec.limits,
    platform: spec.policy.platform ?? "refuse",
    stageLayers: false,
  });
  // the first layer of each digest is copied as it is read (a layout may name one blob twice)
  const copies = new Map<Sha256Digest, { path: string; fd: number | undefined; index: number }>();
  let adopted = false;
  try {
    for (const l of src.layers) {
      if (copies.has(l.digest)) continue;
      const path = join(staging, `layer-${l.index}.copy`);
      copies.set(l.digest, { path, fd: undefined, index: l.index });
      copies.get(l.digest)!.fd = createExclusive(path, 0o600);
    }
    const total = src.layers.reduce((n, l) => n + l.size, 0);
    report.log?.(`applying ${src.layers.length} layer(s), ${total} bytes compressed`);
    const fds = new Map([...copies.values()].map((c) => [c.index, c.fd!]));
    const packed = await deriveAndPack(spec, src, store, "assemble", checkExisting, report.progress, fds);
    for (const c of copies.values()) closeCopy(c);
    for (const o of [src.manifest, src.config]) store.put("objects", o.bytes);
    for (const [digest, c] of copies) store.adopt("objects", c.path, digest, src.layers[c.index]!.size);
    adopted = true;
    return packed;
  } finally {
    for (const c of copies.values()) {
      closeCopy(c);
      if (!adopted) rmSync(c.path, { force: true });
    }
    await src.close();
  }
}

function closeCopy(c: { fd: number | undefined }): void {
  if (c.fd !== undefined) closeSync(c.fd);
  c.fd = undefined;
}

/**
 * A reader of raw OCI objects from the store, restricted to the lock's raw
 * closure: anything the lock does not name is missing, so verify cannot be
 * steered to other store content. The top-level files are cairn's one-entry
 * selection index for the lock's manifest, written to private staging (`top`).
 */
function storeReader(lock: WorkloadLock, store: Store, top: string): OciObjectReader {
  const manifest = lock.raw.find((x) => x.role === "manifest");
  if (manifest === undefined) throw new CairnError("WORKLOAD_MISMATCH", "the lock's raw closure has no manifest", { path: "/raw" });
  const docs = selectionDocuments(manifest);
  const named = new Set(lock.raw.filter((r) => r.role === "manifest" || r.role === "config" || r.role === "layer").map((r) => r.digest));
  // no-follow and non-blocking: a store file swapped for a symlink or a FIFO after `require` is refused, never waited on
  const openFile = async (path: string, locator: string): Promise<OpenedFile> => {
    let handle: FileHandle;
    try {
      handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (cause) {
      throw new CairnError("STORE_CORRUPT", `${locator} cannot be opened as a regular file`, { path: locator, cause });
    }
    const st = await handle.stat();
    if (!st.isFile()) {
      await handle.close();
      throw new CairnError("STORE_CORRUPT", `${locator} is not a regular file`, { path: locator });
    }
    return { handle, size: st.size, locator };
  };
  const openObject = async (ref: { digest: Sha256Digest; size: number }, locator: string): Promise<OpenedFile> => {
    store.require("objects", ref.digest, ref.size);
    return openFile(store.pathOf("objects", ref.digest), locator);
  };
  return {
    async openTop(name) {
      const path = join(top, name);
      writeFileAtomic(path, name === "index.json" ? docs.index : docs.ociLayout, { mode: 0o600, durable: false });
      return openFile(path, `selection ${name}`);
    },
    async openBlob(digest, path) {
      const ref = lock.raw.find((r) => r.digest === digest);
      if (!named.has(digest) || ref === undefined) {
        throw new CairnError("OCI_MISSING_BLOB", `blob ${digest} is not in the lock's raw closure`, { path });
      }
      return openObject(ref, `store blob ${digest}`);
    },
    async close() {},
  };
}

/**
 * Verification: the selected graph reparsed from stored raw objects, layers
 * rechecked against DiffIDs, tree rebuilt, and the stored content pack
 * checked against the rebuilt index. Only when the pack is missing or differs
 * are the layers applied a second time, writing a new pack that replaces it.
 */
export async function verifyOci(spec: WorkloadSpec, lock: WorkloadLock, storeOrReader: Store | ReadOnlyStore, progress?: Progress): Promise<DerivedOci> {
  if (spec.source.kind !== "oci") throw new CairnError("WORKLOAD_SPEC_INVALID", "not an OCI spec", { path: "/source" });
  const readOnly = "readOnly" in storeOrReader ? storeOrReader : undefined;
  const store = "readOnly" in storeOrReader ? storeOrReader.reader : storeOrReader;
  // a read-only store has no staging: the selection index and the OCI reader's staging go to a private temporary directory
  const scratch = readOnly !== undefined ? mkdtempSync(join(tmpdir(), "cairn-verify-")) : undefined;
  const stagingDir = scratch ?? store.stagingDir;
  try {
    return await verifyOciIn(spec, lock, store, stagingDir, readOnly, progress);
  } finally {
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  }
}

/** A store verify may read but not write (read-only media, or not this user's to write): `readOnly` says why. */
export interface ReadOnlyStore {
  readonly reader: Store;
  readonly readOnly: string;
}

async function verifyOciIn(
  spec: WorkloadSpec,
  lock: WorkloadLock,
  store: Store,
  stagingDir: string,
  readOnly: ReadOnlyStore | undefined,
  progress: Progress | undefined,
): Promise<DerivedOci> {
  if (spec.source.kind !== "oci") throw new CairnError("WORKLOAD_SPEC_INVALID", "not an OCI spec", { path: "/source" });
  const top = mkdtempSync(join(stagingDir, "selection-"));
  let src: OciSource;
  try {
    src = await readOciSource({
      reader: storeReader(lock, store, top),
      manifestDigest: spec.source.manifest,
      stagingDir: join(stagingDir, "oci"),
      limits: spec.limits,
      stageLayers: false,
    });
  } finally {
    rmSync(top, { recursive: true, force: true });
  }
  try {
    // the pack recorded for the derived entry is compared as the layers stream (a hint: it must turn out to be the rebuilt one)
    const check = new PackCheck(store, store.packOf(lock.derived.digest));
    try {
      const { derived, listing } = await deriveFromSource(spec, src, packSink(check), "verify", undefined, progress);
      const contents = check.finish();
      if (contents !== undefined) return { derived, listing, contents };
    } finally {
      check.abort();
    }
    if (readOnly !== undefined)
      throw new CairnError(
        "IO_ERROR",
        `the content pack of ${lock.derived.digest} is missing or differs from the rebuilt one, and cannot be repaired: ${readOnly}`,
        {
          path: "/derived",
          hint: "verify this lock on a writable copy of the store (it rewrites the pack), or assemble again",
        },
      );
    return { ...(await deriveAndPack(spec, src, store, "verify", true, progress)), repaired: true };
  } catch (e) {
    throw await storedLayerFirst(src, e);
  } finally {
    await src.close();
  }
}

/**
 * The refusal verify reports when deriving from unstaged layers failed: a
 * stored layer that does not match its digest, first in manifest order, as
 * when every layer was hashed before any was read (DIGEST_MISMATCH), else
 * the failure itself. A changed layer byte mostly breaks gunzip or the tar
 * gate before the end of the blob, where its digest is checked; this pass
 * over the layers runs only on that failure path.
 */
async function storedLayerFirst(src: OciSource, failure: unknown): Promise<unknown> {
  for (const l of src.layers) {
    let actual: Sha256Digest;
    try {
      actual = await hashFile(l.path, l.size);
    } catch {
      continue; // unreadable now: the original failure stands
    }
    if (actual !== l.digest) {
      return new CairnError("DIGEST_MISMATCH", `stored layer ${l.digest} does not match its descriptor digest`, {
        path: `/layers/${l.index}`,
        hint: `expected ${l.digest}, computed ${actual}`,
        cause: failure,
      });
    }
  }
  return failure;
}

/** sha256 of a file's first `size` + 1 bytes (one more than expected: a grown file does not match, and is not read on). */
async function hashFile(path: string, size: number): Promise<Sha256Digest> {
  const h = new Sha256Hasher();
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20, start: 0, end: size })) h.update(chunk as Buffer);
  return h.digest();
}
