/**
 * cairn's records beside a lockfile: `LOCK.cairn.json`. The lockfile itself
 * holds only seed 002's fields, so Strata reads it; what cairn knows on top
 * lives here:
 * - the signature status of every layer and formation it checked, with each
 *   layer's DSSE manifest envelope (so an audit needs no registry), the
 *   registry it came from, and cairn's verdict (`signed` / `unsigned-offline`);
 * - how the base facts were obtained (`rootfs:PATH`, `oci:LAYOUT`, `host`);
 * - the profile's package requests, and after `cairn freeze` every pin's
 *   archive (kind, filename, size, url, what requested it), of which the
 *   lockfile carries name, version and sha256.
 *
 * The records name the lockfile by the sha256 of its bytes, so a lockfile
 * edited after them is refused with them rather than silently mismatched.
 * Nothing here is trusted on its word: envelopes verify with the registry's
 * keys, archives by their sha256, and a record that disagrees with the
 * lockfile (a pin, a layer id) is refused.
 */
import { existsSync, rmSync } from "node:fs";
import {
  CairnError,
  Checker,
  FIXED_LIMIT_HINT,
  isDigest,
  type JsonModel,
  parseJsonBytes,
  readFileBounded,
  type Sha256Digest,
  sha256,
  writeFileAtomic,
} from "../core/index.ts";
import { type FrozenPackages, frozenToModel, type LockPackageSet, readFrozen } from "./freeze/pins.ts";
import type { LayerRecord, LockFormation, LockRecords } from "./lockfile.ts";
import { BASE64, checkEmbeddedEnvelope, embeddedEnvelope } from "./lockfile-envelope.ts";
import { specManifestDifference, toSpecLayerManifest } from "./layer-spec.ts";
import { parseLayerManifest, type LayerManifest } from "./layer-manifest.ts";
import { readPackageSet } from "./profile-model.ts";
import type { Attestation } from "./trust.ts";
import type * as spec from "./spec/types.ts";

export const RECORDS_FORMAT = "cairn.lock-records/1";
/** lock.max_records_bytes: the records hold every layer's manifest envelope, so they grow with the layers' file lists. */
export const MAX_RECORDS_BYTES = 64 * 1024 * 1024;

export function recordsPath(lockPath: string): string {
  return `${lockPath}.cairn.json`;
}

function attestationModel(a: Attestation): Record<string, string> {
  return a.status === "signed"
    ? { status: a.status, keyid: a.keyid, envelope_sha256: a.envelope_sha256 }
    : { status: a.status, envelope_sha256: a.envelope_sha256 };
}

export function recordsToModel(r: LockRecords, lockSha256: Sha256Digest): Record<string, unknown> {
  const out: Record<string, unknown> = { format: RECORDS_FORMAT, lockfile_sha256: lockSha256 };
  if (r.policy !== undefined) out.policy = r.policy;
  if (r.base_source !== undefined) out.base_source = r.base_source;
  out.layers = [...r.layers].map(([id, l]) => ({
    id,
    ...(l.signature !== undefined ? { signature: attestationModel(l.signature) } : {}),
    ...(l.registry !== undefined ? { registry: l.registry } : {}),
    ...(l.manifest_sha256 !== undefined ? { manifest_sha256: l.manifest_sha256 } : {}),
    ...(l.manifest_envelope !== undefined ? { manifest_envelope: l.manifest_envelope } : {}),
  }));
  out.formations = r.formations.map((f) => ({ name: f.name, version: f.version, ...(f.signature ? { signature: attestationModel(f.signature) } : {}) }));
  if (r.packages !== undefined) {
    out.packages = r.packages.map((s) => ({
      manager: s.manager,
      packages: s.packages.map((p) => ({ ...p })),
      ...(s.env !== undefined ? { env: s.env } : {}),
      ...(s.frozen !== undefined ? { frozen: frozenToModel(s.frozen) } : {}),
      ...(s.pinned !== undefined ? { pinned: s.pinned.map((p) => ({ ...p })) } : {}),
    }));
  }
  return out;
}

function digest(c: Checker, v: JsonModel | undefined, p: string): Sha256Digest | undefined {
  if (typeof v !== "string" || !isDigest(v) || !v.startsWith("sha256:")) {
    c.add(p, "expected sha256:<64 lowercase hex>", "DIGEST_INVALID");
    return undefined;
  }
  return v as Sha256Digest;
}

function readAttestation(c: Checker, v: JsonModel | undefined, p: string): Attestation | undefined {
  const o = c.object(v, p, ["status", "keyid", "envelope_sha256"]);
  if (o === undefined) return undefined;
  const status = c.string(c.required(o, "status", p), `${p}/status`);
  const env = digest(c, c.required(o, "envelope_sha256", p), `${p}/envelope_sha256`);
  if (status === "signed") {
    const keyid = digest(c, c.required(o, "keyid", p), `${p}/keyid`);
    return keyid && env ? { status, keyid, envelope_sha256: env } : undefined;
  }
  if (status === "unsigned-offline") {
    if (Object.hasOwn(o, "keyid")) c.add(`${p}/keyid`, "an unsigned-offline record has no keyid", "LOCK_INVALID");
    return env ? { status, envelope_sha256: env } : undefined;
  }
  if (status !== undefined) c.add(`${p}/status`, "status must be signed or unsigned-offline", "MODEL_VALUE");
  return undefined;
}

