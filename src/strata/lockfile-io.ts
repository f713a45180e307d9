/**
 * Lockfiles on disk: `LOCK` holds the YAML (seed 002's LockFile, nothing
 * else), `LOCK.dsse.json` a DSSE envelope whose payload is exactly the bytes
 * of `LOCK` (so `resolved_at` and every other field are inside what is
 * signed), and `LOCK.cairn.json` cairn's records (lockfile-records.ts), which
 * name the lockfile's bytes by digest. Reading with a key verifies the
 * envelope and then insists that the YAML file is byte-for-byte the signed
 * payload: an edited lockfile with an old signature is refused. A lockfile
 * with no records (one Strata wrote) is read as it is.
 */
import { existsSync, rmSync } from "node:fs";
import {
  CairnError,
  parseEnvelope,
  parseJsonBytes,
  sha256,
  signEnvelope,
  verifyEnvelope,
  writeFileAtomic,
  decodeUtf8,
  checkLimit,
  FIXED_LIMIT_HINT,
  readFileBounded,
  type Issue,
  type DsseEnvelope,
  type Sha256Digest,
  type SigningKey,
  type VerifyingKey,
} from "../core/index.ts";
import { parseLockfileText, parseLockfileUnvalidated, viewLock, type Lockfile } from "./lockfile.ts";
import { readRecordsFile, writeRecords } from "./lockfile-records.ts";
import { lockFileToYaml } from "./spec/lock-file.ts";

/**
 * A lockfile's (or its signature's) bytes: a regular file, read bounded and
 * non-blocking. A FIFO or a device is IO_ERROR naming the file; it was
 * REGISTRY_INVALID when this borrowed the registry's reader (issue 31).
 */
function readLockBytes(path: string, max: number): Buffer {
  return readFileBounded(path, max, "lock.max_bytes", { limitHint: FIXED_LIMIT_HINT });
}

export const LOCKFILE_PAYLOAD_TYPE = "application/vnd.cairn.lock+yaml";
/** lock.max_bytes */
export const MAX_LOCK_BYTES = 16 * 1024 * 1024;

export function signaturePath(lockPath: string): string {
  return `${lockPath}.dsse.json`;
}

export interface LockSignature {
  readonly keyid: Sha256Digest;
  /** sha256 of the envelope file: the reference a citation records. */
  readonly envelope_sha256: Sha256Digest;
}

/**
 * Writes the lockfile and, with a key, its envelope (which carries the same
 * bytes). Both are owner-only (0600): a lockfile holds the profile's
 * environment values (docs/threat-model.md). Atomic, one file after the other.
 */
export function writeLockfile(path: string, lock: Lockfile, key?: SigningKey): { bytes: Buffer; signature?: LockSignature } {
  // A lock with a mutable upper layer is dirty: what a user writes there is covered by nothing, so a
  // signature would vouch for an environment nobody can reproduce. Refused before anything is written.
  if (key !== undefined && lock.mutable_layer !== undefined) {
    throw new CairnError("LOCK_DIRTY", "the lockfile has a mutable upper layer (dirty): it cannot be signed as clean", {
      path: "/mutable_layer",
      hint: "freeze what the upper layer holds into a layer (`cairn layer freeze UPPER_DIR --lock LOCK …`) and resolve without mutable_layer, or write the lock unsigned",
    });
  }
  const bytes = Buffer.from(lockFileToYaml(lock.spec), "utf8");
  // Inline content manifests make a lockfile grow with its layers' file lists; one that could not be read back is never written.
  checkLimit("lock.max_bytes", bytes.length, MAX_LOCK_BYTES, "", "bytes", FIXED_LIMIT_HINT);
  // An envelope left from an earlier signed lockfile at this path would not
  // verify against the new bytes; remove it so "unsigned" is what a reader sees.
  if (key === undefined) rmSync(signaturePath(path), { force: true });
  // Records first: a reader that finds the new lockfile also finds records naming it (a crash between leaves stale records, which name the old bytes and are refused, never trusted).
  writeRecords(path, lock.records, bytes);
  writeFileAtomic(path, bytes, { mode: 0o600 });
  if (key === undefined) return { bytes };
  const envelope = signEnvelope(LOCKFILE_PAYLOAD_TYPE, bytes, [key]);
  const envBytes = Buffer.from(`${JSON.stringify(envelope, null, 2)}\n`);
  writeFileAtomic(signaturePath(path), envBytes, { mode: 0o600 });
  return { bytes, signature: { keyid: key.keyId, envelope_sha256: sha256(envBytes) } };
}

