/**
 * OCI media types cairn accepts, and what each means for reading (a layer's
 * media type maps to the tree area's compression; layer application never
 * sees a media type). This is the single list: a descriptor whose media type is not here is refused with
 * OCI_MEDIA_TYPE before its blob is read.
 */
import { CairnError, isJsonObject, type JsonObject } from "../core/index.ts";
import type { LayerCompression } from "../tree/index.ts";

export const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
export const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
export const OCI_CONFIG = "application/vnd.oci.image.config.v1+json";
export const OCI_LAYER_TAR = "application/vnd.oci.image.layer.v1.tar";
export const OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip";
/** Docker image manifest v2 schema 2 and its parts: the same document shapes under other names, accepted as served (their digests are kept). */
export const DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
export const DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json";
export const DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json";
export const DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip";
export const DOCKER_LAYER_TAR = "application/vnd.docker.image.rootfs.diff.tar";

/** Image manifest and config media types, OCI first. */
export const MANIFEST_TYPES: readonly string[] = [OCI_MANIFEST, DOCKER_MANIFEST];
export const CONFIG_TYPES: readonly string[] = [OCI_CONFIG, DOCKER_CONFIG];
/** Index media types (an OCI index or a Docker manifest list). */
export const INDEX_TYPES: readonly string[] = [OCI_INDEX, DOCKER_MANIFEST_LIST];

/** Layer media types and their compression. zstd and non-distributable layers are not accepted. */
const LAYER_TYPES: ReadonlyMap<string, LayerCompression> = new Map([
  [OCI_LAYER_TAR, "none"],
  [OCI_LAYER_GZIP, "gzip"],
  [DOCKER_LAYER_TAR, "none"],
  [DOCKER_LAYER_GZIP, "gzip"],
]);

const HINTS: Record<string, string> = {
  "application/vnd.docker.distribution.manifest.v1+prettyjws": "Docker schema 1 manifests are not supported; push the image again with a current tool",
  "application/vnd.oci.image.layer.v1.tar+zstd": "zstd layers are not supported; rebuild the image with gzip or uncompressed layers",
};

function hintFor(mediaType: string, fallback: string): string {
  return HINTS[mediaType] ?? (mediaType.includes("nondistributable") ? "non-distributable layers are not supported" : fallback);
}

/** The compression of a layer media type, or OCI_MEDIA_TYPE naming `path`. */
export function layerCompression(unsafeMediaType: string, path: string): LayerCompression {
  const c = LAYER_TYPES.get(unsafeMediaType);
  if (c === undefined) {
    throw new CairnError("OCI_MEDIA_TYPE", `unsupported layer media type ${JSON.stringify(unsafeMediaType)}`, {
      path,
      hint: hintFor(unsafeMediaType, `layers must be ${[...LAYER_TYPES.keys()].join(" or ")}`),
    });
  }
  return c;
}

/** Refuses anything but `expected` (one type, or one of a list) for a descriptor or document media type at `path`. */
export function requireMediaType(unsafeMediaType: string, expected: string | readonly string[], path: string): void {
  const allowed = typeof expected === "string" ? [expected] : expected;
  if (!allowed.includes(unsafeMediaType)) {
    const names = allowed.join(" or ");
    throw new CairnError("OCI_MEDIA_TYPE", `media type ${JSON.stringify(unsafeMediaType)} where ${names} is required`, {
      path,
      hint: hintFor(unsafeMediaType, `expected ${names}`),
    });
  }
}

/**
 * The media type of a manifest or index document as the image-spec reads it:
 * its own `mediaType` when present; when absent (umoci writes none, the spec
 * says SHOULD, and Docker schema 2 requires the field, so a document without
 * it is OCI), the OCI type its shape names: `manifests` alone an index,
 * `config` and `layers` an image manifest; any other shape is OCI_MEDIA_TYPE.
 * It depends on the verified bytes alone, not on a registry's Content-Type,
 * so the first pull and a later one from the store (or with the registry
 * gone) read the same type; before, a stored manifest without `mediaType`
 * was refused on the second pull.
 */
export function documentMediaType(doc: JsonObject, path: string): string {
  if (typeof doc.mediaType === "string") return doc.mediaType;
  if (doc.mediaType !== undefined) throw new CairnError("OCI_MEDIA_TYPE", "mediaType is not a string", { path });
  const manifests = Array.isArray(doc.manifests);
  const image = isJsonObject(doc.config) && Array.isArray(doc.layers);
  if (manifests && doc.config === undefined && doc.layers === undefined) return OCI_INDEX;
  if (image && doc.manifests === undefined) return OCI_MANIFEST;
  throw new CairnError("OCI_MEDIA_TYPE", "the document names no media type, and its shape is neither an image manifest nor an index", {
    path,
    hint: "cairn reads OCI and Docker v2 schema 2 manifests",
  });
}
