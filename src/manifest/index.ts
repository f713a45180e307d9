// Environment manifests: devcontainer.json → canonical core, BLAKE3 address,
// Ed25519 signature, pinning labels, field-level diff, resume linkage.
// Names carry "manifest" where a bare name could clash with another area's.
export {
  FIELD_SCOPE as MANIFEST_FIELD_SCOPE,
  MANIFEST_ADDRESS,
  MANIFEST_ADDRESS_SCOPE,
  EXTENSION_ADDRESS as MANIFEST_EXTENSION_ADDRESS,
  EXTENSION_ADDRESS_SCOPE as MANIFEST_EXTENSION_SCOPE,
  MANIFEST_SIGNED,
} from "./scope.ts";
export type { EnvCore, EnvExtension, StandardMount, BuiltCore } from "./core.ts";
export { DEFAULT_MANIFEST_LIMITS } from "./declared.ts";
export type { ManifestLimits } from "./declared.ts";
export {
  addressOf as manifestAddress,
  extensionAddressOf as manifestExtensionAddress,
  pinningOf as manifestPinning,
  ingestDevcontainer,
  signManifest,
  verifyManifestSignature,
} from "./env-manifest.ts";
export type { EnvManifest, ManifestSignature, Pinning, IngestOptions, IngestResult } from "./env-manifest.ts";
export { FEATURE_DIR_LIMITS, localFeatureDigest, pinLocalFeatures } from "./local-features.ts";
export type { LocalFeaturePins } from "./local-features.ts";
export { parseManifest, manifestText } from "./document.ts";
export { diffCores as diffManifestCores, diffManifestParts as diffManifests } from "./core-diff.ts";
export type { CoreDifference } from "./core-diff.ts";
export { checkResume, snapshotRefOf, parseSnapshotRef } from "./resume.ts";
export type { SnapshotRef, ResumeOptions, ResumeResult } from "./resume.ts";
export { readManifestFile, readInputFile as readManifestInput, loadManifestOrDevcontainer } from "./read.ts";
export type { Loaded } from "./read.ts";
export { pinDevcontainer, registryPinSources } from "./pin.ts";
export type { PinResult, PinChange, PinSources, PinOptions } from "./pin.ts";
export {
  applyDevcontainerLock,
  checkFrozenLock,
  devcontainerLockPath,
  devcontainerLockText,
  lockOfClosure,
  parseDevcontainerLock,
  readLockFileState,
  MAX_DEVCONTAINER_LOCK_BYTES,
} from "./devcontainer-lock.ts";
export type { AppliedLock, DevcontainerLock, DevcontainerLockEntry, LockFileState } from "./devcontainer-lock.ts";
export { resolveFeatureClosure, cliFeatureRef, MAX_FEATURE_CLOSURE } from "./feature-closure.ts";
export type { FeatureClosure, FeatureNode, ClosureOptions, CliFeatureRef } from "./feature-closure.ts";
export {
  featureArtifactOf,
  parseFeatureMetadata,
  registryFeatureSource,
  MAX_FEATURE_METADATA_BYTES,
  MAX_FEATURE_LAYER_BYTES,
  FEATURE_CONFIG_MEDIA_TYPE,
  FEATURE_LAYER_MEDIA_TYPE,
} from "./feature-metadata.ts";
export type { FeatureArtifact, FeatureMetadata, FeatureOptionValues, FeatureSource } from "./feature-metadata.ts";
export { applyTemplate, applyTemplateText, parseTemplateMetadata, readTemplateDir, resolveTemplateOptions } from "./template.ts";
export type { AppliedOption, AppliedTemplate, TemplateMetadata, TemplateOption } from "./template.ts";
