// The manifest namespace of the public API (`import { manifest } from "cairn"`
// or `from "cairn/manifest"`): devcontainer.json → environment manifest, its
// address, pinning label, signature, field diff and resume check.
export { ingestDevcontainer, loadManifestOrDevcontainer, readManifestFile } from "./index.ts";
export type { IngestOptions, IngestResult, Loaded, LocalFeaturePins } from "./index.ts";
export { FEATURE_DIR_LIMITS, localFeatureDigest } from "./index.ts";
export { manifestAddress, manifestExtensionAddress, manifestPinning, manifestText, parseManifest } from "./index.ts";
export type { EnvCore, EnvExtension, EnvManifest, Pinning, StandardMount } from "./index.ts";
export { signManifest, verifyManifestSignature } from "./index.ts";
export type { ManifestSignature } from "./index.ts";
export { diffManifestCores, diffManifests } from "./index.ts";
export type { CoreDifference } from "./index.ts";
export { checkResume, parseSnapshotRef, snapshotRefOf } from "./index.ts";
export type { ResumeOptions, ResumeResult, SnapshotRef } from "./index.ts";
export {
  DEFAULT_MANIFEST_LIMITS,
  MANIFEST_ADDRESS,
  MANIFEST_ADDRESS_SCOPE,
  MANIFEST_EXTENSION_ADDRESS,
  MANIFEST_EXTENSION_SCOPE,
  MANIFEST_FIELD_SCOPE,
  MANIFEST_SIGNED,
} from "./index.ts";
export type { ManifestLimits } from "./index.ts";
export { pinDevcontainer, registryPinSources, devcontainerLockPath, devcontainerLockText, resolveFeatureClosure, registryFeatureSource } from "./index.ts";
export type {
  PinResult,
  PinChange,
  PinSources,
  PinOptions,
  DevcontainerLock,
  DevcontainerLockEntry,
  FeatureClosure,
  FeatureNode,
  FeatureSource,
  FeatureMetadata,
} from "./index.ts";
export { applyTemplate } from "./index.ts";
export type { AppliedOption, AppliedTemplate } from "./index.ts";
// Types the signatures above name (the API report fails when a public signature names a type the package does not export).
export type { ChangeKind } from "./core-diff.ts";
export type { CliFeatureRef, ClosureOptions, LockedDigests, SoftRef } from "./feature-closure.ts";
export type { FeatureArtifact, FeatureOptionValues } from "./feature-metadata.ts";
export type { FeatureEntry, FeatureOptions } from "./features.ts";
export type { MountKind, NormalizedMount } from "./mounts.ts";
