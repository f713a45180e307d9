/**
 * Trust and attestation. A registry is trusted through `keyfile://PATH`
 * (an Ed25519 public key in SPKI PEM) and through nothing else: no key in the
 * environment, no key inside the registry, no "trust on first use".
 *
 * Deciding a signed document's status:
 * - a signature verifies with a trusted key → `signed` (with that key id);
 * - a signature claims a trusted key id (or no key id) but does not verify →
 *   SIGNATURE_INVALID, always: that is tampering, and no flag excuses it;
 * - no signature, or only signatures by keys nobody trusted → unsigned, which
 *   is refused (TRUST_REFUSED) unless the caller passed
 *   `--allow-unsigned-offline`, and then it is labelled `unsigned-offline`.
 */
import { isAbsolute, resolve } from "node:path";
import { CairnError, parseSha256, readVerifyingKey, verifyEnvelope, type DsseEnvelope, type Sha256Digest, type VerifyingKey } from "../core/index.ts";

export type Attestation =
  | { readonly status: "signed"; readonly keyid: Sha256Digest; readonly envelope_sha256: Sha256Digest }
  | { readonly status: "unsigned-offline"; readonly envelope_sha256: Sha256Digest };

/** Reads `keyfile://PATH`; a relative PATH is taken from `baseDir`. */
export function readTrust(unsafeTrust: string, baseDir: string): VerifyingKey {
  const m = /^keyfile:\/\/(.+)$/.exec(unsafeTrust);
  if (m === null) {
    throw new CairnError("TRUST_REFUSED", `trust ${JSON.stringify(unsafeTrust).slice(0, 80)} is not keyfile://PATH`, {
      hint: "cairn trusts only explicit Ed25519 public keys: keyfile:///path/to/key.pub",
    });
  }
  const p = m[1]!;
  return readVerifyingKey(isAbsolute(p) ? p : resolve(baseDir, p));
}

export function attest(
  doc: { envelope: DsseEnvelope; envelopeSha256: Sha256Digest },
  keys: readonly VerifyingKey[],
  allowUnsignedOffline: boolean,
  what: string,
): Attestation {
  const claimsTrusted = doc.envelope.signatures.some((s) => s.keyid === "" || keys.some((k) => k.keyId === s.keyid));
  if (keys.length > 0 && claimsTrusted) {
    try {
      const { keyId } = verifyEnvelope(doc.envelope, doc.envelope.payloadType, keys);
      return { status: "signed", keyid: parseSha256(keyId), envelope_sha256: doc.envelopeSha256 };
    } catch (e) {
      if (e instanceof CairnError) {
        throw new CairnError("SIGNATURE_INVALID", `${what}: the signature by a trusted key does not verify (the manifest or signature was altered)`, {
          path: what,
          hint: "the registry copy was tampered with or damaged; republish it from a trusted builder",
          cause: e,
        });
      }
      throw e;
    }
  }
  if (!allowUnsignedOffline) {
    throw new CairnError("TRUST_REFUSED", `${what} is not signed by a trusted key`, {
      path: what,
      hint: "give the registry's key as trust keyfile://PATH, or pass --allow-unsigned-offline (recorded in the lockfile as unsigned-offline)",
    });
  }
  return { status: "unsigned-offline", envelope_sha256: doc.envelopeSha256 };
}
