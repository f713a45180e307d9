// The runs library: guest kit, guest image, QEMU record/replay, protocol, checker.
export { CpioWriter, S_IFDIR, S_IFREG, S_IFLNK, S_IFCHR } from "./cpio.ts";
export type { CpioEntry } from "./cpio.ts";
export { writeGuestImage, DEV_SYMLINKS } from "./initramfs.ts";
export type { GuestImage, GuestImageParts } from "./initramfs.ts";
export { writeGuestImageFile } from "./boot-image.ts";
export { planErofs, planned, writeErofs, EROFS_BLOCK } from "./erofs.ts";
export type { ErofsPlan, ErofsImage } from "./erofs.ts";
export { encodeTreeManifest, TREE_MANIFEST_IDENTITY, treeManifestBytes } from "./tree-manifest.ts";
export type { TreeManifest } from "./tree-manifest.ts";
export { kernelFailures, consoleFailures, KERNEL_PATTERNS } from "./kernel-log.ts";
export type { KernelFailure, KernelReason } from "./kernel-log.ts";
export { encodeInputs } from "./inputs.ts";
export type { GuestLaunch } from "./inputs.ts";
export { parseScenario, DEFAULT_SCENARIO, DEFAULT_RUN_LIMITS } from "./scenario.ts";
export type { Scenario, Step, Trigger, GuestRoot, RunInput } from "./scenario.ts";
export { decodeProtocol, DEFAULT_PROTOCOL_LIMITS } from "./protocol.ts";
export type { DecodedProtocol, NormalizedEvent } from "./protocol.ts";
export {
  checkAssertions,
  outcomeDigest,
  runStatus,
  runStatusFailure,
  splitLines,
  OUTCOME_IDENTITY,
  OUTCOME_SCOPE,
  RUN_STATUS_ERRORS,
  RUN_STATUSES,
} from "./checker.ts";
export type { AssertionResult, RunStatus } from "./checker.ts";
export {
  VM_IDENTITY,
  VM_IDENTITY_SCOPE,
  defaultVmIdentity,
  vmDigest,
  parseVmIdentity,
  firstVmDifference,
  parseModuleEntries,
  ROOT_DISK_DEVICE,
} from "./vmid.ts";
export type { VmIdentity, RootDisk } from "./vmid.ts";
export { qemuArgs, runQemu } from "./qemu.ts";
export type { QemuPaths } from "./qemu.ts";
export { buildAgent, AGENT_SOURCE_DIR } from "./agentbuild.ts";
export { kitDir, kitForRun, loadKit, qemuVersion, AGENT_SOURCE_DIGEST } from "./kit.ts";
export type { Kit, KitNeeds } from "./kit.ts";
export { setupKit, ensureKit, missingPackages } from "./kit-setup.ts";
export type { SetupOptions } from "./kit-setup.ts";
export { prepareGuest, bootGuest, evaluate } from "./guest.ts";
export {
  BASE_MEMORY_MIB,
  checkRoom,
  chooseRoot,
  defaultMemoryMib,
  DISK_ROOT_FROM_BYTES,
  IMAGE_BYTES,
  IMAGE_BYTES_CEILING,
  imageBytesMax,
  sizeGuest,
  treeFileBytes,
} from "./sizing.ts";
export type { GuestSize } from "./sizing.ts";
export { checkWorkloadRun, runCheck } from "./run-check.ts";
export type { PreparedGuest, BootResult, Evaluation } from "./guest.ts";
export { afterText } from "./checkpoint-spec.ts";
export { recordRun, defaultRunsDir } from "./record.ts";
export { recordBranch } from "./branch.ts";
export type { BranchOptions } from "./branch.ts";
export type { RecordOptions, RecordResult } from "./record.ts";
export { assembleLockfileWorkload, isEnvironmentLockfile, readLockfileSpec, recordLockfileRun } from "./lockfile-run.ts";
export { checkRunEnv, parseEnvAssignments } from "./run-env.ts";
export type { LockfileAssembleOptions, LockfileRunOptions, LockfileRunResult, LockfileSpec } from "./lockfile-run.ts";
export { replayRun, preflight, readRecordedList, readRunManifest, replayKit, runKitNeeds } from "./replay-run.ts";
export { listRuns, describeRun, filterRuns, RUN_STATUS_GROUPS, statusesNamed, CHECK_MEANING } from "./run-summary.ts";
export { runView, PICTURE_LIMITS } from "./run-view.ts";
export type { RunView, RunViewOptions, TimelineItem, ReplayPicture } from "./run-view.ts";
export { runHtml } from "./run-html.ts";
export { runTrace } from "./run-trace.ts";
export { checkRunDir } from "./run-dir-check.ts";
export type { RunDirCheck, RunDirCheckResult } from "./run-dir-check.ts";
export { describeOrigin, readRunOrigin, RUN_ORIGIN_FILE } from "./run-origin.ts";
export type { RunOrigin } from "./run-origin.ts";
export { describeOutcome, recordedFailure, verdictLine } from "./replay-verdict.ts";
export type { ReplayVerdict } from "./replay-verdict.ts";
export type { DescribeOptions, RunFilter, RunSummary, UnreadableRun } from "./run-summary.ts";
export type { ReplayOptions, ReplayResult } from "./replay-run.ts";
export { parseRunManifest, RUN_MANIFEST_SCHEMA, RUN_MANIFEST_SCOPE } from "./run-manifest.ts";
export type { RunManifest } from "./run-manifest.ts";
export { writeFailureBundle } from "./bundle.ts";
export { collectStoreGarbage } from "./store-gc.ts";
export type { StoreGcOptions, StoreGcResult } from "./store-gc.ts";
export {
  signReceipt,
  verifyReceipt,
  receiptStatement,
  firstDifference,
  RECEIPT_FILE,
  RUN_PREDICATE_TYPE,
  IN_TOTO_PAYLOAD_TYPE,
  IN_TOTO_STATEMENT_TYPE,
} from "./run-receipt.ts";
export type { ReceiptStatement, ReceiptVerification } from "./run-receipt.ts";
export type { RunEnvironment } from "./run-facts.ts";
export { writeRunBundle, bundleKit, RUN_BUNDLE_SCHEMA } from "./run-bundle.ts";
export type { BundleMember, WriteBundleOptions } from "./run-bundle.ts";
export { openBundle, importBundle } from "./bundle-import.ts";
export type { ImportOptions, OpenedBundle } from "./bundle-import.ts";
export { BUNDLE_ARTIFACT, BUNDLE_SCHEME, MEMBER_ANNOTATION, parseBundleRef } from "./bundle-artifact.ts";
export { pushBundle } from "./bundle-push.ts";
export type { PushBundleOptions, PushedBundle } from "./bundle-push.ts";
export { importRegistryBundle, readRegistryRunManifest } from "./bundle-fetch.ts";
export type { FetchBundleOptions, FetchCounts, FetchedBundle } from "./bundle-fetch.ts";
export { localRun } from "./run-source.ts";
export type { LocalRun, LocalRunOptions } from "./run-source.ts";
export { readRunInputs, mergeRunInputs, RUN_INPUT_LIMITS } from "./run-inputs.ts";
export type { RunInputTree } from "./run-inputs.ts";
export { encodeListing, loadRunInputs, storeRunInputs, runInputObjects, RUN_INPUTS_SCHEMA } from "./input-listing.ts";
export type { RunInputsRef } from "./input-listing.ts";
// what the fleet floor (campaigns, issue 34) runs through: the same readers, staging and interrupt handler a run uses
export { readHttpRoot } from "./responder-host.ts";
export { runHostScope } from "./run-inputs.ts";
export { removeDeadStaging } from "./run-staging.ts";
export { onInterrupt } from "./interrupt.ts";
export { killGroup, killGroupAndWait, processAlive, processStartTime } from "./processes.ts";
export { guestInstructions } from "./replay-log.ts";
export { replayFilesAgree } from "./run-dir-check.ts";
export { RUNS_ROOT } from "./record.ts";
export { firstListDifference } from "./replay-diff.ts";
export { RUN_FILES } from "./rundir.ts";
