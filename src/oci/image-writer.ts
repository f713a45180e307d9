/**
 * cairn's own OCI image layout writer: one image, written so that the same
 * inputs give the same bytes on every host. The manifest digest is what a
 * lock export promises to be stable, so nothing host-dependent may reach a
 * document:
 * - every JSON document is the JCS (RFC 8785) encoding of a plain model, so
 *   key order and number form do not depend on the writer's engine;
 * - the config has no `created` time and no `history` (the clock and the
 *   builder's identity would otherwise enter the image);
 * - file and directory modes are set explicitly (0644, 0755), never left to
 *   the umask;
 * - nothing reads the locale, the time zone or directory enumeration order.
 *
 * What it writes it checks first, as go-containerregistry's `validate` does:
 * each document against the image-spec schema, and each layer's bytes against
 * the digest and size its descriptor will claim (a caller's wrong digest
 * would otherwise publish a layout no reader accepts).
 *
 * The layout appears atomically or not at all: it is written into a private
 * sibling directory, fsynced, and renamed onto the target, which must not
 * exist yet (an existing directory is never merged into or replaced). A
 * writer killed midway leaves only that sibling, which the next writer of
 * the same name removes once its pid is gone.
 */
import { chmodSync, closeSync, copyFileSync, existsSync, fstatSync, lstatSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import {
  CairnError,
  canonicalBytes,
  fsyncDir,
  checkLimit,
  ioError,
  openForRead,
  makeDirs,
  removeAbandonedSiblings,
  readFullyAt,
  sha256,
  Sha256Hasher,
  tempSibling,
  writeFileAtomic,
  type JsonModel,
  type Sha256Digest,
} from "../core/index.ts";
import { OCI_CONFIG, OCI_INDEX, type OCI_LAYER_GZIP, type OCI_LAYER_TAR, OCI_MANIFEST } from "./media-types.ts";
import { checkRefName, REF_NAME_ANNOTATION } from "./ref-name.ts";
import { validateOciDocument, type OciDocumentKind } from "./schemas.ts";

/** One layer to write: its blob (bytes in memory, or a verified private file to copy) and the digests it must have. */
export interface LayoutLayerInput {
  readonly mediaType: typeof OCI_LAYER_GZIP | typeof OCI_LAYER_TAR;
  readonly digest: Sha256Digest;
  readonly size: number;
  /** sha256 of the uncompressed tar (the config's `rootfs.diff_ids` entry). */
  readonly diffId: Sha256Digest;
  readonly blob: { readonly bytes: Uint8Array } | { readonly path: string };
}

/** The launch part of the image config; every field optional, as in the image spec. */
export interface LayoutLaunchConfig {
  readonly User?: string;
  readonly Env?: readonly string[];
  readonly Entrypoint?: readonly string[];
  readonly Cmd?: readonly string[];
  readonly WorkingDir?: string;
}

export interface LayoutImageInput {
  readonly config: LayoutLaunchConfig;
  /** Base first. */
  readonly layers: readonly LayoutLayerInput[];
  /** Image manifest annotations (sorted by JCS; the values are part of the manifest digest). */
  readonly annotations: Readonly<Record<string, string>>;
  /** `org.opencontainers.image.ref.name` on the index entry (the image spec's ref grammar, ref-name.ts); not part of the manifest digest. */
  readonly refName?: string;
  /** `private`: 0700 directories and 0600 files (the config may hold environment values); `public`: 0755 and 0644. */
  readonly access: keyof typeof MODES;
}

export interface WrittenLayout {
  readonly dir: string;
  readonly manifest: { readonly digest: Sha256Digest; readonly size: number };
  readonly config: { readonly digest: Sha256Digest; readonly size: number };
  readonly layers: number;
  /** Sum of the layer blob sizes (compressed, as stored). */
  readonly layerBytes: number;
}

/** oci.max_layer_copy_bytes: a layer given by path is re-read once to check the copy; bounded like any read. */
const MAX_LAYER_BYTES = 64 * 1024 * 1024 * 1024;

/** Modes are set explicitly (never left to the umask); a private layout is owner-only, as a layout holding environment values must be. */
const MODES = { public: { file: 0o644, dir: 0o755 }, private: { file: 0o600, dir: 0o700 } } as const;

/** The config document: platform, launch, rootfs; no `created`, no `history`, no `author`. */
export function configDocument(input: LayoutImageInput): Record<string, unknown> {
  const c: Record<string, unknown> = {};
  const l = input.config;
  if (l.User !== undefined) c.User = l.User;
  if (l.Env !== undefined) c.Env = [...l.Env];
  if (l.Entrypoint !== undefined) c.Entrypoint = [...l.Entrypoint];
  if (l.Cmd !== undefined) c.Cmd = [...l.Cmd];
  if (l.WorkingDir !== undefined) c.WorkingDir = l.WorkingDir;
  return {
    architecture: "amd64",
    os: "linux",
    config: c,
    rootfs: { type: "layers", diff_ids: input.layers.map((x) => x.diffId) },
  };
}

/** The index entry that selects an image for cairn: an image manifest, linux/amd64 (the only platform cairn runs). */
function selectingEntry(manifest: { readonly digest: Sha256Digest; readonly size: number }): Record<string, unknown> {
  return { mediaType: OCI_MANIFEST, digest: manifest.digest, size: manifest.size, platform: { architecture: "amd64", os: "linux" } };
}

/**
 * The two top-level files of the smallest layout that selects `manifest`:
 * `oci-layout` and an `index.json` with the one selecting entry. A workload
 * does not pin the user's own `index.json` (its tags, annotations and other
 * entries do not affect what runs, and `umoci tag` or a `skopeo` copy rewrites
 * them); verification re-reads the stored image through these instead.
 */
export function selectionDocuments(manifest: { readonly digest: Sha256Digest; readonly size: number }): { ociLayout: Buffer; index: Buffer } {
  return {
    ociLayout: checked("layout", { imageLayoutVersion: "1.0.0" }, "oci-layout"),
    index: checked("index", { schemaVersion: 2, mediaType: OCI_INDEX, manifests: [selectingEntry(manifest)] }, "index.json"),
  };
}

function checked(kind: OciDocumentKind, doc: Record<string, unknown>, what: string): Buffer {
  const bytes = canonicalBytes(doc);
  // The model is ours, but a caller's value (an annotation, an Env entry) could still break the schema: refuse before writing.
  validateOciDocument(kind, JSON.parse(bytes.toString("utf8")) as JsonModel, what);
  return bytes;
}

function blobPath(dir: string, digest: Sha256Digest): string {
  return join(dir, "blobs", "sha256", digest.slice("sha256:".length));
}

function writeLayer(dir: string, l: LayoutLayerInput, i: number, mode: number): void {
  const target = blobPath(dir, l.digest);
  if (existsSync(target)) return; // the same blob twice in one image: one file, already checked
  const where = `/layers/${i}`;
  if ("bytes" in l.blob) {
    checkBlob(Buffer.from(l.blob.bytes.buffer, l.blob.bytes.byteOffset, l.blob.bytes.byteLength), l, where);
    writeFileAtomic(target, l.blob.bytes, { mode, overwrite: false });
    return;
  }
  try {
    copyFileSync(l.blob.path, target);
    chmodSync(target, mode);
  } catch (cause) {
    throw ioError(l.blob.path, cause);
  }
  // the copy is what the layout holds: check it, not the source (in chunks: a layer blob can be gigabytes)
  checkCopied(target, l, where);
}

/** Hashes the copied blob at `target` 1 MiB at a time and checks it against the descriptor, as checkBlob does for bytes. */
function checkCopied(target: string, l: LayoutLayerInput, where: string): void {
  const fd = openForRead(target);
  try {
    const size = fstatSync(fd).size;
    checkLimit("oci.max_layer_copy_bytes", size, MAX_LAYER_BYTES, target, "bytes");
    if (size !== l.size) throw new CairnError("SIZE_MISMATCH", `layer ${where} is ${size} bytes, its descriptor says ${l.size}`, { path: where });
    const h = new Sha256Hasher();
    const buf = Buffer.allocUnsafe(1024 * 1024);
    for (let off = 0; off < size; ) {
      const n = readFullyAt(fd, buf.subarray(0, Math.min(buf.length, size - off)), off);
      if (n === 0) throw new CairnError("SIZE_MISMATCH", `layer ${where} shrank while it was checked`, { path: where });
      h.update(buf.subarray(0, n));
      off += n;
    }
    const d = h.digest();
    if (d !== l.digest) throw new CairnError("DIGEST_MISMATCH", `layer ${where} hashes to ${d}, its descriptor says ${l.digest}`, { path: where });
  } finally {
    closeSync(fd);
  }
}

function checkBlob(bytes: Buffer, l: LayoutLayerInput, where: string): void {
  if (bytes.length !== l.size) throw new CairnError("SIZE_MISMATCH", `layer ${where} is ${bytes.length} bytes, its descriptor says ${l.size}`, { path: where });
  const d = sha256(bytes);
  if (d !== l.digest) throw new CairnError("DIGEST_MISMATCH", `layer ${where} hashes to ${d}, its descriptor says ${l.digest}`, { path: where });
}

/**
 * Writes `image` as a new OCI image layout at `outDir` (which must not
 * exist). Returns the manifest and config descriptors.
 */
export function writeOciLayout(outDir: string, image: LayoutImageInput): WrittenLayout {
  if (existsSync(outDir) || isDanglingLink(outDir)) {
    throw new CairnError("USAGE", `${outDir} already exists; the layout is written to a new directory`, {
      path: outDir,
      hint: "choose a path that does not exist yet (an existing layout is never merged into)",
    });
  }
  const configBytes = checked("config", configDocument(image), "the exported config");
  const config = { mediaType: OCI_CONFIG, digest: sha256(configBytes), size: configBytes.length };
  const manifestDoc: Record<string, unknown> = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    config,
    layers: image.layers.map((l) => ({ mediaType: l.mediaType, digest: l.digest, size: l.size })),
  };
  if (Object.keys(image.annotations).length > 0) manifestDoc.annotations = { ...image.annotations };
  const manifestBytes = checked("manifest", manifestDoc, "the exported manifest");
  const manifest = { digest: sha256(manifestBytes), size: manifestBytes.length };
  const entry: Record<string, unknown> = {
    mediaType: OCI_MANIFEST,
    digest: manifest.digest,
    size: manifest.size,
    platform: { architecture: "amd64", os: "linux" },
  };
  if (image.refName !== undefined) entry.annotations = { [REF_NAME_ANNOTATION]: checkRefName(image.refName, "/refName") };
  const indexBytes = checked("index", { schemaVersion: 2, mediaType: OCI_INDEX, manifests: [entry] }, "the exported index.json");
  const layoutBytes = selectionDocuments(manifest).ociLayout;

  const { file: FILE_MODE, dir: DIR_MODE } = MODES[image.access];
  removeAbandonedSiblings(outDir); // a writer of this name killed midway left its staging
  const staging = tempSibling(outDir);
  try {
    makeDirs(join(staging, "blobs", "sha256")); // not mkdir's recursive: it spins forever under /proc
    for (const d of [staging, join(staging, "blobs"), join(staging, "blobs", "sha256")]) chmodSync(d, DIR_MODE);
    for (const [i, l] of image.layers.entries()) writeLayer(staging, l, i, FILE_MODE);
    writeFileAtomic(blobPath(staging, config.digest), configBytes, { mode: FILE_MODE });
    writeFileAtomic(blobPath(staging, manifest.digest), manifestBytes, { mode: FILE_MODE });
    writeFileAtomic(join(staging, "oci-layout"), layoutBytes, { mode: FILE_MODE });
    writeFileAtomic(join(staging, "index.json"), indexBytes, { mode: FILE_MODE });
    fsyncDir(join(staging, "blobs", "sha256"));
    fsyncDir(staging);
    renameSync(staging, outDir);
    fsyncDir(dirname(outDir));
  } catch (e) {
    rmSync(staging, { recursive: true, force: true });
    if (e instanceof CairnError) throw e;
    throw ioError(outDir, e);
  }
  return {
    dir: outDir,
    manifest,
    config: { digest: config.digest, size: config.size },
    layers: image.layers.length,
    layerBytes: image.layers.reduce((n, l) => n + l.size, 0),
  };
}

function isDanglingLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
