/**
 * The local directory registry, cairn's embedded default. Format
 * (`cairn.registry/1`):
 *
 *   REG/cairn-registry.json            {"format":"cairn.registry/1"}
 *   REG/blobs/sha256/<64 hex>           layer blobs (tar+gzip), named by their digest
 *   REG/layers/<layer id>.json          DSSE envelope; payload = JCS of the layer manifest
 *   REG/formations/<name>-<version>.json DSSE envelope; payload = JCS of the formation
 *
 * Publication is atomic and ordered: a blob is written to a temporary sibling,
 * fsynced and linked into place (never replacing an existing blob), then the
 * manifest envelope is written the same way (the store's write-once
 * `publishBytes`, store/publish.ts). A reader therefore never sees a
 * manifest whose blob is missing or partial; a crash leaves at most a hidden
 * temporary file (names starting with "."), which readers ignore. Publishing
 * an id again is allowed only with identical bytes.
 *
 * Every name that becomes a path goes through `safeComponent` or
 * `digestComponents`, because `path.join` resolves `..` instead of refusing it.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  CairnError,
  canonicalBytes,
  checkLimit,
  FIXED_LIMIT_HINT,
  digestComponents,
  ensureDirsIn,
  hasDirIn,
  ioError,
  openRoot,
  parseEnvelope,
  parseJsonBytes,
  readFileBounded,
  safeComponent,
  sha256,
  signEnvelope,
  type DsseEnvelope,
  type RootKind,
  type SigningKey,
  type Sha256Digest,
} from "../core/index.ts";
import { publishBytes, publishFile } from "../store/index.ts";
import { checkBlobFile, copyVerified, type BlobStaging } from "./blob-staging.ts";
import { LAYER_MANIFEST_TYPE, layerManifestToModel, parseLayerManifest, type LayerManifest } from "./layer-manifest.ts";
import { FORMATION_TYPE, formationKey, formationToModel, parseFormation, type Formation } from "./formation-document.ts";

export const REGISTRY_FORMAT = "cairn.registry/1";
/** registry.max_envelope_bytes: the largest manifest or formation envelope read. */
export const MAX_ENVELOPE_BYTES = 64 * 1024 * 1024;
/** registry.max_blob_bytes: the largest layer blob read. */
export const MAX_BLOB_BYTES = 8 * 1024 * 1024 * 1024;

/** The registry root's marker, `cairn-registry.json` (core/owned-root.ts). */
export const REGISTRY_ROOT: RootKind = {
  what: "cairn registry",
  format: REGISTRY_FORMAT,
  marker: "cairn-registry.json",
  mode: 0o755,
  missing: "REGISTRY_INVALID",
  foreign: "REGISTRY_INVALID",
  hint: "create one with `cairn layer build ... --registry DIR --init-registry` (in a new or empty directory)",
};

const REGISTRY_DIRS = ["blobs", "blobs/sha256", "layers", "formations"] as const;

export interface SignedDocument<T> {
  readonly value: T;
  readonly envelope: DsseEnvelope;
  /** sha256 of the envelope file's bytes: the signature reference a lockfile records. */
  readonly envelopeSha256: Sha256Digest;
  /** The envelope file's bytes, exactly as read or written (a lockfile embeds them for offline audit). */
  readonly envelopeBytes: Buffer;
  /** sha256 of the signed payload (the canonical manifest bytes). */
  readonly payloadSha256: Sha256Digest;
}

/** Reads a registry file of at most `max` bytes, naming `limit` when it is larger (registry limits are fixed). */
export function readBounded(path: string, max: number, limit: string): Buffer {
  return readFileBounded(path, max, limit, { notRegular: "REGISTRY_INVALID", limitHint: FIXED_LIMIT_HINT });
}

type Awaitable<T> = T | Promise<T>;

/** A layer blob to publish: its bytes in memory, or a complete file (a blob streamed by `layer build` or `layer fold`), copied in chunks. */
export type BlobSource = Uint8Array | { readonly path: string };

/**
 * What the resolver, `lock verify`, `lock export`, `formation build` and
 * `search` need of a layer registry, whether a local directory
 * (`LocalRegistry`) or an OCI registry (`OciLayerRegistry`,
 * registry-oci.ts). Documents are read from what was opened (an OCI registry
 * is a snapshot taken once, at open); blobs may need the network, so reading
 * one is awaited. Every read is bounded and digest-checked by the
 * implementation before its bytes are returned.
 */