function readLayerRecord(c: Checker, v: JsonModel, p: string): [string, LayerRecord] | undefined {
  const o = c.object(v, p, ["id", "signature", "registry", "manifest_sha256", "manifest_envelope"]);
  if (o === undefined) return undefined;
  const id = c.string(c.required(o, "id", p), `${p}/id`, { nonEmpty: true, max: 512 });
  const signature = Object.hasOwn(o, "signature") ? readAttestation(c, o.signature, `${p}/signature`) : undefined;
  const registry = Object.hasOwn(o, "registry") ? c.string(o.registry, `${p}/registry`, { nonEmpty: true, max: 4096 }) : undefined;
  const manifest_sha256 = Object.hasOwn(o, "manifest_sha256") ? digest(c, o.manifest_sha256, `${p}/manifest_sha256`) : undefined;
  const manifest_envelope = Object.hasOwn(o, "manifest_envelope") ? c.string(o.manifest_envelope, `${p}/manifest_envelope`, { pattern: BASE64 }) : undefined;
  if (manifest_envelope !== undefined) checkEmbeddedEnvelope(c, manifest_envelope, signature, manifest_sha256, p);
  if (id === undefined) return undefined;
  return [
    id,
    {
      ...(signature !== undefined ? { signature } : {}),
      ...(registry !== undefined ? { registry } : {}),
      ...(manifest_sha256 !== undefined ? { manifest_sha256 } : {}),
      ...(manifest_envelope !== undefined ? { manifest_envelope } : {}),
    },
  ];
}

function embeddedManifest(b64: string, p: string): LayerManifest {
  const { envelope } = embeddedEnvelope(b64, `${p}/manifest_envelope`);
  return parseLayerManifest(parseJsonBytes(Buffer.from(envelope.payload, "base64"), { source: `${p}/manifest_envelope payload` }), p);
}

/** Reads records, checking them against the lockfile they sit beside (its bytes' sha256, its layer ids and pins). */
export function readRecords(v: JsonModel, lock: spec.LockFile, lockSha256: Sha256Digest, source: string): LockRecords {
  const c = new Checker("LOCK_INVALID");
  const o = c.object(v, "", ["format", "lockfile_sha256", "policy", "base_source", "layers", "formations", "packages"]);
  c.done(source);
  const root = o!;
  const format = c.string(c.required(root, "format", ""), "/format");
  if (format !== undefined && format !== RECORDS_FORMAT) c.add("/format", `format must be ${RECORDS_FORMAT}`, "MODEL_VALUE");
  const bound = digest(c, c.required(root, "lockfile_sha256", ""), "/lockfile_sha256");
  c.done(source);
  if (bound !== lockSha256) {
    throw new CairnError("LOCK_INVALID", `${source} records another version of the lockfile (lockfile_sha256 ${bound}, the file is ${lockSha256})`, {
      path: "/lockfile_sha256",
      hint: "the lockfile was edited after cairn wrote it: restore it, or remove the records to read it as Strata would (unsigned, no package archive details)",
    });
  }
  const policy = Object.hasOwn(root, "policy") ? c.string(root.policy, "/policy") : undefined;
  if (policy !== undefined && policy !== "signed" && policy !== "unsigned-offline")
    c.add("/policy", "policy must be signed or unsigned-offline", "MODEL_VALUE");
  const base_source = Object.hasOwn(root, "base_source") ? c.string(root.base_source, "/base_source", { nonEmpty: true, max: 4096 }) : undefined;
  const layers = new Map<string, LayerRecord>();
  c.array(c.required(root, "layers", ""), "/layers")?.forEach((x, i) => {
    const r = readLayerRecord(c, x, `/layers/${i}`);
    if (r === undefined) return;
    const inLock = lock.layers.find((l) => l.id === r[0]);
    if (inLock === undefined) c.add(`/layers/${i}/id`, `no layer ${r[0]} in the lockfile`, "LOCK_INVALID");
    else if (r[1].manifest_envelope !== undefined && c.ok) {
      // The envelope must be the signed form of the manifest the lockfile carries inline.
      const differs = specManifestDifference(inLock, toSpecLayerManifest(embeddedManifest(r[1].manifest_envelope, `/layers/${i}`)));
      if (differs !== undefined)
        c.add(`/layers/${i}/manifest_envelope`, `the signed manifest's ${differs} differs from the lockfile's layer ${r[0]}`, "DIGEST_MISMATCH");
    }
    if (inLock === undefined) return;
    if (layers.has(r[0])) c.add(`/layers/${i}/id`, `layer ${r[0]} is recorded twice`, "LOCK_INVALID");
    else layers.set(r[0], r[1]);
  });
  const formations: LockFormation[] = [];
  c.array(c.required(root, "formations", ""), "/formations")?.forEach((f, i) => {
    const p = `/formations/${i}`;
    const fo = c.object(f, p, ["name", "version", "signature"]);
    if (fo === undefined) return;
    const name = c.string(c.required(fo, "name", p), `${p}/name`);
    const version = c.string(c.required(fo, "version", p), `${p}/version`);
    const signature = Object.hasOwn(fo, "signature") ? readAttestation(c, fo.signature, `${p}/signature`) : undefined;
    if (name !== undefined && version !== undefined) formations.push({ name, version, ...(signature ? { signature } : {}) });
  });
  let packages: LockPackageSet[] | undefined;
  if (Object.hasOwn(root, "packages")) {
    packages = [];
    c.array(root.packages, "/packages")?.forEach((s, i) => {
      const p = `/packages/${i}`;
      const so = c.object(s, p, ["manager", "packages", "env", "frozen", "pinned"]);
      if (so === undefined) return;
      const { frozen: unsafeFrozen, pinned: unsafePinned, ...request } = so;
      const set = readPackageSet(c, request as JsonModel, p);
      const frozen: FrozenPackages | undefined = unsafeFrozen !== undefined ? readFrozen(c, c, unsafeFrozen, `${p}/frozen`, set?.manager) : undefined;
      const pinned = unsafePinned !== undefined ? readPinned(c, unsafePinned, `${p}/pinned`) : undefined;
      if (set !== undefined) packages!.push({ ...set, ...(frozen !== undefined ? { frozen } : {}), ...(pinned !== undefined ? { pinned } : {}) });
    });
    if (c.ok) checkPinsAgree(c, packages, lock); // a malformed pin is reported as itself, not also as a disagreement
  }
  c.done(source, "cairn writes these records beside the lockfile; do not edit them by hand");
  return {
    ...(policy !== undefined ? { policy: policy as "signed" | "unsigned-offline" } : {}),
    ...(base_source !== undefined ? { base_source } : {}),
    layers,
    formations,
    ...(packages !== undefined ? { packages } : {}),
  };
}

