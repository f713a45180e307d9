/**
 * The lockfile: Strata's LockFile (seed 002), exactly, on the wire
 * (spec/lock-file.ts reads, validates, writes and identifies it), plus the
 * records cairn keeps beside it (lockfile-records.ts): the signature status
 * of every layer and formation with their manifest envelopes, how the base
 * was probed, and the package requests with their pin details. A lockfile
 * Strata wrote has no records and is read all the same.
 *
 * `Lockfile` is the view the rest of cairn reads: the wire value (`spec`)
 * and the records (`records`) are the data, and every other field is derived
 * from them by `viewLock`, here and nowhere else. A producer (the resolver,
 * freeze, convert) builds a wire value and records and calls `viewLock`.
 */
import { CairnError, Checker, compareBytes, type Issue, type Sha256Digest } from "../core/index.ts";
import { type LockBase, viewBase } from "./base.ts";
import { requirementString, satisfies } from "./capability.ts";
import type { LockPackageSet } from "./freeze/pins.ts";
import { modulefilePath } from "./modulefile.ts";
import type { SoftwareRef } from "./ref.ts";
import { isFrozen as specIsFrozen, lockFileProblems, lockFileToYaml, parseLockFileText } from "./spec/lock-file.ts";
import { VERIFY_ATTESTATION_REFERENCES_PRESENT, VERIFY_UNSIGNED_OFFLINE } from "./spec/schema.ts";
import type * as spec from "./spec/types.ts";
import type { Attestation } from "./trust.ts";

/**
 * What was checked about the layers' signatures when the lockfile was made:
 * `signed` (cairn checked every layer and formation against a trusted key:
 * from cairn's records), `unsigned-offline` (some were accepted unsigned),
 * `attestation-references-present` (Strata's claim that every layer named a
 * bundle and a Rekor entry; cairn cannot check Rekor offline), `unrecorded`
 * (neither the file nor cairn's records say).
 */
export type VerificationPolicy = "signed" | "unsigned-offline" | "attestation-references-present" | "unrecorded";

/** cairn's record of one layer: its signature status and where its signed manifest came from. */
export interface LayerRecord {
  readonly signature?: Attestation;
  readonly registry?: string;
  /** The layer's DSSE manifest envelope, base64, so the records are self-contained for offline audit. */
  readonly manifest_envelope?: string;
  /** sha256 of the envelope's payload (the signed manifest's bytes). */
  readonly manifest_sha256?: Sha256Digest;
}

export interface LockFormation {
  readonly name: string;
  readonly version: string;
  /** Absent for a lockfile cairn did not resolve (no records). */
  readonly signature?: Attestation;
}

/** What cairn keeps beside the lockfile (`LOCK.cairn.json`, lockfile-records.ts). */
export interface LockRecords {
  /** How the base facts were obtained: `declared`, `host`, `rootfs:PATH`, `oci:LAYOUT`. */
  readonly base_source?: string;
  readonly layers: ReadonlyMap<string, LayerRecord>;
  readonly formations: readonly LockFormation[];
  /** The profile's package requests, each with its pins' details once frozen; the wire holds only name, version, sha256. */
  readonly packages?: readonly LockPackageSet[];
  /** cairn's own verdict on the signatures it checked. */
  readonly policy?: "signed" | "unsigned-offline";
}

export const NO_RECORDS: LockRecords = { layers: new Map(), formations: [] };

export interface LockLayer {
  readonly id: string;
  readonly name: string;
  readonly version: string;
  /** Absent while unfrozen (the wire's empty string). */
  readonly sha256?: Sha256Digest;
  readonly size: number;
  /** Position in the stack, counted from 1 at the bottom (the seed's rule). */
  readonly mount_order: number;
  /** The profile ref this layer satisfies (`python@3.12`, `formation:bio-seq@2026.03`). */
  readonly satisfied_by: string;
  /** `name@version` of the formation that brought it in. */
  readonly from_formation?: string;
  /** The layer's entry on the wire: the full LayerManifest plus mount order, satisfied_by and from_formation. */
  readonly manifest: spec.ResolvedLayer;
  /** requirement → providers ("base" or layer ids), derived from the manifests: what explain and the mount order show. */
  readonly wiring: ReadonlyMap<string, readonly string[]>;
  readonly signature?: Attestation;
  readonly registry?: string;
  readonly manifest_envelope?: string;
  readonly manifest_sha256?: Sha256Digest;
  /** The Lmod modulefile the layer carries: its path and the digest its content manifest gives. */
  readonly modulefile?: { readonly path: string; readonly sha256: Sha256Digest };
}

