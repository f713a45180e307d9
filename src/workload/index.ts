// The workload area's public surface: specs, identities, the lock, assembly and verification.
// The canonical tree, layer policy and limits live in tree/; OCI reading in oci/.
export { parseWorkloadSpec, checkWorkloadSpec, canonicalSpecModel, SPEC_MAX_BYTES } from "./spec.ts";
export type { WorkloadSpec } from "./spec.ts";
export { checkStaticExecutable } from "./elf.ts";
export type { ElfFacts } from "./elf.ts";
export { launchIdentity, launchFromOci, makeLaunch, parseUser, LAUNCH_IDENTITY, LAUNCH_IDENTITY_SCOPE, LAUNCH_LIMITS } from "./launch.ts";
export type { Launch } from "./launch.ts";
export { workloadIdentity, sourceIdentity, WORKLOAD_IDENTITY, SOURCE_IDENTITY, WORKLOAD_IDENTITY_SCOPE, SOURCE_IDENTITY_SCOPE } from "./workload-identity.ts";
export type { WorkloadIdentities } from "./workload-identity.ts";
export { BINARY_INSTALL_PATH } from "./binary.ts";
export { encodeWorkloadLock, lockDigestOf, parseWorkloadLock, WORKLOAD_LOCK_SCHEMA, LOCK_DIGEST, LOCK_MAX_BYTES } from "./workload-lock.ts";
export type { WorkloadLock } from "./workload-lock.ts";
export { DERIVED_ENTRY_IDENTITY, DERIVED_ENTRY_SCOPE } from "./derived-entry.ts";
export { assembleWorkload } from "./assemble.ts";
export { checkSourcePaths } from "./source-file.ts";
export type { SourceScope } from "./source-file.ts";
export { checkWorkload } from "./image-check.ts";
export type { CheckProblem, CheckResult, RunCheck } from "./image-check.ts";
export type { PolicyListing } from "./oci-workload.ts";
export type { AssembleMemo, AssembleOptions, AssembleResult } from "./assemble.ts";
export { openVerifiedWorkload, readWorkloadLock, verifyWorkloadLock } from "./verified-workload.ts";
export type { LockVerification, VerifiedWorkload, VerifyOptions } from "./verified-workload.ts";
export { cairnBuild, defaultKeysDir, describeDerivation, loadVerifyKey, VERIFY_KEY_FILE, VERIFY_MEMO_SCHEMA } from "./verify-memo.ts";
export type { Derivation, MemoSource } from "./verify-memo.ts";
export { archiveToLayout, pullToLayout, pullToStore, storeBlobCache } from "./registry-pull.ts";
export type { PullResult, RemoteOptions } from "./registry-pull.ts";
