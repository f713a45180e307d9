/**
 * The environment manifest: a core, its address, honest pinning labels, what
 * the address does not cover, and an optional Ed25519 signature.
 *
 *   address   = blake3 of the JCS bytes of the core (the schema tag
 *               `cairn.env-manifest/1` is a field of the core, so it is hashed
 *               in front of the content)
 *   signature = Ed25519 over exactly those bytes, with the signer's key id
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
import { buildCore, type EnvCore } from "./core.ts";
import { DEFAULT_MANIFEST_LIMITS, type ManifestLimits } from "./declared.ts";
import { normalizeFeatureId, parseReference } from "./reference.ts";
import { MANIFEST_ADDRESS, MANIFEST_SCHEMA, NOT_COVERED } from "./scope.ts";

export interface ManifestSignature {
  key_id: Sha256Digest;
  /** Base64 of the 64-byte Ed25519 signature over the core's JCS bytes. */
  sig: string;
}

export interface EnvManifest {
  schema: typeof MANIFEST_SCHEMA;
  address: Blake3Digest;
  /** True only when the image and every feature are addressed by @sha256. */
  pinned: boolean;
  image_pinned: boolean;
  /** JSON pointers (into `core`) of every reference addressed by tag or URL. */
  unpinned: string[];
  core: EnvCore;
  not_covered: string[];
  signature?: ManifestSignature;
}

/** The bytes the address and the signature cover. */
export function coreBytes(core: EnvCore): Buffer {
  return identityBytes(MANIFEST_ADDRESS, core);
}

export function addressOf(core: EnvCore): Blake3Digest {
  return identityDigest(MANIFEST_ADDRESS, core);
}

export interface Pinning {
  pinned: boolean;
  image_pinned: boolean;
  unpinned: string[];
}

/** The single definition of the manifest's pinning labels (pinned-ness of one reference is in reference.ts). */
export function pinningOf(core: EnvCore): Pinning {
  const image = parseReference(core.image);
  const image_pinned = image.ok && image.ref.pinned;
  const unpinned: string[] = image_pinned ? [] : ["/image"];
  core.features.forEach((f, i) => {
    const r = normalizeFeatureId(f.id);
    if (!r.ok || !r.pinned) unpinned.push(`/features/${i}/id`);
  });
  return { pinned: unpinned.length === 0, image_pinned, unpinned };
}

export function manifestOf(core: EnvCore): EnvManifest {
  return {
    schema: MANIFEST_SCHEMA,
    address: addressOf(core),
    ...pinningOf(core),
    core,
    not_covered: [...NOT_COVERED],
  };
}

export interface IngestResult {
  manifest: EnvManifest;
  /** Excluded fields that were present in the input (names only). */
  excluded: string[];
}

/** devcontainer.json model → manifest, signed when a key is given. */
export function ingestDevcontainer(unsafeModel: unknown, options: { key?: SigningKey; limits?: ManifestLimits } = {}): IngestResult {
  const { core, excluded } = buildCore(unsafeModel, options.limits ?? DEFAULT_MANIFEST_LIMITS);
  const manifest = manifestOf(core);
  return { manifest: options.key ? signManifest(manifest, options.key) : manifest, excluded };
}

export function signManifest(manifest: EnvManifest, key: SigningKey): EnvManifest {
  const sig = signBytes(key, coreBytes(manifest.core)).toString("base64");
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
  if (!verifyBytes(key, coreBytes(manifest.core), Buffer.from(s.sig, "base64"))) {
    throw new CairnError("SIGNATURE_INVALID", "the signature does not match the manifest core", { path: "/signature/sig" });
  }
}
