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

/** Why cairn does not act on the seed's other trust modes (RegistryRef.trust in 002_bbb23a1942433a8c.txt). */
const ONLINE_TRUST: Readonly<Record<string, string>> = {
  "strata-core": "trust strata-core (Strata's public signing key) is not acted upon: cairn verifies keyfiles offline only, and has no built-in key",
  keyless:
    "trust keyless (Sigstore keyless signatures, an OIDC identity checked against the transparency log) is not acted upon: cairn verifies keyfiles offline only",
};

/**
 * Reads `keyfile://PATH`; a relative PATH is taken from `baseDir`. The
 * seed's `strata-core` and `keyless` modes, which a profile may carry, are
 * refused here by name (TRUST_REFUSED at `path`).
 */
export function readTrust(unsafeTrust: string, baseDir: string, path?: string): VerifyingKey {
  const m = /^keyfile:\/\/(.+)$/.exec(unsafeTrust);
  if (m === null) {
    const online = Object.hasOwn(ONLINE_TRUST, unsafeTrust) ? ONLINE_TRUST[unsafeTrust] : undefined;
    throw new CairnError("TRUST_REFUSED", online ?? `trust ${JSON.stringify(unsafeTrust.slice(0, 80))} is not keyfile://PATH`, {
      ...(path !== undefined ? { path } : {}),
      hint: "give the registry's Ed25519 public key as trust: keyfile://PATH (or --trust keyfile://PATH)",
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
