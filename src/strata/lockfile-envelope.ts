/**
 * The manifest envelope a lockfile embeds for each layer: the registry file's
 * exact bytes in base64, so a signed lockfile carries the signed manifests it
 * was resolved from (offline audit). An embedded envelope must be the one the
 * lockfile pins, checked on every read: its bytes hash to
 * `signature.envelope_sha256`, its payload to `manifest_sha256`. Otherwise an
 * edited lockfile could carry one manifest while pinning another.
 */
import { CairnError, type Checker, parseEnvelope, parseJsonBytes, sha256, type DsseEnvelope, type Sha256Digest } from "../core/index.ts";
import type { Attestation } from "./trust.ts";

export const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The embedded envelope must be the one the lockfile pins: its bytes hash to envelope_sha256, its payload to manifest_sha256. */
export function checkEmbeddedEnvelope(rules: Checker, b64: string, signature: Attestation | undefined, manifestSha: Sha256Digest | undefined, p: string): void {
  const bytes = Buffer.from(b64, "base64");
  const found = sha256(bytes);
  if (signature !== undefined && found !== signature.envelope_sha256) {
    rules.add(
      `${p}/manifest_envelope`,
      `the embedded envelope hashes to ${found}, signature.envelope_sha256 pins ${signature.envelope_sha256}`,
      "DIGEST_MISMATCH",
    );
    return;
  }
  try {
    const payload = Buffer.from(parseEnvelope(parseJsonBytes(bytes, { source: `${p}/manifest_envelope` })).payload, "base64");
    const payloadSha = sha256(payload);
    if (manifestSha !== undefined && payloadSha !== manifestSha) {
      rules.add(`${p}/manifest_envelope`, `the embedded manifest hashes to ${payloadSha}, manifest_sha256 pins ${manifestSha}`, "DIGEST_MISMATCH");
    }
  } catch (e) {
    if (!(e instanceof CairnError)) throw e;
    rules.add(`${p}/manifest_envelope`, `not a DSSE envelope: ${e.message}`, e.code);
  }
}

/** The embedded envelope of a layer, parsed (the caller has read it through Validate, so it is the pinned one). */
export function embeddedEnvelope(b64: string, where: string): { envelope: DsseEnvelope; envelopeSha256: Sha256Digest } {
  const bytes = Buffer.from(b64, "base64");
  return { envelope: parseEnvelope(parseJsonBytes(bytes, { source: where })), envelopeSha256: sha256(bytes) };
}
