/**
 * The environment manifest: a core, its address, honest pinning labels, what
 * the address does not cover, and an optional Ed25519 signature.
 *
 *   address           = blake3 of the JCS bytes of the core: the standard's
 *                       five fields under its tag `sandbox.env-manifest/1`
 *                       (a field of the core, hashed in front of the content);
 *                       the same file has this address in every conforming
 *                       implementation
 *   extension_address = blake3 of the JCS bytes of cairn's extension object
 *                       (`cairn.env-extension/1`): the execution-relevant
 *                       fields the standard does not name
 *   signature         = Ed25519 over `cairn.env-manifest-signed/1` NUL
 *                       JCS({address, extension_address}), with the signer's key id
 *
 * Everything outside the core (address, labels, not_covered) is derived from
 * the core, so a reader recomputes it instead of trusting it; see document.ts.
 */
import {
  identityBytes,
  identityDigest,
  signBytes,
  verifyBytes,
  CairnError,
  type Blake3Digest,
  type Sha256Digest,
  type SigningKey,
  type VerifyingKey,
} from "../core/index.ts";
import { buildCore, type EnvCore, type EnvExtension } from "./core.ts";
import { DEFAULT_MANIFEST_LIMITS, type ManifestLimits } from "./declared.ts";
import { normalizeFeatureId, parseReference } from "./reference.ts";
import { pinLocalFeatures } from "./local-features.ts";
import type { DirLimits } from "../tree/index.ts";
import { EXTENSION_ADDRESS, MANIFEST_ADDRESS, MANIFEST_DOCUMENT_SCHEMA, MANIFEST_SIGNED, NOT_COVERED } from "./scope.ts";

export interface ManifestSignature {
  key_id: Sha256Digest;
  /** Base64 of the 64-byte Ed25519 signature over the signed statement (both addresses). */
  sig: string;
}

export interface EnvManifest {
  schema: typeof MANIFEST_DOCUMENT_SCHEMA;
  /** The standard's address: of `core` alone. */
  address: Blake3Digest;
  /** cairn's extension address: of `extension` alone. */
  extension_address: Blake3Digest;
  /** True only when the image, every feature and every feature of the lock's dependsOn closure are addressed by @sha256, or (local features) pinned by their directory's digest in the extension. */
  pinned: boolean;
  image_pinned: boolean;
  /** JSON pointers (into `core`) of every reference addressed by tag or URL. */
  unpinned: string[];
  core: EnvCore;
  extension: EnvExtension;
  not_covered: string[];
  signature?: ManifestSignature;
}

/** The standard's address of a core. */
export function addressOf(core: EnvCore): Blake3Digest {
  return identityDigest(MANIFEST_ADDRESS, core);
}

/** The address of cairn's extension object. */
export function extensionAddressOf(extension: EnvExtension): Blake3Digest {
  return identityDigest(EXTENSION_ADDRESS, extension);
}

/** The bytes a signature covers: both addresses, so one signature binds core and extension. */
export function signedBytes(m: Pick<EnvManifest, "address" | "extension_address">): Buffer {
  return identityBytes(MANIFEST_SIGNED, { address: m.address, extension_address: m.extension_address });
}

export interface Pinning {
  pinned: boolean;
  image_pinned: boolean;
  unpinned: string[];
}

/**
 * The single definition of the manifest's pinning labels (pinned-ness of one
 * reference is in reference.ts). A local feature is pinned when the extension
 * holds the digest of its directory (`--features-dir`, local-features.ts).
 */
