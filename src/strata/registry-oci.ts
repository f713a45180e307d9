/**
 * An OCI registry repository as a layer registry: `oci://HOST[:PORT]/REPO`.
 * Documents are laid out as registry-oci-artifact.ts defines.
 *
 * Opening takes a snapshot: the tag list is read once, each cairn tag is
 * resolved once to a manifest digest, and from then on everything is fetched
 * by digest (manifest, envelope, blob), so a tag moved while a command runs
 * cannot mix two documents: the command sees the layer as it was when it
 * opened the registry, and the blob it fetches is the one the envelope
 * names. The seed's document beside each envelope is checked to be the one
 * the envelope's record gives (registry-documents.ts), as for a directory. Everything fetched is bounded (manifest limit, envelope and blob
 * limits) and verified against its digest while it streams
 * (src/oci/registry). Nothing read here is trusted: the envelopes are
 * verified against the caller's keys by the attestation stage, exactly as a
 * directory registry's are.
 *
 * A blob is fetched once into the content store (`objects/sha256/<hex>`,
 * staged, verified, renamed) and read from there afterwards, so a second use
 * of a layer makes no blob request.
 */
import { randomBytes } from "node:crypto";
import { closeSync, fstatSync } from "node:fs";
import { join } from "node:path";
import { CairnError, FIXED_LIMIT_HINT, checkLimit, ioError, openForRead, readFullyAt, sha256, type Sha256Digest, type SigningKey } from "../core/index.ts";
import { parseImageRef, registryClientFor, stageBlob, type RegistryClient, type RemoteOptions } from "../oci/index.ts";
import { Store } from "../store/index.ts";
import type { Formation } from "./formation-document.ts";
import { formationKey } from "./formation-document.ts";
import type { LayerManifest } from "./layer-manifest.ts";
import {
  MAX_BLOB_BYTES,
  MAX_ENVELOPE_BYTES,
  checkFormationMembers,
  parseFormationEnvelope,
  parseLayerEnvelope,
  signFormation,
  signLayer,
  type BlobSource,
  type LayerRegistry,
  type SignedDocument,
} from "./registry.ts";
import { checkBlobFile, copyVerified, type BlobStaging } from "./blob-staging.ts";
import { checkDocument, formationDocumentBytes, layerDocumentBytes } from "./registry-documents.ts";
import {
  EMPTY_BYTES,
  EMPTY_DIGEST,
  OCI_MANIFEST_TYPE,
  artifactManifestBytes,
  artifactTag,
  parseArtifactManifest,
  tagKind,
  type ArtifactKind,
  type BlobRef,
} from "./registry-oci-artifact.ts";

export const OCI_REGISTRY_SCHEME = "oci://";
/** registry.max_tags: the most tags an OCI layer registry's repository may list. */
export const MAX_TAGS = 10_000;

/** `oci://HOST[:PORT]/REPO`: the host and repository, through the one image-reference grammar (no tag, no digest). */
export function parseOciRegistryUrl(unsafeUrl: string): { readonly host: string; readonly repository: string; readonly location: string } {
  const rest = unsafeUrl.slice(OCI_REGISTRY_SCHEME.length);
  const ref = parseImageRef(rest, "--registry");
  if (!unsafeUrl.startsWith(OCI_REGISTRY_SCHEME) || ref.digest !== undefined || rest !== `${ref.registry}/${ref.repository}`) {
    throw new CairnError("REFERENCE_INVALID", `registry ${JSON.stringify(unsafeUrl.slice(0, 200))} is not oci://HOST[:PORT]/REPOSITORY`, {
      path: "--registry",
      hint: "name the registry host explicitly and no tag or digest, e.g. oci://127.0.0.1:5000/layers",
    });
  }
  return { host: ref.registry, repository: ref.repository, location: `${OCI_REGISTRY_SCHEME}${rest}` };
}

export interface OciRegistryOptions {
  readonly remote: RemoteOptions;
  /** The content store pulled blobs are cached in. */
  readonly storeDir: string;
  /** A repository nothing was pushed to yet opens empty (publishing); otherwise it is refused. */
  readonly create?: boolean;
}

interface Entry<T> {
  readonly doc: SignedDocument<T>;
  readonly blob: BlobRef | undefined;
}

export class OciLayerRegistry implements LayerRegistry {
  readonly #layers = new Map<string, Entry<LayerManifest>>();
  readonly #formations = new Map<string, Entry<Formation>>();
  readonly #blobs = new Set<Sha256Digest>();

  private constructor(
    readonly location: string,
    readonly repository: string,
    readonly client: RegistryClient,
    readonly storeDir: string,
  ) {}

  /** Opens `oci://HOST/REPO`: lists its tags and reads every cairn document once (the snapshot). */
  static async open(unsafeUrl: string, opts: OciRegistryOptions): Promise<OciLayerRegistry> {
    const url = parseOciRegistryUrl(unsafeUrl);
    const client = registryClientFor({ registry: url.host }, opts.remote);
    const reg = new OciLayerRegistry(url.location, url.repository, client, opts.storeDir);
    const tags = await client.listTags(url.repository, MAX_TAGS, { missingOk: opts.create === true });
    for (const tag of [...tags].sort()) {
      const kind = tagKind(tag);
      if (kind !== undefined) await reg.#readTag(kind, tag);
    }
    return reg;
  }

