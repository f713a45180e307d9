/**
 * OCI media types cairn accepts, and what each means for reading (a layer's
 * media type maps to the tree area's compression; layer application never
 * sees a media type). This is the single list: a descriptor whose media type is not here is refused with
 * OCI_MEDIA_TYPE before its blob is read.
 */
import { CairnError } from "../core/index.ts";
import type { LayerCompression } from "../tree/index.ts";

export const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
export const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
export const OCI_CONFIG = "application/vnd.oci.image.config.v1+json";
export const OCI_LAYER_TAR = "application/vnd.oci.image.layer.v1.tar";
export const OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip";

/** Layer media types and their compression. zstd and non-distributable layers are not accepted. */
const LAYER_TYPES: ReadonlyMap<string, LayerCompression> = new Map([
  [OCI_LAYER_TAR, "none"],
  [OCI_LAYER_GZIP, "gzip"],
]);

const HINTS: Record<string, string> = {
  "application/vnd.docker.distribution.manifest.v2+json": "this is a Docker manifest; convert the image to OCI (e.g. `skopeo copy ... oci:DIR`)",
  "application/vnd.docker.image.rootfs.diff.tar.gzip": "this is a Docker layer type; convert the image to OCI",
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

/** Refuses anything but `expected` for a descriptor or document media type at `path`. */
export function requireMediaType(unsafeMediaType: string, expected: string, path: string): void {
  if (unsafeMediaType !== expected) {
    throw new CairnError("OCI_MEDIA_TYPE", `media type ${JSON.stringify(unsafeMediaType)} where ${expected} is required`, {
      path,
      hint: hintFor(unsafeMediaType, `expected ${expected}`),
    });
  }
}
