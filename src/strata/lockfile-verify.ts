/**
 * `lock verify`: the offline check of a lockfile, stopping at the first
 * failure, in this order: signature (the YAML must be the signed payload) →
 * Validate and frozen → freshness → verification policy → the base, when the
 * caller re-probed one (its digest must equal the lockfile's) → every layer's
 * manifest envelope and blob bytes, and every formation's envelope, in the
 * registries. Closed by default: an
 * `unsigned-offline` lockfile is refused unless the caller allows it, and a
 * check that was not done (no registry given) is reported as not done.
 */
import { CairnError, sha256, type Progress, type Sha256Digest, type VerifyingKey } from "../core/index.ts";
import { withBlobStaging } from "./blob-staging.ts";
import { attest } from "./trust.ts";
import { environmentId } from "./env-id.ts";
import { checkFreshness, type Freshness } from "./freshness.ts";
import { readLockfile, type LockSignature } from "./lockfile-io.ts";
import type { Lockfile, LockLayer, VerificationPolicy } from "./lockfile.ts";
import type { LayerRegistry } from "./registry.ts";
import type { LockBase } from "./base.ts";
import { capabilityString } from "./capability.ts";
import { checkLayerContents } from "./contents.ts";
import { embeddedEnvelope } from "./lockfile-envelope.ts";
import { specManifestDifference, toSpecLayerManifest } from "./layer-spec.ts";

export interface VerifyOptions {
  readonly keys: readonly VerifyingKey[];
  readonly now: Date;
  readonly maxAgeMs?: number;
  readonly maxAgeText?: string;
  readonly registries: readonly LayerRegistry[];
  /** Keys to check each layer's own signature with; without them the envelope digest pinned by the signed lockfile is checked. */
  readonly layerKeys: readonly VerifyingKey[];
  readonly allowUnsignedOffline: boolean;
  /** A base probed now, to compare with the lockfile's. */
  readonly probedBase?: LockBase;
  /** Progress: phase "verify layers" in layers whose blob was hashed. */
  readonly progress?: Progress | undefined;
}

export interface VerifyReport {
  readonly lock: Lockfile;
  readonly environmentId: Sha256Digest;
  /** sha256 of the lockfile's bytes as verified (the signed payload). */
  readonly lockfileSha256: Sha256Digest;
  readonly signature: LockSignature;
  readonly freshness: Freshness;
  readonly verificationPolicy: VerificationPolicy;
  /** Number of layers whose bytes were checked, or null when no registry was given. */
  readonly layersChecked: number | null;
  /** Whether a freshly probed base was compared with the lockfile's. */
  readonly baseChecked: boolean;
  /**
   * With layer keys and no registry: how many layers' signatures were verified
   * from the manifest envelopes the lockfile embeds (offline audit); null when
   * not attempted.
   */
  readonly embeddedSignaturesChecked: number | null;
}

function checkBase(lock: Lockfile, probed: LockBase): void {
  if (probed.digest === lock.base.digest) return;
  const declared = lock.base.source === "declared";
  const differs = [
    probed.name !== lock.base.name ? `name ${lock.base.name} → ${probed.name}` : "",
    probed.arch !== lock.base.arch ? `arch ${lock.base.arch} → ${probed.arch}` : "",
    capabilityList(probed) !== capabilityList(lock.base) ? `capabilities [${capabilityList(lock.base)}] → [${capabilityList(probed)}]` : "",
    probed.image !== lock.base.image ? "image digest" : "",
  ].filter((x) => x !== "");
  throw new CairnError("BASE_MISMATCH", `the base probed now is not the lockfile's base${differs.length ? `: ${differs.join("; ")}` : ""}`, {
    path: "/base/digest",
    hint: declared
      ? "the lockfile's base was declared, not probed: resolve with --base to record a probed base"
      : "the base changed since resolution; resolve again on this base",
  });
}

function capabilityList(b: LockBase): string {
  return b.capabilities.map(capabilityString).sort().join(", ");
}

function checkPolicy(lock: Lockfile, opts: VerifyOptions): void {
  const records = [
    ...lock.layers.map((l, i) => ({ what: `layer ${l.id}`, a: l.signature, path: `/layers/${i}` })),
    ...lock.formations.map((f, i) => ({ what: `formation ${f.name}@${f.version}`, a: f.signature, path: `/formations/${i}` })),
  ];
  for (const r of records) {
    if (r.a === undefined) {
      // No cairn record (a lockfile Strata wrote): only the registry's signed manifest, checked with --trust, can stand in.
      if (opts.registries.length === 0 || opts.layerKeys.length === 0) {
        throw new CairnError(
          "SIGNATURE_MISSING",
          `${r.what}: cairn has no record of its signature (no ${"LOCK.cairn.json"} entry${lock.spec.layers.some((l) => l.rekor_entry !== "" || l.bundle !== "") ? "; its Rekor entry and bundle are Sigstore references, which cairn does not check offline" : ""})`,
          { path: r.path, hint: "give --registry DIR --trust keyfile://KEY to verify each layer's signed manifest in the registry" },
        );
      }
      continue;
    }
    if (r.a.status !== "signed" && lock.verification_policy === "signed") {
      throw new CairnError("LOCK_INVALID", `the lockfile claims policy signed, but ${r.what} is ${r.a.status}`, { path: "/verification_policy" });
    }
  }
  if (lock.verification_policy === "unsigned-offline" && !opts.allowUnsignedOffline) {
    throw new CairnError("TRUST_REFUSED", "the lockfile was resolved with unsigned layers (policy unsigned-offline)", {
      path: "/verification_policy",
      hint: "pass --allow-unsigned-offline to accept it knowingly",
    });
  }
}