export interface LayerRegistry {
  /** How the registry was named (a directory or `oci://HOST/REPO`), for messages. */
  readonly location: string;
  listLayers(): SignedDocument<LayerManifest>[];
  listFormations(): SignedDocument<Formation>[];
  readLayer(id: string): SignedDocument<LayerManifest>;
  readFormation(name: string, version: string): SignedDocument<Formation>;
  /** Parses envelope bytes the caller already read (and checked against a pinned digest). */
  layerFromBytes(id: string, bytes: Buffer): SignedDocument<LayerManifest>;
  /** The bytes of layer `id`'s manifest envelope, bounded; undefined when the registry has none. */
  layerEnvelope(id: string): Buffer | undefined;
  formationEnvelope(name: string, version: string): Buffer | undefined;
  /** True when the registry names (or holds) this blob; `checkBlob` and `stageBlob` check its bytes. */
  hasBlob(digest: Sha256Digest): boolean;
  /** Checks the blob's size and digest, reading it in chunks and keeping nothing. */
  checkBlob(digest: Sha256Digest, size: number): Awaitable<void>;
  /**
   * Copies the blob into `staging` (a private file), checking its size and
   * digest as it is copied; returns the copy's path. What commands read
   * (fold, `lock verify --contents`, `lock export`): memory stays one chunk
   * whatever the blob's size.
   */
  stageBlob(digest: Sha256Digest, size: number, staging: BlobStaging): Awaitable<string>;
  /** The whole blob in memory, checked: for small blobs and tests; no command reads a blob this way. */
  readBlob(digest: Sha256Digest, size: number): Awaitable<Buffer>;
  /** Where a blob is, for messages. */
  blobWhere(digest: Sha256Digest): string;
  publishLayer(blob: BlobSource, manifest: LayerManifest, keys: readonly SigningKey[]): Awaitable<SignedDocument<LayerManifest>>;
  publishFormation(formation: Formation, keys: readonly SigningKey[]): Awaitable<SignedDocument<Formation>>;
}

/** Signs a layer manifest as a DSSE envelope, after checking the blob is the one it names. Shared by every registry kind. */
export function signLayer(blob: BlobSource, manifest: LayerManifest, keys: readonly SigningKey[]): SignedDocument<LayerManifest> {
  if (!(blob instanceof Uint8Array)) {
    try {
      checkBlobFile(blob.path, manifest, blob.path);
    } catch (e) {
      if (!(e instanceof CairnError) || (e.code !== "SIZE_MISMATCH" && e.code !== "DIGEST_MISMATCH")) throw e;
      throw new CairnError("DIGEST_MISMATCH", `the blob does not match the manifest: ${e.message}`, { path: "/sha256", cause: e });
    }
  } else if (sha256(blob) !== manifest.sha256 || blob.length !== manifest.size) {
    throw new CairnError(
      "DIGEST_MISMATCH",
      `the blob does not match the manifest: manifest says ${manifest.sha256} (${manifest.size} bytes), the blob is ${sha256(blob)} (${blob.length} bytes)`,
      { path: "/sha256" },
    );
  }
  return signedDocument(manifest, LAYER_MANIFEST_TYPE, canonicalBytes(layerManifestToModel(manifest)), keys);
}

/** Signs a formation as a DSSE envelope. */
export function signFormation(formation: Formation, keys: readonly SigningKey[]): SignedDocument<Formation> {
  return signedDocument(formation, FORMATION_TYPE, canonicalBytes(formationToModel(formation)), keys);
}

function signedDocument<T>(value: T, type: string, payload: Buffer, keys: readonly SigningKey[]): SignedDocument<T> {
  const envelope = signEnvelope(type, payload, keys);
  const envBytes = Buffer.from(`${JSON.stringify(envelope, null, 2)}\n`);
  return { value, envelope, envelopeSha256: sha256(envBytes), envelopeBytes: envBytes, payloadSha256: sha256(payload) };
}

/** Whether a formation's members are the published layers it pins (DIGEST_MISMATCH naming the member otherwise). */
export function checkFormationMembers(formation: Formation, readLayer: (id: string) => SignedDocument<LayerManifest>): void {
  for (const [i, m] of formation.layers.entries()) {
    const layer = readLayer(m.id);
    if (layer.value.sha256 !== m.sha256) {
      throw new CairnError("DIGEST_MISMATCH", `formation member ${m.id} pins ${m.sha256}, the published layer is ${layer.value.sha256}`, {
        path: `/layers/${i}/sha256`,
      });
    }
  }
}

export class LocalRegistry implements LayerRegistry {
  private constructor(readonly root: string) {}

  get location(): string {
    return this.root;
  }

