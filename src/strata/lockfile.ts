/**
 * The lockfile: what a profile resolved to, in YAML. It is parsed strictly
 * (`parseLockfile` is cairn's Validate: every rule below is checked on every
 * read, including of lockfiles cairn wrote itself):
 * - unknown fields and null list entries are errors;
 * - a digest that is present must be well-formed (`sha256:` + 64 lowercase hex);
 * - a layer id must be one safe path component;
 * - two layers must not share a mount order;
 * - a base digest that is present must match the base facts;
 * - `resolved_at` is an RFC 3339 UTC time.
 * A lockfile whose layers have no digest or mount order yet, or whose base has
 * no digest, is unfrozen: a valid intermediate state that has no
 * EnvironmentID (see env-id.ts).
 */
import {
  CairnError,
  Checker,
  childPath,
  isDigest,
  isJsonObject,
  parseYamlText,
  safeComponent,
  type Issue,
  type JsonModel,
  type JsonObject,
  type Sha256Digest,
} from "../core/index.ts";
import { parseCapability, parseHostRequirement, type Capability, type HostRequirement } from "./capability.ts";
import { ARCHES, BASE_NAME, canonicalArch, type Arch } from "./platform.ts";
import { readPackageSet } from "./profile-model.ts";
import { readFrozen, type LockPackageSet } from "./freeze/pins.ts";
import { readDefaults, readMutableLayer, type MutableLayer, type ProfileDefaults } from "./profile-forms.ts";
import { baseDigest, type LockBase } from "./base.ts";
import type { Attestation } from "./trust.ts";
import { BASE64, checkEmbeddedEnvelope } from "./lockfile-envelope.ts";
import { modulefilePath } from "./modulefile.ts";

export const LOCKFILE_FORMAT = "cairn.lock/1";
export const VERIFICATION_POLICIES = ["signed", "unsigned-offline"] as const;
export type VerificationPolicy = (typeof VERIFICATION_POLICIES)[number];

export interface LockLayer {
  readonly id: string;
  readonly name: string;
  readonly version: string;
  readonly sha256?: Sha256Digest;
  readonly size?: number;
  readonly manifest_sha256?: Sha256Digest;
  readonly mount_order?: number;
  readonly from_formation?: string;
  /** requirement → providers ("base" or layer ids). */
  readonly satisfied_by: ReadonlyMap<string, readonly string[]>;
  readonly signature?: Attestation;
  readonly registry?: string;
  /**
   * The layer's DSSE manifest envelope, the registry file's exact bytes in
   * base64, so the lockfile is self-contained for offline audit: its sha256 is
   * `signature.envelope_sha256` and its payload's sha256 is `manifest_sha256`
   * (Validate checks both).
   */
  readonly manifest_envelope?: string;
  /** The layer's Lmod modulefile (restated from its manifest): its path in the layer and the sha256 of its bytes. */
  readonly modulefile?: { readonly path: string; readonly sha256: Sha256Digest };
}

export interface LockFormation {
  readonly name: string;
  readonly version: string;
  readonly signature: Attestation;
}

export interface Lockfile {
  readonly format: typeof LOCKFILE_FORMAT;
  readonly profile: string;
  readonly profile_sha256?: Sha256Digest;
  readonly resolved_at: string;
  readonly cairn_version: string;
  readonly verification_policy: VerificationPolicy;
  readonly base: LockBase;
  readonly layers: readonly LockLayer[];
  readonly formations: readonly LockFormation[];
  readonly env: ReadonlyMap<string, string>;
  readonly on_ready: readonly string[];
  /** The profile's defaults: a settings map, or Strata's Lmod preload list (profile-forms.ts). */
  readonly defaults: ProfileDefaults;
  /** The package requests, each set with its pins once `cairn freeze` resolved it (freeze/pins.ts). */
  readonly packages: readonly LockPackageSet[];
  /** false, true, or Strata's mutable-layer spec (profile-forms.ts). */
  readonly mutable_layer: MutableLayer;
  readonly requires_host: readonly HostRequirement[];
  /** Profile fields recorded but not acted upon (instance, storage). */
  readonly not_acted_upon?: JsonObject;
}

