// OCI image layouts: bounded no-follow reading, media types, the image-spec
// schemas, cairn's document rules, and the source that verifies and stages
// the selected image. Imports core and tree.
export { readOciSource } from "./image-source.ts";
export type { OciSource, OciLayer, ReadOciSourceOptions } from "./image-source.ts";
export { openLayoutDir } from "./layout-reader.ts";
export type { OciObjectReader, OpenedFile } from "./layout-reader.ts";
export type { OciLaunchConfig } from "./documents.ts";
export { writeOciLayout, configDocument, selectionDocuments } from "./layout-writer.ts";
export type { LayoutImageInput, LayoutLayerInput, LayoutLaunchConfig, WrittenLayout } from "./layout-writer.ts";
export { OCI_LAYER_GZIP, OCI_LAYER_TAR } from "./media-types.ts";