export interface ReadLock {
  readonly lock: Lockfile;
  readonly bytes: Buffer;
  readonly envelope?: DsseEnvelope;
  readonly signature?: LockSignature;
}

function readEnvelope(path: string): { envelope: DsseEnvelope; sha: Sha256Digest } | undefined {
  const sp = signaturePath(path);
  if (!existsSync(sp)) return undefined;
  const bytes = readLockBytes(sp, MAX_LOCK_BYTES * 2);
  return { envelope: parseEnvelope(parseJsonBytes(bytes, { source: sp })), sha: sha256(bytes) };
}

/**
 * Reads and validates a lockfile. With `keys`, the signature is required and
 * verified first (nothing is parsed from an unverified lockfile).
 */
export function readLockfile(path: string, keys?: readonly VerifyingKey[]): ReadLock {
  const bytes = readLockBytes(path, MAX_LOCK_BYTES);
  const env = readEnvelope(path);
  if (keys === undefined) {
    return { lock: parseWithRecords(path, bytes), bytes, ...(env ? { envelope: env.envelope } : {}) };
  }
  if (env === undefined) {
    throw new CairnError("SIGNATURE_MISSING", `${path} has no signature (${signaturePath(path)})`, {
      path,
      hint: "resolve with --sign KEY to sign the lockfile",
    });
  }
  const { payload, keyId } = verifyEnvelope(env.envelope, LOCKFILE_PAYLOAD_TYPE, keys);
  if (!payload.equals(bytes)) {
    throw new CairnError("SIGNATURE_INVALID", `${path} is not the signed lockfile: its bytes differ from the signed payload`, {
      path,
      hint: "the lockfile was edited after it was signed",
    });
  }
  const lock = parseWithRecords(path, payload);
  return { lock, bytes, envelope: env.envelope, signature: { keyid: keyId as Sha256Digest, envelope_sha256: env.sha } };
}

/**
 * Signs a lockfile as it is: its exact bytes become the envelope's payload
 * (nothing is rewritten, so a lockfile Strata wrote stays byte for byte
 * Strata's). Validate runs first, with the records when there are any, and a
 * dirty lockfile (a mutable layer) is refused as at resolve.
 */
export function signLockfile(path: string, key: SigningKey): LockSignature {
  const bytes = readLockBytes(path, MAX_LOCK_BYTES);
  const lock = parseWithRecords(path, bytes);
  if (lock.mutable_layer !== undefined) {
    throw new CairnError("LOCK_DIRTY", "the lockfile has a mutable upper layer (dirty): it cannot be signed as clean", { path: "/mutable_layer" });
  }
  const envelope = signEnvelope(LOCKFILE_PAYLOAD_TYPE, bytes, [key]);
  const envBytes = Buffer.from(`${JSON.stringify(envelope, null, 2)}\n`);
  writeFileAtomic(signaturePath(path), envBytes, { mode: 0o600 });
  return { keyid: key.keyId, envelope_sha256: sha256(envBytes) };
}

/** The lockfile and the records beside it (checked against its bytes), Validate applied. */
function parseWithRecords(path: string, bytes: Buffer): Lockfile {
  const text = decodeUtf8(bytes, path);
  const unvalidated = parseLockfileUnvalidated(text, path);
  const records = readRecordsFile(path, unvalidated.lock.spec, bytes);
  return parseLockfileText(text, path, records);
}

/** Reads a lockfile without Validate (for `lock diff`): shape errors refuse it, rule problems come back as `problems`. The records beside it are read (and checked) when there are any. */
export function readLockfileUnvalidated(path: string): { lock: Lockfile; problems: readonly Issue[] } {
  const bytes = readLockBytes(path, MAX_LOCK_BYTES);
  const read = parseLockfileUnvalidated(decodeUtf8(bytes, path), path);
  const records = readRecordsFile(path, read.lock.spec, bytes);
  return records === undefined ? read : { lock: viewLock(read.lock.spec, records), problems: read.problems };
}