/** Every field of each lockfile object, in the order they are written. The EnvironmentID scope classifies each one. */
export const LOCK_FIELDS = [
  "format",
  "profile",
  "profile_sha256",
  "resolved_at",
  "cairn_version",
  "verification_policy",
  "base",
  "layers",
  "formations",
  "env",
  "on_ready",
  "defaults",
  "packages",
  "mutable_layer",
  "requires_host",
  "not_acted_upon",
] as const;
export const LOCK_BASE_FIELDS = ["name", "arch", "abi", "os_id", "version_id", "capabilities", "source", "image", "digest", "probed_at"] as const;
export const LOCK_LAYER_FIELDS = [
  "id",
  "name",
  "version",
  "sha256",
  "size",
  "manifest_sha256",
  "mount_order",
  "from_formation",
  "satisfied_by",
  "signature",
  "registry",
  "manifest_envelope",
  "modulefile",
] as const;

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

function has(o: JsonObject, k: string): boolean {
  return Object.hasOwn(o, k);
}

function digest(c: Checker, o: JsonObject, k: string, p: string, required = false): Sha256Digest | undefined {
  if (!has(o, k)) {
    if (required) c.add(childPath(p, k), `missing required field "${k}"`, "MODEL_MISSING_FIELD");
    return undefined;
  }
  const v = o[k];
  if (typeof v !== "string" || !isDigest(v) || !v.startsWith("sha256:")) {
    c.add(childPath(p, k), "a digest that is present must be sha256:<64 lowercase hex>", "DIGEST_INVALID");
    return undefined;
  }
  return v as Sha256Digest;
}

function readAttestation(c: Checker, v: JsonModel | undefined, p: string): Attestation | undefined {
  const o = c.object(v, p, ["status", "keyid", "envelope_sha256"]);
  if (o === undefined) return undefined;
  const status = c.string(c.required(o, "status", p), `${p}/status`);
  const env = digest(c, o, "envelope_sha256", p, true);
  if (status === "signed") {
    const keyid = digest(c, o, "keyid", p, true);
    return keyid && env ? { status, keyid, envelope_sha256: env } : undefined;
  }
  if (status === "unsigned-offline") {
    if (has(o, "keyid")) c.add(`${p}/keyid`, "an unsigned-offline record has no keyid", "LOCK_INVALID");
    return env ? { status, envelope_sha256: env } : undefined;
  }
  if (status !== undefined) c.add(`${p}/status`, "status must be signed or unsigned-offline", "MODEL_VALUE");
  return undefined;
}

function caps<T>(c: Checker, v: JsonModel | undefined, p: string, parse: (s: string, sp: string) => T): T[] {
  const out: T[] = [];
  c.stringArray(v, p)?.forEach((s, i) => {
    try {
      out.push(parse(s, childPath(p, i)));
    } catch (e) {
      c.add(childPath(p, i), e instanceof Error ? e.message : String(e), "MODEL_VALUE");
    }
  });
  return out;
}

