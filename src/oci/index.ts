// OCI image layouts: bounded no-follow reading, media types, the image-spec
// schemas, cairn's document rules, and the source that verifies and stages
// the selected image. Imports core and tree.
export { readOciSource } from "./image-source.ts";
export type { OciSource, OciLayer, StagedObject, ReadOciSourceOptions } from "./image-source.ts";
export { openLayoutDir, readVerified, copyVerified } from "./layout-reader.ts";
export type { OciObjectReader, OpenedFile } from "./layout-reader.ts";
export type { OciLaunchConfig, Descriptor } from "./documents.ts";
export { validateOciDocument } from "./schemas.ts";
export type { OciDocumentKind } from "./schemas.ts";
export { OCI_INDEX, OCI_MANIFEST, OCI_CONFIG, OCI_LAYER_TAR, OCI_LAYER_GZIP } from "./media-types.ts";
