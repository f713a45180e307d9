// The store namespace of the public API (`import { store } from "cairn"` or
// `from "cairn/store"`): the content-addressed store and its default
// location, and what uses its space. Staging, packs, publication and the
// gc sweep stay internal (gc is `vm.collectStoreGarbage`, which knows the roots).
export { defaultStoreDir, inspectPack, Store, storeUsage } from "./index.ts";
export type { InspectedPack, PackIndex, PackStat, StoreArea, StoreOptions, StoreUsage, Tally } from "./index.ts";
// Types the signatures above name (the API report fails when a public signature names a type the package does not export).
export type { PackEntries, PackEntry } from "./pack-entries.ts";
export type { Staging } from "./staging.ts";
