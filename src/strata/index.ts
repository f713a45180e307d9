// Layered environments: profiles, layers, formations, base probe, registry, resolver, lockfiles.
export { compareVersions, compareVersionValues, isPrerelease, versionHasPrefix } from "./version.ts";
export { parseCapability, parseRequirement, requirementString, satisfies, satisfyingProviders } from "./capability.ts";
export type { Capability, Requirement } from "./capability.ts";
export { parseSoftwareRef, readRef, refString, refToModel } from "./ref.ts";
export { parseProfileText, profileToModel, profileToYaml, notActedUpon, trustNotes } from "./profile-model.ts";
export { readProfileFile } from "./profile-file.ts";
export type { Profile } from "./profile-model.ts";
export { ARCHES } from "./platform.ts";
export { parseLayerManifest, layerManifestToModel, layerId, LAYER_MANIFEST_TYPE, ABIS, INSTALL_LAYOUTS } from "./layer-manifest.ts";
export type { LayerManifest, Abi, InstallLayout, LayerArch, BuildProvenance, BuildEnvironment, CaptureRecord, CaptureSource } from "./layer-manifest.ts";
export { CAPTURE_SOURCES } from "./layer-manifest.ts";
export type { Formation } from "./formation-document.ts";
export { buildLayerBlob, gzipReproducible, writeLayerBlob } from "./blob.ts";
export type { LayerBlob, LayerBlobFacts, LayerBlobFile } from "./blob.ts";
export { BlobStaging, checkBlobFile, copyVerified, withBlobStaging } from "./blob-staging.ts";
export { readLayerBlobs, DEFAULT_MAX_UNPACKED_BYTES, MAX_EXPANSION_RATIO, EXPANSION_RATIO_AFTER_BYTES } from "./blob-reader.ts";
export { LocalRegistry } from "./registry.ts";
export type { BlobSource, LayerRegistry, SignedDocument } from "./registry.ts";
export { OciLayerRegistry, parseOciRegistryUrl } from "./registry-oci.ts";
export { LAYER_ARTIFACT, FORMATION_ARTIFACT, artifactTag } from "./registry-oci-artifact.ts";
export { SIGNATURE_SUFFIX, checkDocument, formationDocumentBytes, layerDocumentBytes } from "./registry-documents.ts";
export { openRegistries, openRegistryAt, openPublishRegistry, registryPath, defaultRegistryDir } from "./registry-open.ts";
export type { RegistryPlace } from "./registry-open.ts";
export type { OpenedRegistry } from "./registry-open.ts";
export { readTrust, attest } from "./trust.ts";
export { probeRoot, parseOsRelease, glibcVersionFromBytes } from "./probe.ts";
export type { ProbeResult } from "./probe.ts";
export { probeOciBase } from "./probe-oci.ts";
export type { ProbeOciOptions } from "./probe-oci.ts";
export { probedBase, declaredBase, baseDigest, BASE_DIGEST, BASE_DIGEST_SCOPE } from "./base.ts";
export type { LockBase } from "./base.ts";
export { Catalog, catalogFromRegistries } from "./catalog.ts";
export type { CatalogLayer } from "./catalog.ts";
export { resolveProfile, profileDigest, PROFILE_DIGEST } from "./resolve/resolver.ts";
export type { ResolveInput } from "./resolve/resolver.ts";
export { parseLockfileUnvalidated, parseLockfileText, isFrozen, viewLock, lockfileToYaml, NO_RECORDS, V1_FORMAT } from "./lockfile.ts";
export type { Lockfile, LockLayer, LockRecords, LayerRecord, LockFormation, VerificationPolicy } from "./lockfile.ts";
export {
  lockFileToYaml,
  parseLockFileText,
  validateLockFile,
  lockFileProblems,
  environmentId as strataEnvironmentId,
  environmentIdInput as strataEnvironmentIdInput,
  isFrozen as specIsFrozen,
} from "./spec/lock-file.ts";
export type * as StrataSpec from "./spec/types.ts";
export { recordsPath, readRecords, recordsToModel, pinnedSets, RECORDS_FORMAT } from "./lockfile-records.ts";
export { toSpecLayerManifest, bareHex, specManifestDifference } from "./layer-spec.ts";
export { convertV1Lockfile, convertV1LockfileFile } from "./lock-convert.ts";
export { environmentId, environmentIdInput, ENVIRONMENT_ID, ENVIRONMENT_ID_SCOPE } from "./env-id.ts";
export { freshness, checkFreshness, parseMaxAge, formatDuration } from "./freshness.ts";
export type { Freshness } from "./freshness.ts";
export { writeLockfile, readLockfile, readLockfileUnvalidated, signaturePath, signLockfile } from "./lockfile-io.ts";
export { requireLayerBlobs, verifyLock, verifyLockContents } from "./lockfile-verify.ts";
export { checkLayerContents } from "./contents.ts";
export type { VerifyReport, VerifyOptions } from "./lockfile-verify.ts";
export { lockfileCaveats } from "./lockfile-caveats.ts";
export { buildProvenanceLines, provenanceOf, provenanceText } from "./provenance.ts";
export type { ProvenanceRecord } from "./provenance.ts";
export { diffLocks } from "./lockfile-diff.ts";
export type { LockChange, LockDiff } from "./lockfile-diff.ts";
export { explainLock } from "./lockfile-explain.ts";
export { lockDiffHtml, lockExplainHtml } from "./lock-html.ts";
export type { ExplainedLayer, ExplainedPackageSet, LockExplained } from "./lockfile-explain.ts";
export { direction, installedPackages, layerFacts, lockChanges, packageSetKey } from "./lockfile-changes.ts";
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
} from "./lockfile-changes.ts";
export { planUpdate, UPDATE_IGNORED_PATHS } from "./update-plan.ts";
export type { LayerVersionChange, UpdatePlan } from "./update-plan.ts";
export { explainScope, explainText } from "./explain.ts";
export { buildLayerFromDirectory, foldLayers, formationOf, manifestFor, writeLayerFromDirectory } from "./build.ts";
export { freezeUpperLayer, frozenProfile, requireDirty } from "./layer-freeze.ts";
export { captureLayer } from "./capture.ts";
export type { CaptureOptions, CaptureReport } from "./capture.ts";
export { overlayXattrs } from "./overlay-xattrs.ts";
export type { DirtyLock } from "./layer-freeze.ts";
export {
  checkModulefile,
  generateModulefile,
  lmodLoginScript,
  modulefilePath,
  parseModuleEnv,
  LMOD_LOGIN_SCRIPT,
  MAX_MODULEFILE_BYTES,
  MODULEFILE_ROOT,
} from "./modulefile.ts";
export type { LayerSpec, RecordedBuild, SourceTrust } from "./build.ts";
export { searchPlatform, searchRegistries } from "./registry-search.ts";
export {
  buildRegistryIndex,
  indexIsCurrent,
  indexPath,
  openDirectoryRegistry,
  readRegistryIndexBytes,
  writeRegistryIndex,
  REGISTRY_INDEX_FILE,
  REGISTRY_INDEX_FORMAT,
  MAX_INDEX_BYTES,
} from "./registry-index.ts";
export type { IndexBuild, IndexedFormation, IndexedLayer, RegistryIndex, RegistryProblem } from "./registry-index.ts";
export { parseRemoveTarget, removeFromRegistry } from "./registry-remove.ts";
export type { RemoveResult, RemoveTarget } from "./registry-remove.ts";
export type { SearchHit, SearchOptions } from "./registry-search.ts";
export { freezeLock } from "./freeze/freeze-lock.ts";
export type { FreezeOptions, FreezeResult } from "./freeze/freeze-lock.ts";
export { DEFAULT_FREEZE_LIMITS, FREEZE_LIMIT_NAMES } from "./freeze/index-source.ts";
export type { FreezeLimits } from "./freeze/index-source.ts";
export type { FrozenPackages, LockPackageSet, PackagePin } from "./freeze/pins.ts";
export { exportLock, EXPORT_ANNOTATIONS, EXPORT_FORMATS, DEFAULT_EXPORT_LAUNCH } from "./lockfile-export.ts";
export { EXPORT_MODULE_ROOT } from "./export-lmod.ts";
export { EXPORT_PACKAGES_ROOT, PACKAGES_MANIFEST_FORMAT } from "./export-packages.ts";
export type { AddedExportLayer, ExportBase, ExportFormat, ExportLaunch, ExportLockOptions, ExportResult } from "./lockfile-export.ts";