  /**
   * Opens an existing registry: its marker names the format, and its
   * directories are real directories (a symlink planted at `blobs` or
   * `layers` is refused, never followed: core/owned-root.ts).
   */
  static open(root: string): LocalRegistry {
    openRoot(root, REGISTRY_ROOT, { create: false });
    for (const d of REGISTRY_DIRS) hasDirIn(root, d);
    return new LocalRegistry(root);
  }

  /** Creates the registry layout if absent (only in a new, empty or already marked directory), then opens it. */
  static init(root: string): LocalRegistry {
    openRoot(root, REGISTRY_ROOT, { create: true });
    ensureDirsIn(root, REGISTRY_DIRS, 0o755);
    return LocalRegistry.open(root);
  }

  blobPath(digest: Sha256Digest): string {
    const [alg, hex] = digestComponents(digest, "/sha256");
    return join(this.root, "blobs", alg, hex);
  }

  layerPath(id: string): string {
    return join(this.root, "layers", `${safeComponent(id, "/id")}.json`);
  }

  formationPath(name: string, version: string): string {
    return join(this.root, "formations", `${formationKey(name, version)}.json`);
  }

  /**
   * Writes `data` at `path` unless identical bytes are already there; refuses
   * different bytes (the store's write-once publication, also safe against a
   * concurrent publisher of the same name).
   */
  private publishOnce(path: string, data: BlobSource, what: string): void {
    const options = {
      mode: 0o644,
      writeOnce: { code: "REGISTRY_INVALID" as const, what, hint: "publish a new version instead of replacing a published one" },
    };
    if (data instanceof Uint8Array) publishBytes(path, data, options);
    else publishFile(path, data.path, options);
  }

  /** Publishes a blob and its manifest, blob first. Returns the envelope written. */
  publishLayer(blob: BlobSource, manifest: LayerManifest, keys: readonly SigningKey[]): SignedDocument<LayerManifest> {
    const doc = signLayer(blob, manifest, keys);
    this.publishOnce(this.blobPath(manifest.sha256), blob, `blob ${manifest.sha256}`);
    this.publishOnce(this.layerPath(manifest.id), doc.envelopeBytes, `layer ${manifest.id}`);
    return doc;
  }

  publishFormation(formation: Formation, keys: readonly SigningKey[]): SignedDocument<Formation> {
    checkFormationMembers(formation, (id) => this.readLayer(id));
    const doc = signFormation(formation, keys);
    this.publishOnce(this.formationPath(formation.name, formation.version), doc.envelopeBytes, `formation ${formation.name}@${formation.version}`);
    return doc;
  }

  layerEnvelope(id: string): Buffer | undefined {
    const path = this.layerPath(id);
    return existsSync(path) ? readBounded(path, MAX_ENVELOPE_BYTES, "registry.max_envelope_bytes") : undefined;
  }

  formationEnvelope(name: string, version: string): Buffer | undefined {
    const path = this.formationPath(name, version);
    return existsSync(path) ? readBounded(path, MAX_ENVELOPE_BYTES, "registry.max_envelope_bytes") : undefined;
  }

  blobWhere(digest: Sha256Digest): string {
    return this.blobPath(digest);
  }

  private readSigned<T>(path: string, type: string, parse: (m: ReturnType<typeof parseJsonBytes>, src: string) => T): SignedDocument<T> {
    return parseSigned(readBounded(path, MAX_ENVELOPE_BYTES, "registry.max_envelope_bytes"), path, type, parse);
  }

  readLayer(id: string): SignedDocument<LayerManifest> {
    return this.layerFromBytes(id, readBounded(this.layerPath(id), MAX_ENVELOPE_BYTES, "registry.max_envelope_bytes"));
  }

  /** Parses envelope bytes the caller already read (and, for verify, already checked against a pinned digest). */
  layerFromBytes(id: string, bytes: Buffer): SignedDocument<LayerManifest> {
    return parseLayerEnvelope(id, bytes, this.layerPath(id));
  }

  readFormation(name: string, version: string): SignedDocument<Formation> {
    const path = this.formationPath(name, version);
    const doc = this.readSigned(path, FORMATION_TYPE, (m, src) => parseFormation(m, src));
    if (doc.value.name !== name || doc.value.version !== version) throw new CairnError("REGISTRY_INVALID", `${path} holds another formation`, { path });
    return doc;
  }

  private listNames(dir: string): string[] {
    let names: string[];
    try {
      names = readdirSync(join(this.root, dir));
    } catch (cause) {
      throw ioError(join(this.root, dir), cause);
    }
    return names
      .filter((n) => !n.startsWith(".") && n.endsWith(".json"))
      .map((n) => n.slice(0, -5))
      .sort();
  }

