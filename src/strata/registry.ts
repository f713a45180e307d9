/**
 * The local directory registry, cairn's embedded default. Format
 * (`cairn.registry/2`):
 *
 *   REG/cairn-registry.json                   {"format":"cairn.registry/2"}
 *   REG/blobs/sha256/<64 hex>                  layer blobs (tar+gzip), named by their digest
 *   REG/layers/<layer id>.json                 the seed's LayerManifest (Strata reads it)
 *   REG/layers/<layer id>.json.dsse            DSSE envelope; payload = JCS of cairn's layer manifest
 *   REG/formations/<name>-<version>.json       the seed's Formation
 *   REG/formations/<name>-<version>.json.dsse  DSSE envelope; payload = JCS of cairn's formation record
 *
 * Each document is the one its signed record gives (registry-documents.ts),
 * checked on every read. (`cairn.registry/1` kept cairn's records alone, as
 * `layers/<id>.json`; it is refused by its marker: publish its layers again.)
 *
 * Publication is atomic and ordered: a blob is written to a temporary sibling,
 * fsynced and linked into place (never replacing an existing blob), then the
 * signature envelope, then the seed document, each the same way (the store's
 * write-once `publishBytes`, store/publish.ts). A reader lists documents, so
 * it never sees one whose signature or blob is missing or partial; a crash
 * leaves at most a hidden temporary file (names starting with "."), which
 * readers ignore, or a signature with no document yet, which is not listed.
 * Publishing an id again is allowed only with identical bytes.
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
import { FORMATION_TYPE, formationKey, formationToModel, parseFormation, providesUnion, type Formation } from "./formation-document.ts";
import { capabilityString } from "./capability.ts";
import { SIGNATURE_SUFFIX, checkDocument, formationDocumentBytes, layerDocumentBytes } from "./registry-documents.ts";

export const REGISTRY_FORMAT = "cairn.registry/2";
/** registry.max_envelope_bytes: the largest manifest or formation envelope read, and the largest seed document beside one. */
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

export type Awaitable<T> = T | Promise<T>;

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

/**
 * Whether a formation's members are the published layers it pins
 * (DIGEST_MISMATCH naming the member otherwise), and its members' names and
 * versions and its `provides` are theirs (LAYER_INVALID): the seed's
 * Formation beside the record is written from those.
 */
