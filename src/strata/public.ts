// The strata namespace of the public API (`import { strata } from "cairn"` or
// `from "cairn/strata"`): layered environments. Profiles, registries and
// trust, base probing, the resolver, environment lockfiles and their
// EnvironmentID, verification, and building (or capturing) layers and formations.
export { notActedUpon, parseProfileText, profileToYaml, readProfileFile } from "./index.ts";
export type { Profile } from "./index.ts";
export { catalogFromRegistries, LocalRegistry, OciLayerRegistry, openPublishRegistry, openRegistries, readTrust, searchRegistries } from "./index.ts";
export type { LayerRegistry, OpenedRegistry, RegistryPlace, SearchHit, SearchOptions, SignedDocument } from "./index.ts";
export { buildRegistryIndex, removeFromRegistry, writeRegistryIndex } from "./index.ts";
export type { IndexBuild, IndexedFormation, IndexedLayer, RegistryIndex, RegistryProblem, RemoveResult, RemoveTarget } from "./index.ts";
export { declaredBase, probedBase, probeOciBase, probeRoot } from "./index.ts";
export type { LockBase, ProbeOciOptions, ProbeResult } from "./index.ts";
export { resolveProfile } from "./index.ts";
export type { ResolveInput } from "./index.ts";
export { lockFileToYaml, parseLockFileText, parseLockfileText, readLockfile, writeLockfile, viewLock, strataEnvironmentId, validateLockFile } from "./index.ts";
export type { Lockfile, LockLayer, VerificationPolicy } from "./index.ts";
export { BASE_DIGEST, BASE_DIGEST_SCOPE, ENVIRONMENT_ID, ENVIRONMENT_ID_SCOPE, environmentId } from "./index.ts";
export { diffLocks, explainScope, freshness, lockfileCaveats, planUpdate, provenanceOf, requireLayerBlobs, verifyLock } from "./index.ts";
export { explainLock, lockChanges, lockDiffHtml, lockExplainHtml } from "./index.ts";
export type { ExplainedLayer, ExplainedPackageSet, LockExplained } from "./index.ts";
export type {
  DefaultChange,
  FormationChange,
  LayerChange,
  LayerChangeKind,
  LayerFacts,
  LockChanges,
  PackageChange,
  PackageChangeKind,
  PackageSetChange,
  RequestChange,
} from "./index.ts";
export type { Freshness, LayerVersionChange, LockChange, LockDiff, ProvenanceRecord, UpdatePlan, VerifyOptions, VerifyReport } from "./index.ts";
export { buildLayerFromDirectory, captureLayer, foldLayers, formationOf } from "./index.ts";
export type { CaptureOptions, CaptureRecord, CaptureReport, CaptureSource, Formation, LayerManifest, LayerSpec, SourceTrust } from "./index.ts";
export { parseCapability, parseRequirement, satisfies } from "./index.ts";
export type { Capability, Requirement } from "./index.ts";
export { DEFAULT_FREEZE_LIMITS, freezeLock } from "./index.ts";
export type { FreezeLimits, FreezeOptions, FreezeResult, FrozenPackages, LockPackageSet, PackagePin } from "./index.ts";
export { EXPORT_ANNOTATIONS, exportLock } from "./index.ts";
export type { AddedExportLayer, ExportBase, ExportLaunch, ExportLockOptions, ExportResult } from "./index.ts";
// Types the signatures above name (the API report fails when a public signature names a type the package does not export).
export type { BaseAbi } from "./base.ts";
export type { BlobStaging } from "./blob-staging.ts";
export type { LayerBlob, LayerBlobFacts, LayerBlobFile } from "./blob.ts";
export type { RecordedBuild } from "./build.ts";
export type { Catalog, CatalogFormation, CatalogLayer, CatalogSource } from "./catalog.ts";
export type { Explanation } from "./explain.ts";
export type { FormationMember } from "./formation-document.ts";
export type { PinKind } from "./freeze/pins.ts";
export type { Abi, BuildEnvironment, BuildProvenance, FoldedFrom, InstallLayout, LayerArch } from "./layer-manifest.ts";
export type { ExportFormat } from "./lockfile-export.ts";
export type { LockSignature, ReadLock } from "./lockfile-io.ts";
export type { LayerRecord, LockFormation, LockRecords } from "./lockfile.ts";
export type { Arch } from "./platform.ts";
export type { InstanceConfig, MutableLayer, ProfileDefaults, MutableLayerSpec as ProfileMutableLayerSpec, StorageMount } from "./profile-forms.ts";
export type { PackageManager, PackageRef, PackageSet, RegistryRef } from "./profile-model.ts";
export type { SoftwareRef } from "./ref.ts";
export type { ArtifactKind, BlobRef } from "./registry-oci-artifact.ts";
export type { OciRegistryOptions } from "./registry-oci.ts";
export type { RegistryChoice } from "./registry-open.ts";
export type { Awaitable, BlobSource } from "./registry.ts";
export type {
  BaseCapabilities,
  HostRequirement,
  LayerRef,
  LockFile,
  BuildEnvironment as LockFileBuildEnvironment,
  Capability as LockFileCapability,
  LayerManifest as LockFileLayerManifest,
  Requirement as LockFileRequirement,
  MutableLayerSpec,
  ResolvedBase,
  ResolvedLayer,
  ResolvedPackageEntry,
  ResolvedPackageSet,
  StringMap,
} from "./spec/types.ts";
export type { Attestation } from "./trust.ts";
