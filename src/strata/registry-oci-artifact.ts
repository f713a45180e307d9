/**
 * How a layer or a formation is laid out in an OCI registry: the single
 * definition of the artifact cairn pushes and the only shape it accepts back
 * (docs/registry.md, "Layer registries in an OCI registry"). No I/O.
 *
 * A layer is an OCI image manifest with `artifactType`
 * `application/vnd.cairn.layer.v1+json`, the empty config, and three layers:
 * the seed's LayerManifest (the bytes a directory registry keeps under
 * `layers/<id>.json`, registry-documents.ts), the DSSE envelope signing
 * cairn's layer manifest (`layers/<id>.json.dsse`), then the layer blob. A
 * formation is the same with `application/vnd.cairn.formation.v1+json`, the
 * seed's Formation and its envelope. The signature travels as a blob the manifest references,
 * because Distribution 2.8 (Debian's) has no referrers API; trust is still
 * decided only by verifying that envelope against the caller's keys.
 *
 * Tags are derived from the document's name (`layer-` or `formation-` and 48
 * hex of sha256 of the layer id or `<name>-<version>`): a layer id may hold
 * `+` and be longer than a tag may. The reader checks that the envelope a
 * tag leads to is the one that tag's name derives from, so a manifest
 * planted under another document's tag is refused, not read as that
 * document. Manifests are JCS bytes, so publishing the same signed document
 * again gives the same digest.
 */
import { CairnError, canonicalBytes, isJsonObject, parseJsonBytes, parseSha256, sha256, type JsonModel, type Sha256Digest } from "../core/index.ts";
import { OCI_LAYER_GZIP, OCI_MANIFEST } from "../oci/index.ts";

/** The OCI media types, defined once in oci/media-types.ts. */
export const OCI_MANIFEST_TYPE = OCI_MANIFEST;
export const LAYER_ARTIFACT = "application/vnd.cairn.layer.v1+json";
export const FORMATION_ARTIFACT = "application/vnd.cairn.formation.v1+json";
/** The media types of the seed's documents (seed 002's LayerManifest and Formation, as JSON). */
export const LAYER_DOCUMENT = "application/vnd.cairn.strata.layer-manifest.v1+json";
export const FORMATION_DOCUMENT = "application/vnd.cairn.strata.formation.v1+json";
/** The media type of a DSSE envelope blob (as in-toto attestations in OCI registries use it). */
export const DSSE_BLOB = "application/vnd.dsse.envelope.v1+json";
export const LAYER_BLOB = OCI_LAYER_GZIP;
export const EMPTY_TYPE = "application/vnd.oci.empty.v1+json";
export const EMPTY_BYTES = Buffer.from("{}");
export const EMPTY_DIGEST: Sha256Digest = sha256(EMPTY_BYTES);
/** Annotation naming the document, for people browsing the registry (the reader trusts only the envelope). */
export const NAME_ANNOTATION = "org.opencontainers.image.title";

export type ArtifactKind = "layer" | "formation";

export interface BlobRef {
  readonly digest: Sha256Digest;
  readonly size: number;
}

/** An artifact manifest as cairn reads it: the seed's document, the envelope, and for a layer its blob. */
export interface ArtifactManifest {
  readonly kind: ArtifactKind;
  readonly document: BlobRef;
  readonly envelope: BlobRef;
  readonly blob: BlobRef | undefined;
}

/** The tag of a layer (`id`) or a formation (`<name>-<version>`). */
export function artifactTag(kind: ArtifactKind, name: string): string {
  return `${kind}-${sha256(Buffer.from(name, "utf8")).slice("sha256:".length, "sha256:".length + 48)}`;
}

/** Which kind a tag names, or undefined for a tag that is not cairn's (skipped by a reader). */
export function tagKind(tag: string): ArtifactKind | undefined {
  const m = /^(layer|formation)-[0-9a-f]{48}$/.exec(tag);
  return m === null ? undefined : (m[1] as ArtifactKind);
}

function descriptor(mediaType: string, b: BlobRef): JsonModel {
  return { mediaType, digest: b.digest, size: b.size };
}

/** The manifest bytes for a document (JCS, so the same document always has the same digest). */
export function artifactManifestBytes(kind: ArtifactKind, name: string, document: BlobRef, envelope: BlobRef, blob?: BlobRef): Buffer {
  const layers = [descriptor(kind === "layer" ? LAYER_DOCUMENT : FORMATION_DOCUMENT, document), descriptor(DSSE_BLOB, envelope)];
  if (blob !== undefined) layers.push(descriptor(LAYER_BLOB, blob));
  return canonicalBytes({
    schemaVersion: 2,
    mediaType: OCI_MANIFEST_TYPE,
    artifactType: kind === "layer" ? LAYER_ARTIFACT : FORMATION_ARTIFACT,
    config: descriptor(EMPTY_TYPE, { digest: EMPTY_DIGEST, size: EMPTY_BYTES.length }),
    layers,
    annotations: { [NAME_ANNOTATION]: name },
  });
}

function refuse(where: string, why: string): never {
  throw new CairnError("REGISTRY_INVALID", `${where} is not a cairn ${why}`, {
    path: where,
    hint: "the registry holds something else under cairn's tag; publish the document again with cairn",
  });
}

function exactKeys(o: Record<string, unknown>, keys: readonly string[], where: string): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) refuse(where, `artifact manifest (unexpected field ${JSON.stringify(k).slice(0, 60)})`);
}

function blobRef(v: unknown, mediaType: string, where: string): BlobRef {
  if (!isJsonObject(v)) refuse(where, "artifact descriptor");
  exactKeys(v, ["mediaType", "digest", "size", "annotations"], where);
  if (v.mediaType !== mediaType) refuse(where, `artifact descriptor (media type is not ${mediaType})`);
  const size = v.size;
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) refuse(where, "artifact descriptor (size)");
  return { digest: parseSha256(v.digest, `${where}/digest`), size };
}

/** Parses manifest bytes fetched (by digest) under a tag of `kind`; anything but the shape above is REGISTRY_INVALID. */
export function parseArtifactManifest(bytes: Buffer, kind: ArtifactKind, where: string): ArtifactManifest {
  const doc = parseJsonBytes(bytes, { source: where });
  if (!isJsonObject(doc)) refuse(where, "artifact manifest");
  exactKeys(doc, ["schemaVersion", "mediaType", "artifactType", "config", "layers", "annotations", "subject"], where);
  if (doc.schemaVersion !== 2 || doc.mediaType !== OCI_MANIFEST_TYPE) refuse(where, "OCI image manifest");
  if (doc.artifactType !== (kind === "layer" ? LAYER_ARTIFACT : FORMATION_ARTIFACT)) refuse(where, `${kind} (artifactType)`);
  const config = blobRef(doc.config, EMPTY_TYPE, `${where}/config`);
  if (config.digest !== EMPTY_DIGEST || config.size !== EMPTY_BYTES.length) refuse(`${where}/config`, "empty config");
  const layers = doc.layers;
  if (!Array.isArray(layers) || layers.length !== (kind === "layer" ? 3 : 2)) refuse(`${where}/layers`, `${kind} (layer count)`);
  return {
    kind,
    document: blobRef(layers[0], kind === "layer" ? LAYER_DOCUMENT : FORMATION_DOCUMENT, `${where}/layers/0`),
    envelope: blobRef(layers[1], DSSE_BLOB, `${where}/layers/1`),
    blob: kind === "layer" ? blobRef(layers[2], LAYER_BLOB, `${where}/layers/2`) : undefined,
  };
}
