// The workload namespace of the public API (`import { workload } from "cairn"`
// or `from "cairn/workload"`): workload specs, assembly into the store, the
// workload lock, verified reopening, and the identities with their scopes.
export { parseWorkloadSpec } from "./index.ts";
export type { WorkloadSpec } from "./index.ts";
export { assembleWorkload, checkWorkload, openVerifiedWorkload, verifyWorkloadLock } from "./index.ts";
export type {
  AssembleMemo,
  AssembleOptions,
  AssembleResult,
  CheckProblem,
  CheckResult,
  Derivation,
  LockVerification,
  MemoSource,
  PolicyListing,
  VerifiedWorkload,
  VerifyOptions,
} from "./index.ts";
export { parseWorkloadLock, readWorkloadLock, WORKLOAD_LOCK_SCHEMA } from "./index.ts";
export type { WorkloadLock } from "./index.ts";
export { launchIdentity, sourceIdentity, workloadIdentity } from "./index.ts";
export type { Launch, WorkloadIdentities } from "./index.ts";
export { LAUNCH_IDENTITY, LAUNCH_IDENTITY_SCOPE, SOURCE_IDENTITY, SOURCE_IDENTITY_SCOPE, WORKLOAD_IDENTITY, WORKLOAD_IDENTITY_SCOPE } from "./index.ts";
export { checkStaticExecutable } from "./index.ts";
export type { ElfFacts } from "./index.ts";
export { pullToLayout, pullToStore } from "./index.ts";
export type { PullResult, RemoteOptions } from "./index.ts";
// Types the signatures above name (the API report fails when a public signature names a type the package does not export).
export type { RawRef, RawRole } from "./closure.ts";
export type { RunCheck } from "./image-check.ts";
export type { BinarySourceSpec, OciLaunchSpec, OciSourceSpec, SourceSpec } from "./spec.ts";
export type { SourceFacts, SourceKind } from "./workload-identity.ts";
