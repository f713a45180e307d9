/**
 * A devcontainer feature's metadata (`devcontainer-feature.json`) as the
 * devcontainers CLI reads it from the feature's OCI artifact: the manifest's
 * `dev.containers.metadata` annotation when present, else the file of that
 * name inside the artifact's first layer (a tar, gzipped or not). Only what
 * the dependency rules use is read: `id`, `version`, `dependsOn` (id as
 * written → options), `installsAfter`, `legacyIds`, `currentId`; the rest of
 * the file (options, scripts, mounts) is the feature's own business and is
 * not looked at.
 *
 * Everything here is hostile: the manifest is fetched by digest and verified
 * (the registry client), its config must carry the devcontainers media type,
 * the layer is bounded (limit `featureLayerBytes`) and read through cairn's
 * one tar gate, the metadata is bounded (limit `featureMetadataBytes`) and
 * parsed strictly. A refusal names the feature (as the user wrote it) and the
 * field, never a value from the file. Layers are kept in the content store by
 * digest when a store is given, so a second resolution of the same feature
 * reads only its manifest from the registry (the manifest is always fetched:
 * a digest the registry no longer serves must be refused, not answered from
 * the cache).
 */
import { CairnError, checkLimit, isJsonObject, parseJsonBytes, sha256, type JsonModel, type Sha256Digest } from "../core/index.ts";
import { registryClientFor, type ImageRef, type RemoteOptions } from "../oci/index.ts";
import type { Store } from "../store/index.ts";
import { DEFAULT_LIMITS, readLayer } from "../tree/index.ts";

/** A feature's metadata larger than this (annotation or file) is refused (limit `featureMetadataBytes`). */
export const MAX_FEATURE_METADATA_BYTES = 256 * 1024;
/** A feature layer larger than this is refused before it is read (limit `featureLayerBytes`). */
export const MAX_FEATURE_LAYER_BYTES = 64 * 1024 * 1024;
/** A gzip feature layer that inflates past this is refused as it inflates (limit `featureLayerExpandedBytes`): a bomb must not run to the layer limits of images. */
export const MAX_FEATURE_LAYER_EXPANDED_BYTES = 64 * 1024 * 1024;

/** The devcontainers spec's media types for a feature artifact. */
export const FEATURE_CONFIG_MEDIA_TYPE = "application/vnd.devcontainers";
export const FEATURE_LAYER_MEDIA_TYPE = "application/vnd.devcontainers.layer.v1+tar";
const METADATA_ANNOTATION = "dev.containers.metadata";
const METADATA_FILE = "devcontainer-feature.json";

/** Option values as the feature spec has them (a legacy version string stands for `{version}`). */
export type FeatureOptionValues = string | { readonly [name: string]: string | boolean };

export interface FeatureMetadata {
  readonly id: string | undefined;
  readonly version: string | undefined;
  /** `dependsOn` in file order: the dependency's id as written, and its options. */
  readonly dependsOn: readonly (readonly [string, FeatureOptionValues])[];
  readonly installsAfter: readonly string[];
  readonly legacyIds: readonly string[];
  readonly currentId: string | undefined;
}

/** One feature artifact as a registry serves it: the manifest digest and the metadata. */
export interface FeatureArtifact {
  readonly digest: Sha256Digest;
  readonly metadata: FeatureMetadata;
}

/** Where feature artifacts come from (a registry, with the store as cache; tests may serve them from memory). */
export interface FeatureSource {
  /** The manifest digest `ref`'s tag names now (a digest reference is its own answer). */
  resolve(ref: ImageRef, feature: string): Promise<Sha256Digest>;
  /** The metadata of the artifact at `digest`. */
  read(ref: ImageRef, digest: Sha256Digest, feature: string): Promise<FeatureArtifact>;
}

function refused(feature: string, field: string, why: string): CairnError {
  return new CairnError("MANIFEST_REFUSED", `feature ${JSON.stringify(feature)}: ${field} ${why}`, {
    path: feature,
    hint: "the feature's devcontainer-feature.json must follow the devcontainers feature spec",
  });
}

function strings(v: JsonModel | undefined, feature: string, field: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((s) => typeof s === "string")) throw refused(feature, field, "must be a list of strings");
  return v as string[];
}

function options(v: JsonModel | undefined, feature: string, field: string): FeatureOptionValues {
  if (typeof v === "string") return v;
  if (!isJsonObject(v)) throw refused(feature, field, "must be an options object");
  const out: { [name: string]: string | boolean } = {};
  for (const [k, o] of Object.entries(v)) {
    if (typeof o !== "string" && typeof o !== "boolean") throw refused(feature, `${field}/${k}`, "must be a string or a boolean");
    out[k] = o;
  }
  return out;
}

/** Reads the fields the dependency rules use from metadata bytes; see the module comment. */
export function parseFeatureMetadata(bytes: Uint8Array, feature: string): FeatureMetadata {
  checkLimit("featureMetadataBytes", bytes.length, MAX_FEATURE_METADATA_BYTES, feature, "bytes");
  const doc = parseJsonBytes(Buffer.from(bytes), { source: `metadata of feature ${JSON.stringify(feature)}` });
  if (!isJsonObject(doc)) throw refused(feature, METADATA_FILE, "must be a JSON object");
  const text = (field: string): string | undefined => {
    const v = doc[field];
    if (v !== undefined && typeof v !== "string") throw refused(feature, field, "must be a string");
    return v;
  };
  const deps = doc.dependsOn;
  if (deps !== undefined && !isJsonObject(deps)) throw refused(feature, "dependsOn", "must be an object of feature id to options");
  return {
    id: text("id"),
    version: text("version"),
    dependsOn: Object.entries(deps ?? {}).map(([id, o]) => [id, options(o, feature, `dependsOn/${id}`)] as const),
    installsAfter: strings(doc.installsAfter, feature, "installsAfter"),
    legacyIds: strings(doc.legacyIds, feature, "legacyIds"),
    currentId: text("currentId"),
  };
}