  /** Every published layer (manifest parsed, not yet verified). */
  listLayers(): SignedDocument<LayerManifest>[] {
    return this.listNames("layers").map((id) => this.readLayer(id));
  }

  listFormations(): SignedDocument<Formation>[] {
    return this.listNames("formations").map((key) => {
      const path = join(this.root, "formations", `${safeComponent(key)}.json`);
      return this.readSigned(path, FORMATION_TYPE, (m, src) => parseFormation(m, src));
    });
  }

  checkBlob(digest: Sha256Digest, size: number): void {
    const path = this.blobPath(digest);
    checkLimit("registry.max_blob_bytes", size, MAX_BLOB_BYTES, path, "bytes", FIXED_LIMIT_HINT); // the manifest itself asks for too much
    checkBlobFile(path, { sha256: digest, size }, path);
  }

  stageBlob(digest: Sha256Digest, size: number, staging: BlobStaging): string {
    const path = this.blobPath(digest);
    checkLimit("registry.max_blob_bytes", size, MAX_BLOB_BYTES, path, "bytes", FIXED_LIMIT_HINT);
    return copyVerified(path, staging.path(digest.slice("sha256:".length)), { sha256: digest, size }, path);
  }

  /** Reads a blob and checks it against `digest` and `size` before anyone parses it. */
  readBlob(digest: Sha256Digest, size: number): Buffer {
    const path = this.blobPath(digest);
    checkLimit("registry.max_blob_bytes", size, MAX_BLOB_BYTES, path, "bytes", FIXED_LIMIT_HINT); // the manifest itself asks for too much
    let data: Buffer;
    try {
      // at most the size the manifest names: a larger file (another layer's blob put in its place) is a size mismatch, not a limit
      data = readBounded(path, size, "registry.max_blob_bytes");
    } catch (e) {
      if (e instanceof CairnError && e.code === "LIMIT_EXCEEDED")
        throw new CairnError("SIZE_MISMATCH", `blob ${digest} is larger than the ${size} bytes its manifest names`, {
          path,
          hint: "the registry copy was altered or damaged",
        });
      throw e;
    }
    if (data.length !== size) throw new CairnError("SIZE_MISMATCH", `blob ${digest} is ${data.length} bytes, expected ${size}`, { path });
    const found = sha256(data);
    if (found !== digest)
      throw new CairnError("DIGEST_MISMATCH", `blob ${digest} does not match its digest: its bytes hash to ${found}`, {
        path,
        hint: "the registry copy was altered or damaged",
      });
    return data;
  }

  hasBlob(digest: Sha256Digest): boolean {
    try {
      return statSync(this.blobPath(digest)).isFile();
    } catch {
      return false;
    }
  }
}

/** Parses a layer manifest envelope found at `where` (under `id`, when given: REGISTRY_INVALID when it holds another layer). */
export function parseLayerEnvelope(id: string | undefined, bytes: Buffer, where: string): SignedDocument<LayerManifest> {
  const doc = parseSigned(bytes, where, LAYER_MANIFEST_TYPE, (m, src) => parseLayerManifest(m, src));
  if (id !== undefined && doc.value.id !== id) throw new CairnError("REGISTRY_INVALID", `${where} holds layer ${doc.value.id}`, { path: where });
  return doc;
}

/** Parses a formation envelope; the payload type must be a formation's. */
export function parseFormationEnvelope(bytes: Buffer, where: string): SignedDocument<Formation> {
  return parseSigned(bytes, where, FORMATION_TYPE, (m, src) => parseFormation(m, src));
}

function parseSigned<T>(bytes: Buffer, path: string, type: string, parse: (m: ReturnType<typeof parseJsonBytes>, src: string) => T): SignedDocument<T> {
  const envelope = parseEnvelope(parseJsonBytes(bytes, { source: path }));
  if (envelope.payloadType !== type) {
    throw new CairnError("REGISTRY_INVALID", `${path} has payload type ${JSON.stringify(envelope.payloadType)}, expected ${type}`, { path });
  }
  // The payload is parsed only to index the catalog; trust is decided by
  // the attestation stage, which verifies the envelope before a lockfile
  // names this document.
  const payload = Buffer.from(envelope.payload, "base64");
  const value = parse(parseJsonBytes(payload, { source: `${path} payload` }), path);
  return { value, envelope, envelopeSha256: sha256(bytes), envelopeBytes: bytes, payloadSha256: sha256(payload) };
}

/** Exposed for tests: the bytes a manifest's envelope signs. */
export function manifestPayload(m: LayerManifest): Buffer {
  return canonicalBytes(layerManifestToModel(m));
}
