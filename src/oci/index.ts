// OCI image layouts: bounded no-follow reading, media types, the image-spec
// schemas, cairn's document rules, and the source that verifies and stages
// the selected image. Imports core and tree.
export { readOciSource } from "./image-source.ts";
export type { OciSource, OciLayer, ReadOciSourceOptions } from "./image-source.ts";
export { openLayoutDir } from "./layout-reader.ts";
export type { OciObjectReader, OpenedFile } from "./layout-reader.ts";
export type { OciLaunchConfig } from "./documents.ts";
export { writeImageLayout, linkImageLayout } from "./layout-writer.ts";
export type { LayoutBlobCounts } from "./layout-writer.ts";
export type { LayoutImage } from "./layout-writer.ts";
export type { Descriptor } from "./documents.ts";
export { parseImageRef, splitImageReference, formatImageRef, isLoopbackHost, apiHost, MAX_REFERENCE_LENGTH } from "./registry/image-ref.ts";
export type { ImageRef, ImageReferenceParts, ImageReferenceResult } from "./registry/image-ref.ts";
export { Credential, credentialsFromFiles } from "./registry/credentials.ts";
export type { CredentialSource } from "./registry/credentials.ts";
export { RegistryClient, referrersTag, MANIFEST_ACCEPT, DEFAULT_MANIFEST_BYTES } from "./registry/registry-client.ts";
export type { RegistryClientOptions, RemoteDescriptor, FetchedManifest, ReferrerDescriptor, BlobBytes } from "./registry/registry-client.ts";
export { pullImage, PULL_PLATFORM } from "./registry/pull-image.ts";
export { pushLayoutImage } from "./registry/push-image.ts";
export type { PushOptions } from "./registry/push-image.ts";
export type { PulledImage } from "./registry/pull-image.ts";
export type { BlobCache } from "./registry/blob-cache.ts";
export { stageBlob } from "./registry/blob-cache.ts";
export { importOciArchive } from "./oci-archive.ts";
export { registryClientFor } from "./registry/remote-client.ts";
export { readRegistryCa, MAX_REGISTRY_CA_BYTES } from "./registry/registry-ca.ts";
export { boundedRemoteFetch } from "./registry/remote-bounds.ts";
export type { RemoteOptions } from "./registry/remote-client.ts";
export { writeOciLayout, configDocument, selectionDocuments } from "./image-writer.ts";
export { writeOciArchive } from "./archive-writer.ts";
export type { WrittenArchive } from "./archive-writer.ts";
export { checkRefName, MAX_REF_NAME_BYTES, REF_NAME_ANNOTATION, REF_NAME_RULE } from "./ref-name.ts";
export type { LayoutImageInput, LayoutLayerInput, LayoutLaunchConfig, WrittenLayout } from "./image-writer.ts";
export { OCI_LAYER_GZIP, OCI_LAYER_TAR, OCI_MANIFEST } from "./media-types.ts";