/** The metadata file's bytes inside a feature layer (tar or tar+gzip), through the tar gate. */
async function metadataFromLayer(layer: Buffer, feature: string): Promise<Uint8Array> {
  const gzip = layer.length >= 2 && layer[0] === 0x1f && layer[1] === 0x8b;
  let found: Buffer | undefined;
  const parts: Buffer[] = [];
  let size = 0;
  await readLayer(
    {
      bytes: layer,
      compression: gzip ? "gzip" : "none",
      where: `layer of feature ${JSON.stringify(feature)}`,
      inflation: {
        maxBytes: MAX_FEATURE_LAYER_EXPANDED_BYTES,
        maxBytesName: "featureLayerExpandedBytes",
        maxRatio: Number.MAX_SAFE_INTEGER,
        maxRatioName: "featureLayerExpandedBytes",
        ratioAfter: MAX_FEATURE_LAYER_EXPANDED_BYTES,
      },
    },
    DEFAULT_LIMITS,
    { expandedBytes: 0, entries: 0, compressedBytes: 0 },
    (rec) => {
      if (rec.type !== "file" || rec.name.replace(/^\.\//, "") !== METADATA_FILE) return undefined;
      checkLimit("featureMetadataBytes", rec.size, MAX_FEATURE_METADATA_BYTES, feature, "bytes");
      parts.length = 0;
      size = 0;
      return {
        write: (chunk) => {
          size += chunk.length;
          parts.push(Buffer.from(chunk));
        },
        end: () => {
          found = Buffer.concat(parts, size);
        },
      };
    },
  );
  if (found === undefined) throw refused(feature, "artifact", `has no ${METADATA_FILE}`);
  return found;
}

/** Reads one feature artifact's metadata from its manifest bytes and, when there is no annotation, its first layer. */
export async function featureArtifactOf(
  manifestBytes: Buffer,
  digest: Sha256Digest,
  feature: string,
  layer: (layerDigest: Sha256Digest, size: number) => Promise<Buffer>,
): Promise<FeatureArtifact> {
  const doc = parseJsonBytes(manifestBytes, { source: `manifest of feature ${JSON.stringify(feature)}` });
  if (!isJsonObject(doc) || !isJsonObject(doc.config) || doc.config.mediaType !== FEATURE_CONFIG_MEDIA_TYPE) {
    throw new CairnError("OCI_MEDIA_TYPE", `feature ${JSON.stringify(feature)}: the artifact is not a devcontainer feature (config media type)`, {
      path: feature,
      hint: `a feature's manifest config has media type ${FEATURE_CONFIG_MEDIA_TYPE}`,
    });
  }
  const note = isJsonObject(doc.annotations) ? doc.annotations[METADATA_ANNOTATION] : undefined;
  if (typeof note === "string") return { digest, metadata: parseFeatureMetadata(Buffer.from(note, "utf8"), feature) };
  const first = Array.isArray(doc.layers) ? doc.layers[0] : undefined;
  if (
    !isJsonObject(first) ||
    typeof first.digest !== "string" ||
    typeof first.size !== "number" ||
    !Number.isSafeInteger(first.size) ||
    first.size < 0 ||
    !/^sha256:[0-9a-f]{64}$/.test(first.digest)
  ) {
    throw refused(feature, "artifact", "has no layer to read its metadata from");
  }
  checkLimit("featureLayerBytes", first.size, MAX_FEATURE_LAYER_BYTES, feature, "bytes");
  const bytes = await layer(first.digest as Sha256Digest, first.size);
  return { digest, metadata: parseFeatureMetadata(await metadataFromLayer(bytes, feature), feature) };
}

/** Feature artifacts through the registries the references name, the store (when given) keeping every fetched byte by digest. */
export function registryFeatureSource(opts: RemoteOptions, store?: Store): FeatureSource {
  const cached = (digest: Sha256Digest, size: number, max: number, limit: string): Buffer | undefined =>
    store?.has("objects", digest, size) === true ? store.read("objects", digest, max, limit) : undefined;
  const keep = (bytes: Buffer): void => {
    if (store !== undefined) store.put("objects", bytes);
  };
  return {
    async resolve(ref) {
      if (ref.digest !== undefined) return ref.digest;
      return (await registryClientFor(ref, opts).resolve(ref.repository, ref.tag ?? "latest")).digest;
    },
    async read(ref, digest, feature) {
      const client = registryClientFor(ref, opts);
      // the manifest always comes from the registry (small, and verified by digest): a feature the
      // registry no longer serves at that digest is refused, never answered from the cache
      const manifest = (await client.fetchManifest(ref.repository, digest)).bytes;
      return featureArtifactOf(manifest, digest, feature, async (d, size) => {
        const hit = cached(d, size, MAX_FEATURE_LAYER_BYTES, "featureLayerBytes");
        if (hit !== undefined) return hit;
        const parts: Uint8Array[] = [];
        await client.fetchBlob(ref.repository, d, size, (c) => void parts.push(Buffer.from(c)));
        const bytes = Buffer.concat(parts);
        if (sha256(bytes) !== d)
          throw new CairnError("DIGEST_MISMATCH", `layer of feature ${JSON.stringify(feature)} does not match its digest`, { path: feature });
        keep(bytes);
        return bytes;
      });
    },
  };
}
