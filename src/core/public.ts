// The core namespace of the public API (`import { core } from "cairn"` or
// `from "cairn/core"`): typed errors, digests, canonical JSON, keys and
// signatures, the identity vocabulary and default locations. Internal helpers
// (bounded reads, limits, the model checker) stay in index.ts for cairn's own
// areas. A change here is a visible diff of api/cairn.api.md.
export { CairnError, ERROR_CODES, isCairnError } from "./index.ts";
export type { ErrorCode, Issue } from "./index.ts";
export { blake3, parseDigest, parseSha256, sha256, verifyDigest } from "./index.ts";
export type { Blake3Digest, Digest, Sha256Digest } from "./index.ts";
export { canonicalBytes, canonicalize, parseJsonText, parseYamlText } from "./index.ts";
export type { JsonValue } from "./index.ts";
export { generateSigningKey, keyIdOf, readSigningKey, readVerifyingKey, signBytes, verifyBytes, writeKeyPair } from "./index.ts";
export type { SigningKey, VerifyingKey } from "./index.ts";
export { parseEnvelope, signEnvelope, verifyEnvelope } from "./index.ts";
export type { DsseEnvelope, DsseSignature } from "./index.ts";
export { identityDigest } from "./index.ts";
export type { IdentityDeclaration, IdentityFraming, IdentityRole, IdentityScope } from "./index.ts";
export { cairnDir } from "./index.ts";
export type { CairnDirKind } from "./index.ts";
export { noProgress } from "./index.ts";
export type { Progress, ProgressEvent, ProgressUnit, Reporter } from "./index.ts";
export { REMOTE_LIMITS } from "./index.ts";
export type { RemoteLimits } from "./index.ts";
// Types the signatures above name (the API report fails when a public signature names a type the package does not export).
export type { DigestAlgorithm, Sha256Hasher } from "./digest.ts";
export type { CairnErrorOptions } from "./errors.ts";
export type { IdentityDigest } from "./identity.ts";
export type { JsonModel, JsonObject, ReadJsonOptions } from "./json.ts";
