export { readOciSource } from "./source.ts";
export type { OciSource, OciLayer, StagedObject, ReadOciSourceOptions } from "./source.ts";
export { openLayoutDir, readVerified, copyVerified } from "./reader.ts";
export type { OciObjectReader, OpenedFile } from "./reader.ts";
export type { OciLaunchConfig, Descriptor } from "./documents.ts";
export { validateOciDocument } from "./schema.ts";
export type { OciDocumentKind } from "./schema.ts";
export { OCI_INDEX, OCI_MANIFEST, OCI_CONFIG, OCI_LAYER_TAR, OCI_LAYER_GZIP } from "./media.ts";
export type { LayerCompression } from "./media.ts";
