// The canonical tree: its model, cairn.fs/1, tree paths and in-root resolution,
// the layer policy and limits, the strict tar gate, the directory reader, the tar writer, and layer
// application with whiteouts. Imports only core.
export type { CanonicalTree, FsEntry, FileEntry, DirEntry, SymlinkEntry, ContentSource, ContentSink, ContentWriter, ContentAddress } from "./entries.ts";
export { memorySink, wholeFileSink, hashingWriter, HASH_ONLY_SINK } from "./entries.ts";
export { fsIdentity, fsIdentityOf, frameTree, frameEntry, sortedEntries, FS_IDENTITY, type SortedEntries } from "./fs-digest.ts";
export { isCanonicalPath, parentOf, ancestors } from "./tree-paths.ts";
export { resolveInRoot, resolveInRootSync, resolveInTree, MAX_SYMLINK_HOPS } from "./in-root.ts";
export type { EscapeMode } from "./in-root.ts";
export { HOST_ROOT_FLAG, hostPathBeneath, resolveBeneath, specHostScope, withBeneath } from "./host-beneath.ts";
export type { BeneathPath, HostScope } from "./host-beneath.ts";
export { directoryView, treeView } from "./root-view.ts";
export type { RootView } from "./root-view.ts";
export {
  parsePolicy,
  policyModel,
  policyName,
  policyValue,
  isStrictPolicy,
  samePolicy,
  STRICT_POLICY,
  POLICY_VERSION,
  POLICY_CHOICES,
  POLICY_KEYS,
} from "./layer-policy.ts";
export type { LayerPolicy, PlatformPolicy, PolicyKey } from "./layer-policy.ts";
export { parseLimits, limitsModel, enforceLimit, DEFAULT_LIMITS, LIMIT_CEILINGS, LIMIT_NAMES } from "./layer-limits.ts";
export type { LayerLimits, LimitName } from "./layer-limits.ts";
export type { InflationBound, LayerCompression } from "./layer-reader.ts";
export { readLayer } from "./layer-reader.ts";
export {
  readDirectory,
  readDirectoryStreamed,
  streamedRegular,
  linkLeavesRoot,
  entriesTree,
  normalizeMode,
  DEFAULT_DIR_LIMITS,
  LAYER_DIR_LIMIT_NAMES,
} from "./dir-reader.ts";
export type { DirLimits, DirLimitNames, DirReadPolicy, OverlayXattrReader } from "./dir-reader.ts";
export { bytesContent, streamEntry, tarChunks, writeTar } from "./tar-writer.ts";
export type { FileContent, TarEntry, TarStreamEntry } from "./tar-writer.ts";
export { applyLayers } from "./apply-layers.ts";
export type { ApplyLayersOptions, ApplyResult, ApplyStats, DroppedXattrs, LayerInput, LayerIssue, SkippedMember } from "./apply-layers.ts";
export { entriesInByteOrder, FrozenTree } from "./frozen-tree.ts";
