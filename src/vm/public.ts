// The vm namespace of the public API (`import { vm } from "cairn"` or
// `from "cairn/vm"`): the guest kit, recording and replaying runs, run
// manifests, scenarios and failure bundles, and the VM and outcome
// identities. QEMU arguments, the guest image and the protocol stay internal.
export { ensureKit, kitDir, loadKit, setupKit } from "./index.ts";
export type { Kit, SetupOptions } from "./index.ts";
export { defaultRunsDir, recordRun } from "./index.ts";
export type { RecordOptions, RecordResult } from "./index.ts";
export { recordBranch } from "./index.ts";
export type { BranchOptions } from "./index.ts";
export { isEnvironmentLockfile, readLockfileSpec, recordLockfileRun } from "./index.ts";
export type { LockfileRunOptions, LockfileRunResult, LockfileSpec } from "./index.ts";
export { preflight, replayRun } from "./index.ts";
export type { ReplayOptions, ReplayResult, ReplayVerdict } from "./index.ts";
export { parseRunManifest, readRunManifest, RUN_MANIFEST_SCHEMA, RUN_MANIFEST_SCOPE } from "./index.ts";
export type { RunManifest } from "./index.ts";
export { DEFAULT_SCENARIO, parseScenario } from "./index.ts";
export { checkWorkloadRun } from "./index.ts";
export type { Scenario } from "./index.ts";
export { writeFailureBundle } from "./index.ts";
export { OUTCOME_IDENTITY, OUTCOME_SCOPE, TREE_MANIFEST_IDENTITY, VM_IDENTITY, VM_IDENTITY_SCOPE } from "./index.ts";
export type { KernelFailure, KernelReason } from "./index.ts";
export type { RunStatus, VmIdentity } from "./index.ts";
export { collectStoreGarbage } from "./index.ts";
export type { StoreGcOptions, StoreGcResult } from "./index.ts";
export { receiptStatement, RUN_PREDICATE_TYPE, signReceipt, verifyReceipt } from "./index.ts";
export type { ReceiptStatement, ReceiptVerification, RunEnvironment } from "./index.ts";
export { importBundle, openBundle, RUN_BUNDLE_SCHEMA, writeRunBundle } from "./index.ts";
export type { ImportOptions, OpenedBundle, WriteBundleOptions } from "./index.ts";
export { BUNDLE_ARTIFACT, importRegistryBundle, localRun, pushBundle } from "./index.ts";
export type { FetchBundleOptions, FetchCounts, FetchedBundle, LocalRun, LocalRunOptions, PushBundleOptions, PushedBundle } from "./index.ts";
// Types the signatures above name (the API report fails when a public signature names a type the package does not export).
export type { BundleInput } from "./bundle.ts";
export type { AssertionResult } from "./checker.ts";
export type { CheckpointAfter, CheckpointSpec } from "./checkpoint-spec.ts";
export type { OutputListener } from "./follow.ts";
export type { Evaluation } from "./guest.ts";
export type { RunInputsRef } from "./input-listing.ts";
export type { ResponderIdentity, VmNetwork } from "./netid.ts";
export type { NetworkSpec } from "./network-spec.ts";
export type { NormalizedEvent, StreamFacts } from "./protocol.ts";
export type { RunCheckpoints } from "./run-manifest.ts";
export type { FileRef, RunBranch } from "./branch-manifest.ts";
export type { BundleInputs, BundleKitFacts, BundleMember } from "./run-bundle.ts";
export type { Expectation, NetworkAction, RunInput, RunLimits, Step, StreamName, Trigger } from "./scenario.ts";
export type { GuestRoot } from "./sizing.ts";
export type { RootDisk } from "./vmid.ts";
export type { EventName } from "./wire.ts";