  async #readTag(kind: ArtifactKind, tag: string): Promise<void> {
    const where = `${this.location}:${tag}`;
    const desc = await this.client.resolve(this.repository, tag);
    if (desc.mediaType !== OCI_MANIFEST_TYPE) throw new CairnError("REGISTRY_INVALID", `${where} is not an OCI image manifest`, { path: where });
    const manifest = await this.client.fetchManifest(this.repository, desc.digest, desc.size);
    const art = parseArtifactManifest(manifest.bytes, kind, where);
    const bytes = await this.#fetchEnvelope(art.envelope, where);
    const document = await this.#fetchEnvelope(art.document, where);
    if (kind === "layer") {
      const doc = parseLayerEnvelope(undefined, bytes, where);
      checkDocument(document, layerDocumentBytes(doc.value, doc.envelope), where);
      if (artifactTag("layer", doc.value.id) !== tag) throw planted(where, `layer ${doc.value.id}`);
      if (art.blob?.digest !== doc.value.sha256 || art.blob.size !== doc.value.size) {
        throw new CairnError("REGISTRY_INVALID", `${where}: the manifest's blob is not the one layer ${doc.value.id} names`, { path: where });
      }
      this.#layers.set(doc.value.id, { doc, blob: art.blob });
      this.#blobs.add(art.blob.digest);
    } else {
      const doc = parseFormationEnvelope(bytes, where);
      checkDocument(document, formationDocumentBytes(doc.value, doc.envelope), where);
      const key = formationKey(doc.value.name, doc.value.version);
      if (artifactTag("formation", key) !== tag) throw planted(where, `formation ${doc.value.name}@${doc.value.version}`);
      this.#formations.set(key, { doc, blob: undefined });
    }
  }

  async #fetchEnvelope(ref: BlobRef, where: string): Promise<Buffer> {
    checkLimit("registry.max_envelope_bytes", ref.size, MAX_ENVELOPE_BYTES, where, "bytes", FIXED_LIMIT_HINT);
    const parts: Uint8Array[] = [];
    await this.client.fetchBlob(this.repository, ref.digest, ref.size, (c) => void parts.push(c));
    return Buffer.concat(parts);
  }

  listLayers(): SignedDocument<LayerManifest>[] {
    return [...this.#layers.keys()].sort().map((id) => this.#layers.get(id)!.doc);
  }

  listFormations(): SignedDocument<Formation>[] {
    return [...this.#formations.keys()].sort().map((k) => this.#formations.get(k)!.doc);
  }

  readLayer(id: string): SignedDocument<LayerManifest> {
    const e = this.#layers.get(id);
    if (e === undefined) throw new CairnError("STORE_MISSING", `layer ${id} is not in ${this.location}`, { path: id });
    return e.doc;
  }

  readFormation(name: string, version: string): SignedDocument<Formation> {
    const e = this.#formations.get(formationKey(name, version));
    if (e === undefined) throw new CairnError("STORE_MISSING", `formation ${name}@${version} is not in ${this.location}`, { path: name });
    return e.doc;
  }

  layerFromBytes(id: string, bytes: Buffer): SignedDocument<LayerManifest> {
    return parseLayerEnvelope(id, bytes, `${this.location}:${artifactTag("layer", id)}`);
  }

  layerEnvelope(id: string): Buffer | undefined {
    return this.#layers.get(id)?.doc.envelopeBytes;
  }

  formationEnvelope(name: string, version: string): Buffer | undefined {
    return this.#formations.get(formationKey(name, version))?.doc.envelopeBytes;
  }

  hasBlob(digest: Sha256Digest): boolean {
    return this.#blobs.has(digest);
  }

  blobWhere(digest: Sha256Digest): string {
    return `${this.location}@${digest}`;
  }

  /**
   * Runs `use` on the store's copy of a blob one of the snapshot's layers
   * names: from the store when it is there, else first fetched into it
   * (verified while streaming) and adopted.
   */
  async #stored<T>(digest: Sha256Digest, size: number, use: (path: string, where: string, store: Store) => T): Promise<T> {
    const where = this.blobWhere(digest);
    checkLimit("registry.max_blob_bytes", size, MAX_BLOB_BYTES, where, "bytes", FIXED_LIMIT_HINT);
    if (!this.#blobs.has(digest)) throw new CairnError("STORE_MISSING", `blob ${digest} is named by no layer of ${this.location}`, { path: where });
    const store = new Store(this.storeDir);
    try {
      if (!store.has("objects", digest, size)) {
        const staged = await stageBlob({ stagePath: () => join(store.stagingDir, `layer-${randomBytes(8).toString("hex")}`) }, (write) =>
          this.client.fetchBlob(this.repository, digest, size, write),
        );
        store.adopt("objects", staged, digest, size);
      }
      return use(store.pathOf("objects", digest), where, store);
    } finally {
      store.close();
    }
  }

  /** Checks the store's copy (fetched first when absent) in chunks, keeping nothing. */
  async checkBlob(digest: Sha256Digest, size: number): Promise<void> {
    await this.#stored(digest, size, (path, where) => checkBlobFile(path, { sha256: digest, size }, where));
  }

  /** Copies the store's copy (fetched first when absent) into `staging`, checked as it is copied. */
  async stageBlob(digest: Sha256Digest, size: number, staging: BlobStaging): Promise<string> {
    return this.#stored(digest, size, (path, where) => copyVerified(path, staging.path(digest.slice("sha256:".length)), { sha256: digest, size }, where));
  }

  /** The whole blob in memory (small blobs, tests), read back and verified by the store. */
  async readBlob(digest: Sha256Digest, size: number): Promise<Buffer> {
    return this.#stored(digest, size, (_path, where, store) => {
      const data = store.read("objects", digest, size, "registry.max_blob_bytes");
      if (data.length !== size) throw new CairnError("SIZE_MISMATCH", `blob ${digest} is ${data.length} bytes, expected ${size}`, { path: where });
      return data;
    });
  }

  /**
   * Publishes a layer: blob, envelope and empty config first, the manifest
   * (under the layer's tag) last, so no tag ever names an incomplete layer.
   * A tag already naming another document is refused (publish a new version).
   */
  async publishLayer(blob: BlobSource, manifest: LayerManifest, keys: readonly SigningKey[]): Promise<SignedDocument<LayerManifest>> {
    const doc = signLayer(blob, manifest, keys);
    const existing = this.#layers.get(manifest.id);
    refuseReplace(existing?.doc, doc, `layer ${manifest.id}`);
    const blobRef = { digest: manifest.sha256, size: manifest.size };
    if (blob instanceof Uint8Array) await this.client.pushBlob(this.repository, manifest.sha256, blob);
    else await pushFile(this.client, this.repository, manifest.sha256, manifest.size, blob.path);
    await this.#push("layer", manifest.id, doc, layerDocumentBytes(doc.value, doc.envelope), blobRef);
    this.#layers.set(manifest.id, { doc, blob: blobRef });
    this.#blobs.add(manifest.sha256);
    return doc;
  }

  async publishFormation(formation: Formation, keys: readonly SigningKey[]): Promise<SignedDocument<Formation>> {
    checkFormationMembers(formation, (id) => this.readLayer(id));
    const doc = signFormation(formation, keys);
    const key = formationKey(formation.name, formation.version);
    refuseReplace(this.#formations.get(key)?.doc, doc, `formation ${formation.name}@${formation.version}`);
    await this.#push("formation", key, doc, formationDocumentBytes(doc.value, doc.envelope));
    this.#formations.set(key, { doc, blob: undefined });
    return doc;
  }

  async #push(kind: ArtifactKind, name: string, doc: SignedDocument<unknown>, documentBytes: Buffer, blob?: BlobRef): Promise<void> {
    const envelope = { digest: doc.envelopeSha256, size: doc.envelopeBytes.length };
    const document = { digest: sha256(documentBytes), size: documentBytes.length };
    await this.client.pushBlob(this.repository, document.digest, documentBytes);
    await this.client.pushBlob(this.repository, envelope.digest, doc.envelopeBytes);
    await this.client.pushBlob(this.repository, EMPTY_DIGEST, EMPTY_BYTES);
    await this.client.pushManifest(this.repository, artifactTag(kind, name), artifactManifestBytes(kind, name, document, envelope, blob), OCI_MANIFEST_TYPE);
  }
}

