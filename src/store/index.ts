export { Store } from "./store.ts";
export type { StoreArea, StoreOptions } from "./store.ts";
export { cleanStaging } from "./staging.ts";
export type { Staging } from "./staging.ts";
export { defaultStoreDir } from "./location.ts";
export { publishBytes, publishStaged } from "./publish.ts";
export type { WriteOnce } from "./publish.ts";
export { PackCheck, PackWriter, inspectPack, readPacked } from "./pack.ts";
export type { PackIndex } from "./pack.ts";
