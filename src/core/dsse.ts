/**
 * DSSE envelopes (in-toto Dead Simple Signing Envelope v1). The signature is
 * over the pre-authentication encoding (PAE) of the payload type and payload,
 * never over the raw payload, so a signature for one payload type cannot be
 * replayed as another.
 */
import { CairnError } from "./errors.ts";
import { Checker, childPath } from "./model.ts";
import type { JsonModel } from "./json.ts";
import { signBytes, verifyBytes, type SigningKey, type VerifyingKey } from "./keys.ts";

export interface DsseSignature {
  keyid: string;
  sig: string; // base64
}

export interface DsseEnvelope {
  payloadType: string;
  payload: string; // base64
  signatures: DsseSignature[];
}

/** PAE(type, body) = "DSSEv1" SP len(type) SP type SP len(body) SP body. */
export function pae(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, "utf8");
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `, "utf8"), type, Buffer.from(` ${payload.length} `, "utf8"), payload]);
}

export function signEnvelope(payloadType: string, payload: Uint8Array, keys: readonly SigningKey[]): DsseEnvelope {
  const message = pae(payloadType, payload);
  return {
    payloadType,
    payload: Buffer.from(payload).toString("base64"),
    signatures: keys.map((k) => ({ keyid: k.keyId, sig: signBytes(k, message).toString("base64") })),
  };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function strictBase64(s: string, path: string): Buffer {
  const buf = Buffer.from(s, "base64");
  if (!BASE64.test(s) || buf.toString("base64") !== s) {
    throw new CairnError("DSSE_INVALID", "not canonical base64", { path });
  }
  return buf;
}

/** Reads an envelope model strictly. */
export function parseEnvelope(v: JsonModel, path = ""): DsseEnvelope {
  const c = new Checker("DSSE_INVALID");
  const o = c.object(v, path, ["payloadType", "payload", "signatures"]);
  c.done("DSSE envelope");
  const payloadType = c.string(c.required(o!, "payloadType", path), childPath(path, "payloadType"), { nonEmpty: true });
  const payload = c.string(c.required(o!, "payload", path), childPath(path, "payload"));
  const sigs = c.array(c.required(o!, "signatures", path), childPath(path, "signatures"));
  c.done("DSSE envelope");
  const signatures: DsseSignature[] = [];
  sigs!.forEach((s, i) => {
    const p = childPath(childPath(path, "signatures"), i);
    const so = c.object(s, p, ["keyid", "sig"]);
    if (!so) return;
    const keyid = c.string(c.required(so, "keyid", p), childPath(p, "keyid"));
    const sig = c.string(c.required(so, "sig", p), childPath(p, "sig"), { nonEmpty: true });
    if (keyid !== undefined && sig !== undefined) signatures.push({ keyid, sig });
  });
  c.done("DSSE envelope");
  strictBase64(payload!, childPath(path, "payload"));
  return { payloadType: payloadType!, payload: payload!, signatures };
}

/**
 * Verifies that at least one signature in `env` is a valid signature by one of
 * `keys` over the PAE, and that the payload type is the expected one. Returns
 * the payload bytes and the key id that verified.
 */
export function verifyEnvelope(env: DsseEnvelope, expectedType: string, keys: readonly VerifyingKey[]): { payload: Buffer; keyId: string } {
  if (env.payloadType !== expectedType) {
    throw new CairnError("SIGNATURE_INVALID", `payload type is ${JSON.stringify(env.payloadType)}, expected ${JSON.stringify(expectedType)}`, {
      path: "/payloadType",
    });
  }
  if (env.signatures.length === 0) {
    throw new CairnError("SIGNATURE_MISSING", "envelope has no signatures", { path: "/signatures" });
  }
  const payload = strictBase64(env.payload, "/payload");
  const message = pae(env.payloadType, payload);
  for (const s of env.signatures) {
    for (const k of keys) {
      if (s.keyid !== "" && s.keyid !== k.keyId) continue;
      let sig: Buffer;
      try {
        sig = strictBase64(s.sig, "/signatures");
      } catch {
        continue;
      }
      if (verifyBytes(k, message, sig)) return { payload, keyId: k.keyId };
    }
  }
  throw new CairnError("SIGNATURE_INVALID", "no signature in the envelope verifies with the trusted key(s)", {
    path: "/signatures",
    hint: `trusted key id(s): ${keys.map((k) => k.keyId).join(", ")}`,
  });
}
