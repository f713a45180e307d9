export { CairnError, ERROR_CODES, isCairnError, refuseAll, ioError, MAX_ISSUES, MAX_ISSUE_LINES } from "./errors.ts";
export type { ErrorCode, Issue } from "./errors.ts";
export {
  parseDigest,
  parseSha256,
  isDigest,
  isSha256,
  digestHex,
  hexDigestBytes,
  sha256,
  sha256Text,
  blake3,
  Sha256Hasher,
  ContentHasher,
  verifyDigest,
} from "./digest.ts";
export type { Digest, Sha256Digest, Blake3Digest } from "./digest.ts";
export {
  canonicalize,
  canonicalBytes,
  encodeNumber as jcsNumber,
  encodeString as jcsString,
  escapePointer,
  isPlainString as jcsPlain,
  hasLoneSurrogate,
} from "./jcs.ts";
export type { JsonValue } from "./jcs.ts";
export { parseJsonText, parseJsonBytes, decodeUtf8, isJsonObject, toJsonValue } from "./json.ts";
export type { JsonModel, JsonObject } from "./json.ts";
export { parseYamlText, parseYamlBytes, readYamlText, toYamlText } from "./yaml.ts";
export { Checker, childPath, describe } from "./model.ts";
export {
  generateSigningKey,
  keyIdOf,
  readSigningKey,
  readVerifyingKey,
  signBytes,
  verifyBytes,
  writeKeyPair,
  verifyingKeyFromRaw,
  signingKeyFromSeed,
} from "./keys.ts";
export type { SigningKey, VerifyingKey } from "./keys.ts";
export { pae, signEnvelope, verifyEnvelope, parseEnvelope } from "./dsse.ts";
export type { DsseEnvelope, DsseSignature } from "./dsse.ts";
export {
  writeFileAtomic,
  mkdirPrivate,
  tempSibling,
  removeAbandonedSiblings,
  makeDirs,
  fsyncDir,
  readFullyAt,
  writeFully,
  writeFullyAt,
  writeNewFile,
  writeNewFileAsync,
  openForRead,
  openDirectory,
  createExclusive,
} from "./files.ts";
export { openRoot, openDirIn, hasDirIn, withDirIn, ensureDirsIn, removeIn, descriptorPath, MAX_MARKER_BYTES } from "./owned-root.ts";
export type { RootKind, DirOptions } from "./owned-root.ts";
export { describeNotWritable, mediaErrno, mountOf, notWritable, writeRefusal } from "./read-only.ts";
export { fileKind, hashFileBounded, hashFileBoundedOnThread, readFileBounded, readFilePrefix, streamFileBounded } from "./bounded-read.ts";
export { safeComponent, digestComponents } from "./safepath.ts";
export {
  CAMPAIGN_LIMITS,
  EXPLORE_LIMITS,
  checkLimit,
  formatBytes,
  FIXED_LIMIT_HINT,
  REMOTE_LIMITS,
  RUN_ENV_LIMITS,
  remoteLimitHint,
  remoteLimitSpelling,
  remoteLimits,
} from "./limits.ts";
export type { RemoteLimits } from "./limits.ts";
export { declareIdentity, isIdentityDeclaration, identityBytes, identityDigest, identityHasher, defineScope, scopeFieldNames } from "./identity.ts";
export type { IdentityDeclaration, IdentityFraming, IdentityRole, IdentityScope } from "./identity.ts";
export { compareBytes, devcontainersCliOrder, inByteOrder, sortByBytes, sortedRecord } from "./byte-order.ts";
export { codeFile, codeModule, codeRoot, runningSources } from "./code-path.ts";
export { hashOnThread, inflateOnThread } from "./inflate-thread.ts";
export type { InflateHandlers, InflateJob } from "./inflate-thread.ts";
export { cairnDir, registryAuthFiles } from "./locations.ts";
export { noProgress } from "./progress.ts";
export type { Progress, ProgressEvent, ProgressUnit, Reporter } from "./progress.ts";
export type { CairnDirKind } from "./locations.ts";
export { esc as escapeHtml, htmlPage, PAGE_CSP, shortDigest, digestCell, svg } from "./html-page.ts";
export type { PageOptions } from "./html-page.ts";