function readPinned(c: Checker, v: JsonModel, p: string): { name: string; version: string; sha256?: string }[] {
  const out: { name: string; version: string; sha256?: string }[] = [];
  c.array(v, p)?.forEach((x, i) => {
    const o = c.object(x, `${p}/${i}`, ["name", "version", "sha256"]);
    if (o === undefined) return;
    const name = c.string(c.required(o, "name", `${p}/${i}`), `${p}/${i}/name`);
    const version = c.string(c.required(o, "version", `${p}/${i}`), `${p}/${i}/version`);
    const sha = Object.hasOwn(o, "sha256") ? c.string(o.sha256, `${p}/${i}/sha256`, { pattern: /^[0-9a-f]{64}$/ }) : undefined;
    if (name !== undefined && version !== undefined) out.push({ name, version, ...(sha !== undefined ? { sha256: sha } : {}) });
  });
  return out;
}

/**
 * The wire's pinned sets, in order: every frozen set (name, version and
 * sha256 of each pin) and every set the lockfile itself pinned without
 * cairn's archive records (as it was). A set that is only a request is not
 * on the wire.
 */
export function pinnedSets(sets: readonly LockPackageSet[]): spec.ResolvedPackageSet[] {
  return sets
    .filter((s) => s.frozen !== undefined || s.pinned !== undefined)
    .map((s) => ({
      manager: s.manager,
      env: s.env ?? "",
      packages:
        s.frozen !== undefined
          ? s.frozen.pins.map((p) => ({ name: p.name, version: p.version, sha256: p.sha256.slice("sha256:".length) }))
          : s.pinned!.map((p) => ({ name: p.name, version: p.version, sha256: p.sha256 ?? "" })),
    }));
}

function checkPinsAgree(c: Checker, sets: readonly LockPackageSet[], lock: spec.LockFile): void {
  const want = JSON.stringify(pinnedSets(sets));
  const have = JSON.stringify(lock.packages.map((s) => ({ manager: s.manager, env: s.env, packages: s.packages ?? [] })));
  if (want !== have) c.add("/packages", "the frozen package records do not match the lockfile's pinned packages", "LOCK_INVALID");
}

/** Writes the records beside `lockPath`, naming `lockBytes`; atomic, owner-only like the lockfile. */
export function writeRecords(lockPath: string, records: LockRecords, lockBytes: Uint8Array): void {
  const bytes = Buffer.from(`${JSON.stringify(recordsToModel(records, sha256(lockBytes)), null, 2)}\n`);
  writeFileAtomic(recordsPath(lockPath), bytes, { mode: 0o600 });
}

export function removeRecords(lockPath: string): void {
  rmSync(recordsPath(lockPath), { force: true });
}

/** Reads the records beside `lockPath`, if any. */
export function readRecordsFile(lockPath: string, lock: spec.LockFile, lockBytes: Uint8Array): LockRecords | undefined {
  const p = recordsPath(lockPath);
  if (!existsSync(p)) return undefined;
  const bytes = readFileBounded(p, MAX_RECORDS_BYTES, "lock.max_records_bytes", { limitHint: FIXED_LIMIT_HINT });
  return readRecords(parseJsonBytes(bytes, { source: p }), lock, sha256(lockBytes), p);
}
