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
import { readdirSync, statSync } from "node:fs";
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
import { publishBytes } from "../store/index.ts";
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

export class LocalRegistry {
  private constructor(readonly root: string) {}

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
  private publishOnce(path: string, data: Uint8Array, what: string): void {
    publishBytes(path, data, {
      mode: 0o644,
      writeOnce: { code: "REGISTRY_INVALID", what, hint: "publish a new version instead of replacing a published one" },
    });
  }

  /** Publishes a blob and its manifest, blob first. Returns the envelope written. */
  publishLayer(blob: Uint8Array, manifest: LayerManifest, keys: readonly SigningKey[]): SignedDocument<LayerManifest> {
    if (sha256(blob) !== manifest.sha256 || blob.length !== manifest.size) {
      throw new CairnError(
        "DIGEST_MISMATCH",
        `the blob does not match the manifest: manifest says ${manifest.sha256} (${manifest.size} bytes), the blob is ${sha256(blob)} (${blob.length} bytes)`,
        { path: "/sha256" },
      );
    }
    const payload = canonicalBytes(layerManifestToModel(manifest));
    const envelope = signEnvelope(LAYER_MANIFEST_TYPE, payload, keys);
    const envBytes = Buffer.from(`${JSON.stringify(envelope, null, 2)}\n`);
    this.publishOnce(this.blobPath(manifest.sha256), blob, `blob ${manifest.sha256}`);
    this.publishOnce(this.layerPath(manifest.id), envBytes, `layer ${manifest.id}`);
    return { value: manifest, envelope, envelopeSha256: sha256(envBytes), envelopeBytes: envBytes, payloadSha256: sha256(payload) };
  }

  publishFormation(formation: Formation, keys: readonly SigningKey[]): SignedDocument<Formation> {
    for (const [i, m] of formation.layers.entries()) {
      const layer = this.readLayer(m.id);
      if (layer.value.sha256 !== m.sha256) {
        throw new CairnError("DIGEST_MISMATCH", `formation member ${m.id} pins ${m.sha256}, the published layer is ${layer.value.sha256}`, {
          path: `/layers/${i}/sha256`,
        });
      }
    }
    const payload = canonicalBytes(formationToModel(formation));
    const envelope = signEnvelope(FORMATION_TYPE, payload, keys);
    const envBytes = Buffer.from(`${JSON.stringify(envelope, null, 2)}\n`);
    this.publishOnce(this.formationPath(formation.name, formation.version), envBytes, `formation ${formation.name}@${formation.version}`);
    return { value: formation, envelope, envelopeSha256: sha256(envBytes), envelopeBytes: envBytes, payloadSha256: sha256(payload) };
  }

  private readSigned<T>(path: string, type: string, parse: (m: ReturnType<typeof parseJsonBytes>, src: string) => T): SignedDocument<T> {
    return parseSigned(readBounded(path, MAX_ENVELOPE_BYTES, "registry.max_envelope_bytes"), path, type, parse);
  }

  readLayer(id: string): SignedDocument<LayerManifest> {
    return this.layerFromBytes(id, readBounded(this.layerPath(id), MAX_ENVELOPE_BYTES, "registry.max_envelope_bytes"));
  }

  /** Parses envelope bytes the caller already read (and, for verify, already checked against a pinned digest). */
  layerFromBytes(id: string, bytes: Buffer): SignedDocument<LayerManifest> {
    const path = this.layerPath(id);
    const doc = parseSigned(bytes, path, LAYER_MANIFEST_TYPE, (m, src) => parseLayerManifest(m, src));
    if (doc.value.id !== id) throw new CairnError("REGISTRY_INVALID", `${path} holds layer ${doc.value.id}`, { path });
    return doc;
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
