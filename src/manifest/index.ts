// Environment manifests: devcontainer.json → canonical core, BLAKE3 address,
// Ed25519 signature, pinning labels, field-level diff, resume linkage.
export { FIELD_SCOPE, NOT_COVERED, MANIFEST_SCHEMA, scopeOf, fieldsOfClass } from "./scope.ts";
export type { FieldScope, ScopeClass, IdentityField, ScopedField } from "./scope.ts";
export { buildCore } from "./core.ts";
export type { EnvCore, BuiltCore } from "./core.ts";
export type { FeatureEntry, FeatureOptions } from "./features.ts";
export type { NormalizedMount, MountKind } from "./mounts.ts";
export { DEFAULT_MANIFEST_LIMITS } from "./declared.ts";
export type { ManifestLimits } from "./declared.ts";
export { parseReference, normalizeFeatureId } from "./reference.ts";
export type { ParsedReference } from "./reference.ts";
export { addressOf, coreBytes, pinningOf, manifestOf, ingestDevcontainer, signManifest, verifyManifestSignature } from "./manifest.ts";
export type { EnvManifest, ManifestSignature, Pinning, IngestResult } from "./manifest.ts";
export { parseManifest, parseCore, manifestText, isManifestDocument } from "./document.ts";
export { diffCores } from "./diff.ts";
export type { CoreDifference, ChangeKind } from "./diff.ts";
export { checkResume, snapshotRefOf, parseSnapshotRef, SNAPSHOT_REF_SCHEMA } from "./resume.ts";
export type { SnapshotRef } from "./resume.ts";
export { readManifestFile, readInputFile, loadManifestOrDevcontainer, MAX_DEPTH } from "./read.ts";
export type { Loaded } from "./read.ts";
