// The store namespace of the public API (`import { store } from "cairn"` or
// `from "cairn/store"`): the content-addressed store and its default
// location. Staging, packs and publication stay internal.
export { defaultStoreDir, inspectPack, Store } from "./index.ts";
export type { PackIndex, StoreArea, StoreOptions } from "./index.ts";