function readBase(c: Checker, v: JsonModel | undefined, rules: Checker): LockBase | undefined {
  const p = "/base";
  const o = c.object(v, p, LOCK_BASE_FIELDS);
  if (o === undefined) return undefined;
  const name = c.string(c.required(o, "name", p), `${p}/name`, { pattern: BASE_NAME });
  const arch = c.string(c.required(o, "arch", p), `${p}/arch`);
  if (arch !== undefined && !(ARCHES as readonly string[]).includes(arch))
    c.add(`${p}/arch`, `unknown arch${canonicalArch(arch) ? `: a lockfile holds the canonical name, ${canonicalArch(arch)}` : ""}`, "MODEL_VALUE");
  const abi = c.string(c.required(o, "abi", p), `${p}/abi`);
  if (abi !== undefined && !["gnu", "musl", "none", "unknown"].includes(abi)) c.add(`${p}/abi`, "abi must be gnu, musl, none or unknown", "MODEL_VALUE");
  const os_id = has(o, "os_id") ? c.string(o.os_id, `${p}/os_id`) : undefined;
  const version_id = has(o, "version_id") ? c.string(o.version_id, `${p}/version_id`) : undefined;
  const capabilities: Capability[] = caps(c, c.required(o, "capabilities", p), `${p}/capabilities`, parseCapability);
  const source = c.string(c.required(o, "source", p), `${p}/source`, { nonEmpty: true, max: 4096 });
  const image = digest(c, o, "image", p);
  const d = digest(c, o, "digest", p);
  const probed_at = has(o, "probed_at") ? c.string(o.probed_at, `${p}/probed_at`, { pattern: RFC3339_UTC }) : undefined;
  if (name === undefined || arch === undefined || abi === undefined || source === undefined) return undefined;
  // The EnvironmentID hashes base.digest in place of the facts, so a digest that does not match them would let two different bases share an ID.
  const facts = {
    name,
    arch: arch as Arch,
    abi: abi as LockBase["abi"],
    capabilities,
    ...(os_id !== undefined ? { os_id } : {}),
    ...(version_id !== undefined ? { version_id } : {}),
    ...(image !== undefined ? { image } : {}),
  };
  if (d !== undefined && baseDigest(facts) !== d)
    rules.add(`${p}/digest`, "does not match the base facts (name, arch, abi, os_id, version_id, capabilities, image)", "BASE_MISMATCH");
  return {
    name,
    arch: arch as Arch,
    abi: abi as LockBase["abi"],
    capabilities,
    source,
    ...(os_id !== undefined ? { os_id } : {}),
    ...(version_id !== undefined ? { version_id } : {}),
    ...(image !== undefined ? { image } : {}),
    ...(d !== undefined ? { digest: d } : {}),
    ...(probed_at !== undefined ? { probed_at } : {}),
  };
}

function readLayer(c: Checker, v: JsonModel, p: string, rules: Checker): LockLayer | undefined {
  const o = c.object(v, p, LOCK_LAYER_FIELDS);
  if (o === undefined) return undefined;
  const id = c.string(c.required(o, "id", p), `${p}/id`);
  if (id !== undefined) {
    try {
      safeComponent(id, `${p}/id`);
    } catch {
      rules.add(`${p}/id`, "a layer id must be one safe path component", "PATH_UNSAFE");
    }
  }
  const name = c.string(c.required(o, "name", p), `${p}/name`, { nonEmpty: true });
  const version = c.string(c.required(o, "version", p), `${p}/version`, { nonEmpty: true });
  const sha = digest(c, o, "sha256", p);
  const size = has(o, "size") ? c.integer(o.size, `${p}/size`, { min: 0 }) : undefined;
  const manifest_sha256 = digest(c, o, "manifest_sha256", p);
  const mount_order = has(o, "mount_order") ? c.integer(o.mount_order, `${p}/mount_order`, { min: 0 }) : undefined;
  const from_formation = has(o, "from_formation") ? c.string(o.from_formation, `${p}/from_formation`, { nonEmpty: true }) : undefined;
  const satisfied_by = new Map<string, string[]>();
  if (has(o, "satisfied_by")) {
    const so = c.object(o.satisfied_by, `${p}/satisfied_by`);
    for (const k of Object.keys(so ?? {})) {
      const providers = c.stringArray(so![k], childPath(`${p}/satisfied_by`, k));
      if (providers !== undefined) satisfied_by.set(k, providers);
    }
  }
  const signature = has(o, "signature") ? readAttestation(c, o.signature, `${p}/signature`) : undefined;
  const registry = has(o, "registry") ? c.string(o.registry, `${p}/registry`, { nonEmpty: true }) : undefined;
  const manifest_envelope = has(o, "manifest_envelope")
    ? c.string(o.manifest_envelope, `${p}/manifest_envelope`, { pattern: BASE64 }) // bounded by lock.max_bytes, which bounds the whole file
    : undefined;
  if (manifest_envelope !== undefined) checkEmbeddedEnvelope(rules, manifest_envelope, signature, manifest_sha256, p);
  let modulefile: { path: string; sha256: Sha256Digest } | undefined;
  if (has(o, "modulefile")) {
    const mo = c.object(o.modulefile, `${p}/modulefile`, ["path", "sha256"]);
    const mpath = mo === undefined ? undefined : c.string(c.required(mo, "path", `${p}/modulefile`), `${p}/modulefile/path`);
    const msha = mo === undefined ? undefined : digest(c, mo, "sha256", `${p}/modulefile`, true);
    if (mpath !== undefined && name !== undefined && version !== undefined && mpath !== modulefilePath(name, version)) {
      rules.add(`${p}/modulefile/path`, `a layer's modulefile is ${modulefilePath(name, version)}`, "LOCK_INVALID");
    }
    if (mpath !== undefined && msha !== undefined) modulefile = { path: mpath, sha256: msha };
  }
  if (id === undefined || name === undefined || version === undefined) return undefined;
  return {
    id,
    name,
    version,
    satisfied_by,
    ...(sha !== undefined ? { sha256: sha } : {}),
    ...(size !== undefined ? { size } : {}),
    ...(manifest_sha256 !== undefined ? { manifest_sha256 } : {}),
    ...(mount_order !== undefined ? { mount_order } : {}),
    ...(from_formation !== undefined ? { from_formation } : {}),
    ...(signature !== undefined ? { signature } : {}),
    ...(registry !== undefined ? { registry } : {}),
    ...(manifest_envelope !== undefined ? { manifest_envelope } : {}),
    ...(modulefile !== undefined ? { modulefile } : {}),
  };
}