/**
 * Finds a layer's manifest envelope in the registries: the first registry
 * (in any order) whose envelope for this id is the one the lockfile pins.
 * Reading the manifest from "the first registry that has the blob" made the
 * result depend on --registry order when two registries hold the same blob
 * with different envelopes (one re-signed, one stale).
 */
function findEnvelope(l: LockLayer, i: number, registries: readonly LayerRegistry[]): { reg: LayerRegistry; bytes: Buffer } {
  const found: string[] = [];
  for (const reg of registries) {
    // Read once, check the pinned digest, then parse those same bytes (no second read to race with).
    const bytes = reg.layerEnvelope(l.id);
    if (bytes === undefined) continue;
    const sha = sha256(bytes);
    if (l.signature === undefined || sha === l.signature.envelope_sha256) return { reg, bytes };
    found.push(sha);
  }
  if (found.length === 0) {
    throw new CairnError("STORE_MISSING", `layer ${l.id}: no registry holds its manifest`, { path: `/layers/${i}/id` });
  }
  throw new CairnError(
    "DIGEST_MISMATCH",
    `layer ${l.id}: the lockfile pins manifest envelope ${l.signature!.envelope_sha256}, the registries hold ${found.join(", ")}`,
    { path: `/layers/${i}/signature/envelope_sha256`, hint: "the layer manifest or its signature was altered after resolution" },
  );
}

/** The registry holding layer `i`'s blob, after checking the blob's size and digest (STORE_MISSING, SIZE_MISMATCH, DIGEST_MISMATCH). */
async function checkedBlobRegistry(lock: Lockfile, i: number, registries: readonly LayerRegistry[]): Promise<LayerRegistry> {
  const l = lock.layers[i]!;
  const reg = registries.find((r) => r.hasBlob(l.sha256!));
  if (reg === undefined) {
    throw new CairnError("STORE_MISSING", `layer ${l.id}: blob ${l.sha256} is in none of the registries`, { path: `/layers/${i}/sha256` });
  }
  await reg.checkBlob(l.sha256!, l.size ?? -1);
  return reg;
}

/**
 * Every layer a lockfile chose has its blob, intact, in one of `registries`.
 * `resolve --sign` checks this before signing: a signature attests a lockfile
 * whose layers can be fetched as pinned, not one whose blob is missing or
 * corrupt.
 */
export async function requireLayerBlobs(lock: Lockfile, registries: readonly LayerRegistry[], progress?: Progress): Promise<void> {
  const total = lock.layers.length;
  progress?.({ phase: "check layer blobs", done: 0, total, unit: "layers" });
  for (const i of lock.layers.keys()) {
    await checkedBlobRegistry(lock, i, registries);
    progress?.({ phase: "check layer blobs", done: i + 1, total, unit: "layers" });
  }
}

