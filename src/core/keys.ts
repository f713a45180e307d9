/**
 * Ed25519 keys and signatures with `node:crypto`. Private keys are PKCS#8 PEM
 * files written 0600; public keys are SPKI PEM. A key id is `sha256:` of the
 * SPKI DER bytes, so it names the key itself, not a file or a label.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from "node:crypto";
import { existsSync, rmSync } from "node:fs";
import { readFileBounded } from "./bounded-read.ts";
import { CairnError } from "./errors.ts";
import { sha256, type Sha256Digest } from "./digest.ts";
import { writeFileAtomic } from "./files.ts";

export interface SigningKey {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly keyId: Sha256Digest;
}

export interface VerifyingKey {
  readonly publicKey: KeyObject;
  readonly keyId: Sha256Digest;
}

export function keyIdOf(publicKey: KeyObject): Sha256Digest {
  return sha256(publicKey.export({ type: "spki", format: "der" }));
}

export function generateSigningKey(): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return { privateKey, publicKey, keyId: keyIdOf(publicKey) };
}

export function privateKeyPem(key: SigningKey): string {
  return key.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
}

export function publicKeyPem(key: { publicKey: KeyObject }): string {
  return key.publicKey.export({ type: "spki", format: "pem" }).toString();
}

/**
 * Writes `PREFIX.key` (0600) and `PREFIX.pub` atomically; refuses to
 * overwrite a key. Both files appear or neither: when `PREFIX.pub` cannot be
 * written (it exists, the disk is full), the `PREFIX.key` this call wrote is
 * removed, so no private key is left without its public half.
 */
export function writeKeyPair(prefix: string, key: SigningKey, overwrite = false): { keyPath: string; pubPath: string } {
  const keyPath = `${prefix}.key`;
  const pubPath = `${prefix}.pub`;
  if (!overwrite && existsSync(pubPath)) {
    throw new CairnError("IO_ERROR", `${pubPath} already exists; refusing to overwrite`, {
      path: pubPath,
      hint: "choose another --out prefix or pass --force",
    });
  }
  writeFileAtomic(keyPath, privateKeyPem(key), { mode: 0o600, overwrite });
  try {
    writeFileAtomic(pubPath, publicKeyPem(key), { mode: 0o644, overwrite });
  } catch (e) {
    rmSync(keyPath, { force: true });
    throw e;
  }
  return { keyPath, pubPath };
}

/** key.max_bytes: an Ed25519 PEM key is a few hundred bytes; anything near this is not a key. */
export const MAX_KEY_BYTES = 64 * 1024;

/**
 * Keys (--pub, --sign, --key, keyfile:// trust) come through the one bounded
 * reader: a FIFO, a device such as /dev/zero, a symlink or a 300 MB file is
 * refused before a byte is read, never read until memory runs out or
 * waited on forever.
 */
function readPem(path: string): Buffer {
  return readFileBounded(path, MAX_KEY_BYTES, "key.max_bytes", {
    notRegular: "KEY_INVALID",
    notRegularHint: "give the path of a PEM key file",
    limitHint: "a PEM Ed25519 key is a few hundred bytes; this is not a key file",
  });
}

export function parseSigningKey(pem: string | Buffer, path = "key"): SigningKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: "pem" });
  } catch (cause) {
    throw new CairnError("KEY_INVALID", `${path} is not a PEM private key`, { path, cause });
  }
  if (privateKey.asymmetricKeyType !== "ed25519") {
    throw new CairnError("KEY_INVALID", `${path} is not an Ed25519 key`, { path });
  }
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, keyId: keyIdOf(publicKey) };
}

export function parseVerifyingKey(pem: string | Buffer, path = "public key"): VerifyingKey {
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: pem, format: "pem" });
  } catch (cause) {
    throw new CairnError("KEY_INVALID", `${path} is not a PEM public key`, { path, cause });
  }
  if (publicKey.asymmetricKeyType !== "ed25519") {
    throw new CairnError("KEY_INVALID", `${path} is not an Ed25519 key`, { path });
  }
  return { publicKey, keyId: keyIdOf(publicKey) };
}

export function readSigningKey(path: string): SigningKey {
  return parseSigningKey(readPem(path), path);
}

export function readVerifyingKey(path: string): VerifyingKey {
  return parseVerifyingKey(readPem(path), path);
}

/** A verifying key from raw 32-byte Ed25519 public key bytes. */
export function verifyingKeyFromRaw(raw: Uint8Array): VerifyingKey {
  if (raw.length !== 32) throw new CairnError("KEY_INVALID", "an Ed25519 public key is 32 bytes");
  const der = Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), raw]);
  const publicKey = createPublicKey({ key: der, format: "der", type: "spki" });
  return { publicKey, keyId: keyIdOf(publicKey) };
}

/** A signing key from a raw 32-byte Ed25519 seed. */
export function signingKeyFromSeed(seed: Uint8Array): SigningKey {
  if (seed.length !== 32) throw new CairnError("KEY_INVALID", "an Ed25519 seed is 32 bytes");
  const der = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]);
  const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, keyId: keyIdOf(publicKey) };
}

/** Signs exactly `message`. */
export function signBytes(key: SigningKey, message: Uint8Array): Buffer {
  return cryptoSign(null, message, key.privateKey);
}

/** Verifies an Ed25519 signature over exactly `message`. */
export function verifyBytes(key: VerifyingKey, message: Uint8Array, signature: Uint8Array): boolean {
  if (signature.length !== 64) return false;
  try {
    return cryptoVerify(null, message, key.publicKey, signature);
  } catch {
    return false;
  }
}
