export { Store } from "./store.ts";
export type { StoreArea, StoreOptions } from "./store.ts";
export { cleanStaging, createStaging } from "./staging.ts";
export type { Staging } from "./staging.ts";
export { defaultStoreDir } from "./location.ts";
export { publishBytes, publishStaged, publishedIdentical } from "./publish.ts";
export type { Published, PublishOptions, WriteOnce } from "./publish.ts";
export { PackCheck, PackWriter, inspectPack, readPacked, PACK_MAGIC } from "./pack.ts";
export type { PackEntry, PackIndex } from "./pack.ts";