/** The profile's rule for each set (profile-model.ts readPackageSet), plus the set's pins once frozen. */
function readPackages(c: Checker, v: JsonModel | undefined, rules: Checker): LockPackageSet[] {
  const out: LockPackageSet[] = [];
  c.array(v, "/packages")?.forEach((s, i) => {
    const p = `/packages/${i}`;
    if (s === null) return; // reported by c.array with its index
    // the writer always writes the list, even empty
    if (isJsonObject(s) && !has(s, "packages")) c.required(s, "packages", p);
    const { frozen: unsafeFrozen, ...request } = isJsonObject(s) ? s : { frozen: undefined };
    const set = readPackageSet(c, isJsonObject(s) ? (request as JsonObject) : s, p);
    const frozen = unsafeFrozen !== undefined ? readFrozen(c, rules, unsafeFrozen, `${p}/frozen`, set?.manager) : undefined;
    if (set !== undefined) out.push(frozen !== undefined ? { ...set, frozen } : set);
  });
  return out;
}

/** Validate: reads a lockfile model, checking every rule; LOCK_INVALID (or the single issue's code) lists all issues. */
export function parseLockfile(v: JsonModel, source = "lockfile"): Lockfile {
  const { lock, rules } = readLockfileModel(v, source);
  rules.done(source, "a lockfile is written by `cairn resolve`; do not edit it by hand");
  return lock;
}

/**
 * Parse without Validate: the shape and types are checked (a lockfile that
 * cannot be read is refused), but the rules between fields (unique ids and
 * mount orders, safe layer ids, a base digest that matches its facts) come
 * back as `problems` instead of a refusal, so `lock diff` can show what is
 * wrong with a lockfile next to what changed.
 */
export function parseLockfileUnvalidated(v: JsonModel, source = "lockfile"): { lock: Lockfile; problems: readonly Issue[] } {
  const { lock, rules } = readLockfileModel(v, source);
  return { lock, problems: rules.issues };
}

