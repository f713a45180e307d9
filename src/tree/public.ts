// The tree namespace of the public API (`import { tree } from "cairn"` or
// `from "cairn/tree"`): the canonical tree model and its `cairn.fs/1`
// identity, strict layer application with its policy and limits, and in-root
// path resolution. The tar gate, the builder and path helpers stay internal.
export type { CanonicalTree, ContentAddress, ContentSink, ContentSource, ContentWriter, DirEntry, FileEntry, FsEntry, SymlinkEntry } from "./index.ts";
export { HASH_ONLY_SINK, hashingWriter, memorySink, wholeFileSink } from "./index.ts";
export { FS_IDENTITY, frameTree, fsIdentity } from "./index.ts";
export { applyLayers } from "./index.ts";
export type {
  ApplyLayersOptions,
  ApplyResult,
  ApplyStats,
  DroppedXattrs,
  InflationBound,
  LayerCompression,
  LayerInput,
  LayerIssue,
  SkippedMember,
} from "./index.ts";
export { parsePolicy, STRICT_POLICY } from "./index.ts";
export type { LayerPolicy, PolicyKey } from "./index.ts";
export { DEFAULT_LIMITS, LIMIT_CEILINGS, parseLimits } from "./index.ts";
export type { LayerLimits, LimitName } from "./index.ts";
export { directoryView, resolveInRoot, resolveInTree, treeView } from "./index.ts";
export type { RootView } from "./index.ts";
// Types the signatures above name (the API report fails when a public signature names a type the package does not export).
export type { DirLimitNames, DirLimits } from "./dir-reader.ts";
export type { FsEntryBase } from "./entries.ts";
export type { EscapeMode, RootLookup, RootNode } from "./in-root.ts";
export type { DevicePolicy, HardlinkPolicy, PlatformPolicy, SetidPolicy, XattrPolicy } from "./layer-policy.ts";