export interface Lockfile {
  /** The lockfile as it travels: the data. */
  readonly spec: spec.LockFile;
  /** What cairn keeps beside it: the data. */
  readonly records: LockRecords;
  readonly profile: string;
  readonly profile_sha256?: Sha256Digest;
  readonly resolved_at: string;
  readonly strata_version: string;
  readonly verification_policy: VerificationPolicy;
  /** Strata's Sigstore references for the lockfile itself: kept, never checked offline. */
  readonly rekor_entry: string;
  readonly bundle: string;
  readonly base: LockBase;
  readonly layers: readonly LockLayer[];
  readonly formations: readonly LockFormation[];
  readonly env: ReadonlyMap<string, string>;
  readonly on_ready: readonly string[];
  readonly defaults: readonly SoftwareRef[];
  readonly packages: readonly LockPackageSet[];
  readonly mutable_layer?: spec.MutableLayerSpec;
  readonly requires_host: readonly spec.HostRequirement[];
}

export const BASE_PROVIDER = "base";

function digestOf(hex: string): Sha256Digest | undefined {
  return hex === "" ? undefined : (`sha256:${hex}` as Sha256Digest);
}

/** requirement → every provider that satisfies it: the base first, then layer ids by bytes. */
export function wiringOf(layer: spec.LayerManifest, all: readonly spec.LayerManifest[], base: spec.BaseCapabilities): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const q of layer.requires) {
    const r = { name: q.name, ...(q.min_version !== "" ? { min: q.min_version } : {}), ...(q.max_version !== "" ? { max: q.max_version } : {}) };
    const providers: string[] = [];
    if (base.provides.some((c) => satisfies(c, r))) providers.push(BASE_PROVIDER);
    for (const other of all) if (other.id !== layer.id && other.provides.some((c) => satisfies(c, r))) providers.push(other.id);
    out.set(
      requirementString(r),
      providers.sort((a, b) => (a === BASE_PROVIDER ? -1 : b === BASE_PROVIDER ? 1 : compareBytes(a, b))),
    );
  }
  return out;
}

function policyOf(s: spec.LockFile, records: LockRecords): VerificationPolicy {
  if (records.policy !== undefined) return records.policy;
  if (s.verification_policy === VERIFY_UNSIGNED_OFFLINE) return "unsigned-offline";
  if (s.verification_policy === VERIFY_ATTESTATION_REFERENCES_PRESENT) return "attestation-references-present";
  return "unrecorded";
}

/** The package sets: cairn's records when it has them (requests and pin details), else the wire's pinned sets as they are. */
function packagesOf(s: spec.LockFile, records: LockRecords): LockPackageSet[] {
  if (records.packages !== undefined) return [...records.packages];
  return s.packages.map((set) => ({
    manager: set.manager as LockPackageSet["manager"],
    packages: (set.packages ?? []).map((p) => ({ name: p.name, version: p.version })),
    ...(set.env !== "" ? { env: set.env } : {}),
    pinned: (set.packages ?? []).map((p) => ({ name: p.name, version: p.version, ...(p.sha256 !== "" ? { sha256: p.sha256 } : {}) })),
  }));
}