export function pinningOf(core: EnvCore, extension: Pick<EnvExtension, "local_features" | "feature_closure">): Pinning {
  const image = parseReference(core.image);
  const image_pinned = image.ok && image.ref.pinned;
  const unpinned: string[] = image_pinned ? [] : ["/image"];
  const localPins = extension.local_features ?? {};
  core.features.forEach((f, i) => {
    const r = normalizeFeatureId(f.id);
    const pinnedByDir = r.ok && r.kind === "local" && Object.hasOwn(localPins, f.id);
    if (!r.ok || !(r.pinned || pinnedByDir)) unpinned.push(`/features/${i}/id`);
  });
  // the dependsOn closure a lockfile supplied: each must be by digest too
  (extension.feature_closure ?? []).forEach((ref, i) => {
    const r = normalizeFeatureId(ref);
    if (!r.ok || !r.pinned) unpinned.push(`/extension/feature_closure/${i}`);
  });
  return { pinned: unpinned.length === 0, image_pinned, unpinned };
}

export function manifestOf(core: EnvCore, extension: EnvExtension): EnvManifest {
  return {
    schema: MANIFEST_DOCUMENT_SCHEMA,
    address: addressOf(core),
    extension_address: extensionAddressOf(extension),
    ...pinningOf(core, extension),
    core,
    extension,
    not_covered: [...NOT_COVERED],
  };
}

export interface IngestResult {
  manifest: EnvManifest;
  /** Excluded fields that were present in the input (names only). */
  excluded: string[];
}

export interface IngestOptions {
  key?: SigningKey;
  limits?: ManifestLimits;
  /** The folder local feature ids (`./x`) are relative to: each is hashed and pinned (local-features.ts). */
  featuresDir?: string;
  /** Bounds on each local feature directory (default FEATURE_DIR_LIMITS). */
  featureDirLimits?: DirLimits;
  /** The dependsOn closure a lockfile supplied (applyDevcontainerLock): the added features' references, and every closure feature's resource. */
  featureClosure?: { readonly references: readonly string[]; readonly resources: readonly string[] };
}

/** devcontainer.json model → manifest, signed when a key is given; local features pinned when `featuresDir` is given. */
export function ingestDevcontainer(unsafeModel: unknown, options: IngestOptions = {}): IngestResult {
  const closure = options.featureClosure;
  const built = buildCore(unsafeModel, options.limits ?? DEFAULT_MANIFEST_LIMITS, closure?.resources);
  const { core, excluded } = built;
  let extension = built.extension;
  if (closure !== undefined && closure.references.length > 0) extension = { ...extension, feature_closure: [...closure.references] };
  if (options.featuresDir !== undefined) {
    const pins = pinLocalFeatures(core.features, options.featuresDir, options.featureDirLimits);
    if (Object.keys(pins).length > 0) extension = { ...extension, local_features: pins };
  }
  const manifest = manifestOf(core, extension);
  return { manifest: options.key ? signManifest(manifest, options.key) : manifest, excluded };
}

export function signManifest(manifest: EnvManifest, key: SigningKey): EnvManifest {
  const sig = signBytes(key, signedBytes(manifest)).toString("base64");
  return { ...manifest, signature: { key_id: key.keyId, sig } };
}

/**
 * Checks the signature of a manifest whose document has already been parsed
 * (parseManifest recomputed its address). Closed by default: a missing
 * signature is a failure, not a pass.
 */
export function verifyManifestSignature(manifest: EnvManifest, key: VerifyingKey): void {
  const s = manifest.signature;
  if (s === undefined) {
    throw new CairnError("SIGNATURE_MISSING", "the manifest is not signed", {
      path: "/signature",
      hint: "sign it with `cairn manifest ingest FILE --sign KEY`",
    });
  }
  if (s.key_id !== key.keyId) {
    throw new CairnError("SIGNATURE_INVALID", "the manifest was signed by another key", {
      path: "/signature/key_id",
      hint: `signed by ${s.key_id}; the given public key is ${key.keyId}`,
    });
  }
  if (!verifyBytes(key, signedBytes(manifest), Buffer.from(s.sig, "base64"))) {
    throw new CairnError("SIGNATURE_INVALID", "the signature does not match the manifest's addresses", { path: "/signature/sig" });
  }
}