function readLockfileModel(v: JsonModel, source: string): { lock: Lockfile; rules: Checker } {
  const rules = new Checker("LOCK_INVALID");
  const c = new Checker("LOCK_INVALID");
  const o = c.object(v, "", LOCK_FIELDS);
  c.done(source);
  const root = o!;
  const r = (k: string): JsonModel | undefined => c.required(root, k, "");
  const format = c.string(r("format"), "/format");
  if (format !== undefined && format !== LOCKFILE_FORMAT) c.add("/format", `format must be ${LOCKFILE_FORMAT}`, "MODEL_VALUE");
  const profile = c.string(r("profile"), "/profile", { nonEmpty: true });
  const profile_sha256 = digest(c, root, "profile_sha256", "");
  const resolved_at = c.string(r("resolved_at"), "/resolved_at", { pattern: RFC3339_UTC });
  if (resolved_at !== undefined && Number.isNaN(Date.parse(resolved_at))) c.add("/resolved_at", "not a real date", "MODEL_VALUE");
  const cairn_version = c.string(r("cairn_version"), "/cairn_version", { nonEmpty: true });
  const policy = c.string(r("verification_policy"), "/verification_policy");
  if (policy !== undefined && !(VERIFICATION_POLICIES as readonly string[]).includes(policy))
    c.add("/verification_policy", "must be signed or unsigned-offline", "MODEL_VALUE");
  const base = readBase(c, r("base"), rules);
  const layers: LockLayer[] = [];
  c.array(r("layers"), "/layers")?.forEach((l, i) => {
    if (l === null) return;
    const layer = readLayer(c, l, `/layers/${i}`, rules);
    if (layer !== undefined) layers.push(layer);
  });
  const orders = new Map<number, string>();
  const ids = new Set<string>();
  layers.forEach((l, i) => {
    if (ids.has(l.id)) rules.add(`/layers/${i}/id`, `layer ${l.id} is listed twice`, "LOCK_INVALID");
    ids.add(l.id);
    if (l.mount_order === undefined) return;
    const other = orders.get(l.mount_order);
    if (other !== undefined) rules.add(`/layers/${i}/mount_order`, `layers ${other} and ${l.id} share mount order ${l.mount_order}`, "LOCK_INVALID");
    orders.set(l.mount_order, l.id);
  });
  const formations: LockFormation[] = [];
  if (has(root, "formations")) {
    c.array(root.formations, "/formations")?.forEach((f, i) => {
      const p = `/formations/${i}`;
      const fo = c.object(f, p, ["name", "version", "signature"]);
      if (fo === undefined) return;
      const name = c.string(c.required(fo, "name", p), `${p}/name`);
      const version = c.string(c.required(fo, "version", p), `${p}/version`);
      const signature = readAttestation(c, c.required(fo, "signature", p), `${p}/signature`);
      if (name && version && signature) formations.push({ name, version, signature });
    });
  }
  const env = has(root, "env") ? (c.stringMap(root.env, "/env") ?? new Map<string, string>()) : new Map<string, string>();
  const on_ready = has(root, "on_ready") ? (c.stringArray(root.on_ready, "/on_ready") ?? []) : [];
  const defaults = has(root, "defaults") ? readDefaults(c, root.defaults, "/defaults") : [];
  const packages = has(root, "packages") ? readPackages(c, root.packages, rules) : [];
  const mutable_layer = has(root, "mutable_layer") ? readMutableLayer(c, root.mutable_layer, "/mutable_layer") : false;
  const requires_host: HostRequirement[] = [];
  if (has(root, "requires_host")) {
    c.array(root.requires_host, "/requires_host")?.forEach((h, i) => {
      try {
        requires_host.push(parseHostRequirement(h, `/requires_host/${i}`));
      } catch (e) {
        if (!(e instanceof CairnError)) throw e;
        c.add(e.path ?? `/requires_host/${i}`, e.message, e.code);
      }
    });
  }
  const not_acted_upon = has(root, "not_acted_upon") ? c.object(root.not_acted_upon, "/not_acted_upon", ["instance", "storage"]) : undefined;
  c.done(source, "a lockfile is written by `cairn resolve`; do not edit it by hand");
  const lock: Lockfile = {
    format: LOCKFILE_FORMAT,
    profile: profile!,
    ...(profile_sha256 !== undefined ? { profile_sha256 } : {}),
    resolved_at: resolved_at!,
    cairn_version: cairn_version!,
    verification_policy: policy as VerificationPolicy,
    base: base!,
    layers,
    formations,
    env,
    on_ready,
    defaults,
    packages,
    mutable_layer: mutable_layer!,
    requires_host,
    ...(not_acted_upon !== undefined ? { not_acted_upon } : {}),
  };
  return { lock, rules };
}

export function parseLockfileText(text: string, source = "lockfile"): Lockfile {
  return parseLockfile(parseYamlText(text, source), source);
}

/** True when every layer has a digest, a size and a mount order, and the base has a digest. */
export function isFrozen(l: Lockfile): boolean {
  return l.base.digest !== undefined && l.layers.every((x) => x.sha256 !== undefined && x.size !== undefined && x.mount_order !== undefined);
}