async function checkLayers(lock: Lockfile, opts: VerifyOptions): Promise<number> {
  const total = lock.layers.length;
  opts.progress?.({ phase: "verify layers", done: 0, total, unit: "layers" });
  for (const [i, l] of lock.layers.entries()) {
    const { reg, bytes: envBytes } = findEnvelope(l, i, opts.registries);
    const doc = reg.layerFromBytes(l.id, envBytes);
    if (l.manifest_sha256 !== undefined && doc.payloadSha256 !== l.manifest_sha256) {
      throw new CairnError("DIGEST_MISMATCH", `layer ${l.id}: the lockfile pins manifest ${l.manifest_sha256}, the registry's is ${doc.payloadSha256}`, {
        path: `/layers/${i}/manifest_sha256`,
      });
    }
    if (doc.value.sha256 !== l.sha256) {
      throw new CairnError("DIGEST_MISMATCH", `layer ${l.id}: the lockfile pins blob ${l.sha256}, the manifest names ${doc.value.sha256}`, {
        path: `/layers/${i}/sha256`,
      });
    }
    const differs = specManifestDifference(l.manifest, toSpecLayerManifest(doc.value));
    if (differs !== undefined) {
      throw new CairnError("DIGEST_MISMATCH", `layer ${l.id}: the lockfile's ${differs} differs from the registry's signed manifest`, {
        path: `/layers/${i}/${differs}`,
        hint: "the lockfile's copy of the layer manifest was edited, or the registry holds another manifest for this id",
      });
    }
    const blobReg = opts.registries.find((r) => r.hasBlob(l.sha256!));
    if (blobReg === undefined) {
      throw new CairnError("STORE_MISSING", `layer ${l.id}: blob ${l.sha256} is in none of the registries`, { path: `/layers/${i}/sha256` });
    }
    await blobReg.checkBlob(l.sha256!, l.size ?? -1);
    // A layer cairn recorded as signed, or any layer of a lockfile without cairn's records (Strata's): its registry manifest must verify.
    if (opts.layerKeys.length > 0 && l.signature?.status !== "unsigned-offline") {
      attest(doc, opts.layerKeys, false, `layer ${l.id}`);
    }
    opts.progress?.({ phase: "verify layers", done: i + 1, total, unit: "layers" });
  }
  for (const [i, f] of lock.formations.entries()) {
    // A formation named only by its members' from_formation (no cairn record): its members were each verified above.
    if (f.signature === undefined) continue;
    // The formation envelope must be the one resolution saw, in some registry.
    const found = opts.registries.some((r) => {
      const bytes = r.formationEnvelope(f.name, f.version);
      return bytes !== undefined && sha256(bytes) === f.signature!.envelope_sha256;
    });
    if (!found) {
      throw new CairnError("DIGEST_MISMATCH", `formation ${f.name}@${f.version}: no registry holds the envelope the lockfile pins`, {
        path: `/formations/${i}/signature/envelope_sha256`,
        hint: "the formation was altered or removed after resolution",
      });
    }
  }
  return lock.layers.length;
}

/**
 * `lock verify --contents`: after verifyLock passed, unpack every layer blob
 * and check it holds exactly the files and symlinks its manifest lists.
 */
export async function verifyLockContents(lock: Lockfile, registries: readonly LayerRegistry[]): Promise<number> {
  for (const [i, l] of lock.layers.entries()) {
    const reg = registries.find((r) => r.hasBlob(l.sha256!));
    if (reg === undefined)
      throw new CairnError("STORE_MISSING", `layer ${l.id}: blob ${l.sha256} is in none of the registries`, { path: `/layers/${i}/sha256` });
    const doc = reg.readLayer(l.id);
    // A private staged copy, checked as it is copied, is what gets unpacked (memory stays a chunk whatever the blob's size).
    await withBlobStaging(async (staging) => checkLayerContents({ path: await reg.stageBlob(l.sha256!, l.size!, staging) }, doc.value, `/layers/${i}`));
  }
  return lock.layers.length;
}

export async function verifyLock(path: string, opts: VerifyOptions): Promise<VerifyReport> {
  const read = readLockfile(path, opts.keys);
  const lock = read.lock;
  const id = environmentId(lock); // LOCK_UNFROZEN for an unfrozen lockfile
  const fresh = checkFreshness(lock.resolved_at, opts.now, opts.maxAgeMs, opts.maxAgeText);
  checkPolicy(lock, opts);
  if (opts.probedBase !== undefined) checkBase(lock, opts.probedBase);
  const layersChecked = opts.registries.length > 0 ? await checkLayers(lock, opts) : null;
  const embeddedSignaturesChecked = opts.registries.length === 0 && opts.layerKeys.length > 0 ? checkEmbeddedSignatures(lock, opts.layerKeys) : null;
  return {
    lock,
    environmentId: id,
    lockfileSha256: sha256(read.bytes),
    signature: read.signature!,
    freshness: fresh,
    verificationPolicy: lock.verification_policy,
    layersChecked,
    baseChecked: opts.probedBase !== undefined,
    embeddedSignaturesChecked,
  };
}

/**
 * Offline audit: each signed layer's signature, verified with the caller's
 * keys on the envelope the lockfile embeds (Validate already tied it to the
 * pinned digests). A signed layer without an embedded envelope (a lockfile
 * from before embedding) cannot be audited offline and is refused, so the
 * count never claims more than was checked.
 */
function checkEmbeddedSignatures(lock: Lockfile, keys: readonly VerifyingKey[]): number {
  let n = 0;
  for (const [i, l] of lock.layers.entries()) {
    if (l.signature?.status !== "signed") continue;
    if (l.manifest_envelope === undefined) {
      throw new CairnError("SIGNATURE_MISSING", `layer ${l.id}: the lockfile embeds no manifest envelope to verify offline`, {
        path: `/layers/${i}/manifest_envelope`,
        hint: "give --registry to verify against the registry, or resolve again to embed the envelopes",
      });
    }
    attest(embeddedEnvelope(l.manifest_envelope, `/layers/${i}/manifest_envelope`), keys, false, `layer ${l.id}`);
    n++;
  }
  return n;
}
