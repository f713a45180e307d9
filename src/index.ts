// The public library surface of cairn. Each area exports a curated list.
export * from "./core/index.ts";
export * from "./tree/index.ts";
export * from "./oci/index.ts";
export * from "./manifest/index.ts";
export * from "./workload/index.ts";
export * from "./store/index.ts";
export * from "./strata/index.ts";
export * from "./vm/index.ts";