/** Pushes a blob from a file, read in the client's request-sized pieces (a monolithic push still sends one body). */
async function pushFile(client: RegistryClient, repo: string, digest: Sha256Digest, size: number, path: string): Promise<void> {
  let fd: number;
  try {
    fd = openForRead(path);
  } catch (cause) {
    throw ioError(path, cause);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== size) throw new CairnError("SIZE_MISMATCH", `${path} is not the ${size}-byte blob to push`, { path });
    const from = fd;
    const read = async (offset: number, length: number): Promise<Uint8Array> => {
      const buf = Buffer.allocUnsafe(length);
      if (readFullyAt(from, buf, offset) !== length) throw new CairnError("SIZE_MISMATCH", `${path} shrank while it was pushed`, { path });
      return buf;
    };
    await client.pushBlob(repo, digest, { size, read }, { chunked: true });
  } finally {
    closeSync(fd);
  }
}

/** Write-once, as for a directory registry: the same signed bytes again are allowed, different ones are not. */
function refuseReplace(existing: SignedDocument<unknown> | undefined, next: SignedDocument<unknown>, what: string): void {
  if (existing === undefined || existing.envelopeSha256 === next.envelopeSha256) return;
  throw new CairnError("REGISTRY_INVALID", `${what} is already published with other bytes`, {
    path: what,
    hint: "publish a new version instead of replacing a published one",
  });
}

function planted(where: string, what: string): CairnError {
  return new CairnError("REGISTRY_INVALID", `${where} holds ${what}, which another tag names`, {
    path: where,
    hint: "a manifest was copied under another document's tag; the registry copy was tampered with",
  });
}
