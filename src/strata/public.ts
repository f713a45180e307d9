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