export function checkFormationMembers(formation: Formation, readLayer: (id: string) => SignedDocument<LayerManifest>): void {
  const members = formation.layers.map((m, i) => {
    const layer = readLayer(m.id).value;
    if (layer.sha256 !== m.sha256) {
      throw new CairnError("DIGEST_MISMATCH", `formation member ${m.id} pins ${m.sha256}, the published layer is ${layer.sha256}`, {
        path: `/layers/${i}/sha256`,
      });
    }
    if (layer.name !== m.name || layer.version !== m.version) {
      throw new CairnError("LAYER_INVALID", `formation member ${m.id} is named ${m.name}@${m.version}, the published layer is ${layer.name}@${layer.version}`, {
        path: `/layers/${i}/name`,
      });
    }
    return layer;
  });
  const union = providesUnion(members).map(capabilityString);
  const provides = formation.provides.map(capabilityString);
  if (union.join("\n") !== provides.join("\n")) {
    throw new CairnError("LAYER_INVALID", `formation provides [${provides.join(", ")}], its members provide [${union.join(", ")}]`, { path: "/provides" });
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

  /** The DSSE envelope beside layer `id`'s seed document. */
  layerSignaturePath(id: string): string {
    return `${this.layerPath(id)}${SIGNATURE_SUFFIX}`;
  }

  formationSignaturePath(name: string, version: string): string {
    return `${this.formationPath(name, version)}${SIGNATURE_SUFFIX}`;
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

  /** Publishes a blob, its manifest's signature, then the seed's manifest (what listing finds), in that order. Returns the envelope written. */
  publishLayer(blob: BlobSource, manifest: LayerManifest, keys: readonly SigningKey[]): SignedDocument<LayerManifest> {
    const doc = signLayer(blob, manifest, keys);
    const what = `layer ${manifest.id}`;
    this.publishOnce(this.blobPath(manifest.sha256), blob, `blob ${manifest.sha256}`);
    this.publishOnce(this.layerSignaturePath(manifest.id), doc.envelopeBytes, `${what}'s signature`);
    this.publishOnce(this.layerPath(manifest.id), layerDocumentBytes(doc.value, doc.envelope), what);
    return doc;
  }

  publishFormation(formation: Formation, keys: readonly SigningKey[]): SignedDocument<Formation> {
    checkFormationMembers(formation, (id) => this.readLayer(id));
    const doc = signFormation(formation, keys);
    const what = `formation ${formation.name}@${formation.version}`;
    this.publishOnce(this.formationSignaturePath(formation.name, formation.version), doc.envelopeBytes, `${what}'s signature`);
    this.publishOnce(this.formationPath(formation.name, formation.version), formationDocumentBytes(doc.value, doc.envelope), what);
    return doc;
  }

  layerEnvelope(id: string): Buffer | undefined {
    const path = this.layerSignaturePath(id);
    return existsSync(path) ? readBounded(path, MAX_ENVELOPE_BYTES, "registry.max_envelope_bytes") : undefined;
  }

  formationEnvelope(name: string, version: string): Buffer | undefined {
    const path = this.formationSignaturePath(name, version);
    return existsSync(path) ? readBounded(path, MAX_ENVELOPE_BYTES, "registry.max_envelope_bytes") : undefined;
  }

  blobWhere(digest: Sha256Digest): string {
    return this.blobPath(digest);
  }

  /** A seed document and its signature beside it, read and bound (registry-documents.ts). */
  private readPair<T>(
    path: string,
    parse: (envelope: Buffer, where: string) => SignedDocument<T>,
    expected: (d: SignedDocument<T>) => Buffer,
  ): SignedDocument<T> {
    const document = readBounded(path, MAX_ENVELOPE_BYTES, "registry.max_envelope_bytes");
    const sigPath = `${path}${SIGNATURE_SUFFIX}`;
    // cairn writes the signature first, so a document without one was not published by cairn (or its signature was removed).
    if (!existsSync(sigPath)) {
      throw new CairnError("REGISTRY_INVALID", `${path} has no signature beside it (${SIGNATURE_SUFFIX})`, {
        path,
        hint: "publish the document again with cairn; a registry document without cairn's signature is not read",
      });
    }
    const doc = parse(readBounded(sigPath, MAX_ENVELOPE_BYTES, "registry.max_envelope_bytes"), sigPath);
    checkDocument(document, expected(doc), path);
    return doc;
  }

  readLayer(id: string): SignedDocument<LayerManifest> {
    return this.readPair(
      this.layerPath(id),
      (bytes) => this.layerFromBytes(id, bytes),
      (d) => layerDocumentBytes(d.value, d.envelope),
    );
  }

  /** Parses envelope bytes the caller already read (and, for verify, already checked against a pinned digest). */
  layerFromBytes(id: string, bytes: Buffer): SignedDocument<LayerManifest> {
    return parseLayerEnvelope(id, bytes, this.layerSignaturePath(id));
  }

  readFormation(name: string, version: string): SignedDocument<Formation> {
    const path = this.formationPath(name, version);
    const doc = this.readFormationAt(path);
    if (doc.value.name !== name || doc.value.version !== version) throw new CairnError("REGISTRY_INVALID", `${path} holds another formation`, { path });
    return doc;
  }

  private readFormationAt(path: string): SignedDocument<Formation> {
    return this.readPair(
      path,
      (bytes, where) => parseFormationEnvelope(bytes, where),
      (d) => formationDocumentBytes(d.value, d.envelope),
    );
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
    return this.listNames("formations").map((key) => this.readFormationAt(join(this.root, "formations", `${safeComponent(key)}.json`)));
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