/** The one derivation of cairn's view from the wire value and the records. */
export function viewLock(s: spec.LockFile, records: LockRecords = NO_RECORDS): Lockfile {
  const all = s.layers;
  const layers = all.map((m): LockLayer => {
    const rec = records.layers.get(m.id) ?? {};
    const mpath = modulefilePath(m.name, m.version);
    const msha = m.has_modulefile ? digestOf(m.content_manifest[mpath] ?? "") : undefined;
    const sha = digestOf(m.sha256);
    return {
      id: m.id,
      name: m.name,
      version: m.version,
      ...(sha !== undefined ? { sha256: sha } : {}),
      size: m.size,
      mount_order: m.mount_order,
      satisfied_by: m.satisfied_by,
      ...(m.from_formation !== "" ? { from_formation: m.from_formation } : {}),
      manifest: m,
      wiring: wiringOf(m, all, s.base.capabilities),
      ...rec,
      ...(msha !== undefined ? { modulefile: { path: mpath, sha256: msha } } : {}),
    };
  });
  const formations =
    records.formations.length > 0
      ? records.formations
      : [...new Set(layers.flatMap((l) => (l.from_formation ? [l.from_formation] : [])))].sort(compareBytes).map((f) => {
          const at = f.lastIndexOf("@");
          return at < 0 ? { name: f, version: "" } : { name: f.slice(0, at), version: f.slice(at + 1) };
        });
  const profileSha = digestOf(s.profile_sha256);
  return {
    spec: s,
    records,
    profile: s.profile,
    ...(profileSha !== undefined ? { profile_sha256: profileSha } : {}),
    resolved_at: s.resolved_at,
    strata_version: s.strata_version,
    verification_policy: policyOf(s, records),
    rekor_entry: s.rekor_entry,
    bundle: s.bundle,
    base: viewBase(s.base, records.base_source),
    layers,
    formations,
    env: new Map(Object.entries(s.env)),
    on_ready: s.on_ready,
    defaults: s.defaults,
    packages: packagesOf(s, records),
    ...(s.mutable_layer !== undefined ? { mutable_layer: s.mutable_layer } : {}),
    requires_host: s.requires_host,
  };
}

/** The seed's Validate plus cairn's own rules on what it reads (a layer id listed twice); the problems, not a refusal. */
export function lockProblems(s: spec.LockFile): Issue[] {
  const out = lockFileProblems(s);
  const ids = new Map<string, number>();
  s.layers.forEach((l, i) => {
    if (ids.has(l.id)) out.push({ path: `/layers/${i}/id`, message: `layer ${l.id} is also layer ${ids.get(l.id)}`, code: "LOCK_INVALID" });
    else ids.set(l.id, i);
  });
  return out;
}

/** The first key of cairn's earlier lockfile format; a file that starts with it is converted by `cairn lock convert`. */
export const V1_FORMAT = "cairn.lock/1";

function refuseV1(text: string, source: string): void {
  if (/^format:\s*["']?cairn\.lock\/1/m.test(text)) {
    throw new CairnError("LOCK_FORMAT_OLD", `${source} is in cairn's earlier lockfile format (${V1_FORMAT}), not Strata's`, {
      path: "/format",
      hint: `convert it once: cairn lock convert ${source} --out NEW.lock (the layers' signed manifests it embeds carry over)`,
    });
  }
}

/** Parses and validates a lockfile's text (records are attached by lockfile-io.ts). */
export function parseLockfileText(text: string, source = "lockfile", records?: LockRecords): Lockfile {
  refuseV1(text, source);
  const s = parseLockFileText(text, source);
  const c = new Checker("LOCK_INVALID");
  c.adopt(lockProblems(s));
  c.done(source, "Validate refuses a present digest that is not 64 lowercase hex, an unsafe layer id and a repeated mount order or id");
  return viewLock(s, records);
}

/** Parses without Validate (for `lock diff`): a lockfile that cannot be read is refused; rule problems come back. */
export function parseLockfileUnvalidated(text: string, source = "lockfile"): { lock: Lockfile; problems: readonly Issue[] } {
  refuseV1(text, source);
  const s = parseLockFileText(text, source);
  return { lock: viewLock(s), problems: lockProblems(s) };
}

/** The seed's IsFrozen. */
export function isFrozen(l: Lockfile): boolean {
  return specIsFrozen(l.spec);
}

/** The lockfile's text as it is written (seed 002's LockFile only; the records are written beside it by lockfile-io.ts). */
export function lockfileToYaml(l: Lockfile): string {
  return lockFileToYaml(l.spec);
}
