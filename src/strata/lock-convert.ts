/**
 * `cairn lock convert`: cairn's earlier lockfile format (`format:
 * cairn.lock/1`) into Strata's LockFile and cairn's records beside it. The
 * one reader of the old format; cairn writes only the new one.
 *
 * Every layer's full manifest comes from the signed manifest envelope the old
 * lockfile embeds (a lockfile from before embedding is refused: resolve the
 * profile again). The base digest is recomputed by today's definition from
 * the facts the old lockfile recorded. What the new format has no place for
 * is named, never dropped silently: an old `defaults` settings mapping, a
 * mutable layer without the seed's name and version (the lockfile is dirty),
 * and the `not_acted_upon` copies of instance and storage (reported as
 * dropped: cairn never acted on them).
 */
import {
  CairnError,
  Checker,
  isJsonObject,
  type JsonModel,
  type JsonObject,
  parseEnvelope,
  parseJsonBytes,
  parseYamlText,
  decodeUtf8,
  readFileBounded,
  FIXED_LIMIT_HINT,
  type Sha256Digest,
  sha256,
} from "../core/index.ts";
import { baseDigest, type LockBase, specBase } from "./base.ts";
import { parseCapability } from "./capability.ts";
import { type FrozenPackages, type LockPackageSet, readFrozen } from "./freeze/pins.ts";
import { bareHex, toSpecLayerManifest } from "./layer-spec.ts";
import { parseLayerManifest } from "./layer-manifest.ts";
import { type LayerRecord, type LockFormation, type LockRecords, type Lockfile, V1_FORMAT, viewLock } from "./lockfile.ts";
import { pinnedSets } from "./lockfile-records.ts";
import { canonicalArch, type Arch } from "./platform.ts";
import { readPackageSet } from "./profile-model.ts";
import { specHostRequirements } from "./profile-spec.ts";
import type { SoftwareRef } from "./ref.ts";
import { VERIFY_UNSIGNED_OFFLINE } from "./spec/schema.ts";
import type * as spec from "./spec/types.ts";
import type { Attestation } from "./trust.ts";

export interface Converted {
  readonly lock: Lockfile;
  /** What the old lockfile held that the new format does not carry, by pointer. */
  readonly dropped: readonly string[];
}

const refuse = (path: string, message: string, hint?: string): never => {
  throw new CairnError("LOCK_INVALID", `cannot convert: ${message}`, { path, ...(hint ? { hint } : {}) });
};

function str(o: JsonObject, k: string, p: string): string {
  const v = o[k];
  if (typeof v !== "string") return refuse(`${p}/${k}`, `${k} is not a string`);
  return v;
}

function attestation(v: JsonModel | undefined, p: string): Attestation | undefined {
  if (v === undefined) return undefined;
  if (!isJsonObject(v)) return refuse(p, "signature is not a mapping");
  const status = str(v, "status", p);
  const env = str(v, "envelope_sha256", p) as Sha256Digest;
  if (status === "signed") return { status, keyid: str(v, "keyid", p) as Sha256Digest, envelope_sha256: env };
  if (status === "unsigned-offline") return { status, envelope_sha256: env };
  return refuse(`${p}/status`, "status is neither signed nor unsigned-offline");
}

function convertLayer(v: JsonModel, i: number): { layer: spec.ResolvedLayer; record: LayerRecord } {
  const p = `/layers/${i}`;
  if (!isJsonObject(v)) return refuse(p, "a layer is not a mapping");
  const id = str(v, "id", p);
  const b64 = v.manifest_envelope;
  if (typeof b64 !== "string") {
    return refuse(
      `${p}/manifest_envelope`,
      `layer ${id} carries no signed manifest to convert from`,
      "resolve the profile again: cairn writes Strata's format",
    );
  }
  const bytes = Buffer.from(b64, "base64");
  const signature = attestation(v.signature, `${p}/signature`);
  if (signature !== undefined && sha256(bytes) !== signature.envelope_sha256)
    refuse(`${p}/manifest_envelope`, "the embedded envelope is not the one the lockfile pins");
  const payload = Buffer.from(parseEnvelope(parseJsonBytes(bytes, { source: `${p}/manifest_envelope` })).payload, "base64");
  const manifest = parseLayerManifest(parseJsonBytes(payload, { source: `${p}/manifest_envelope payload` }), `layer ${id}`);
  if (manifest.id !== id) refuse(`${p}/id`, `the embedded manifest is layer ${manifest.id}, not ${id}`);
  const order = typeof v.mount_order === "number" ? v.mount_order : refuse(`${p}/mount_order`, "an unfrozen lockfile (no mount order) cannot be converted");
  const from = typeof v.from_formation === "string" ? v.from_formation : "";
  return {
    layer: {
      ...toSpecLayerManifest(manifest, signature?.status === "signed" ? signature.keyid : ""),
      mount_order: order + 1,
      // The old format kept the requirements each layer met, not the profile ref that chose it: name the ref that selects it.
      satisfied_by: from !== "" ? `formation:${from}` : manifest.name,
      from_formation: from,
    },
    record: {
      ...(signature !== undefined ? { signature } : {}),
      ...(typeof v.registry === "string" ? { registry: v.registry } : {}),
      manifest_sha256: sha256(payload),
      manifest_envelope: b64,
    },
  };
}

function convertBase(v: JsonModel | undefined): LockBase {
  if (!isJsonObject(v)) return refuse("/base", "base is not a mapping");
  const caps = Array.isArray(v.capabilities) ? v.capabilities.map((c, i) => parseCapability(c, `/base/capabilities/${i}`)) : [];
  const arch = canonicalArch(str(v, "arch", "/base")) ?? refuse("/base/arch", "unknown arch");
  const facts = {
    name: str(v, "name", "/base"),
    arch: arch as Arch,
    abi: str(v, "abi", "/base") as LockBase["abi"],
    capabilities: caps,
    ...(typeof v.image === "string" ? { image: v.image as Sha256Digest } : {}),
  };
  return {
    ...facts,
    source: str(v, "source", "/base"),
    digest: baseDigest(facts),
    ...(typeof v.probed_at === "string" ? { probed_at: v.probed_at } : {}),
  };
}

/** Old Lmod preload list `[gcc/12.2, openmpi]` → refs; the settings mapping has no place in the seed's defaults. */
function convertDefaults(v: JsonModel | undefined): SoftwareRef[] {
  if (v === undefined) return [];
  if (isJsonObject(v)) {
    if (Object.keys(v).length === 0) return [];
    return refuse(
      "/defaults",
      "defaults is a settings mapping; Strata's defaults are software refs Lmod loads",
      "resolve the profile again with defaults: [name@version, ...]",
    );
  }
  if (!Array.isArray(v)) return refuse("/defaults", "defaults is neither a list nor a mapping");
  return v.map((m, i): SoftwareRef => {
    if (typeof m !== "string") return refuse(`/defaults/${i}`, "a module is not a string");
    const at = m.indexOf("/");
    return at < 0 ? { kind: "layer", name: m } : { kind: "layer", name: m.slice(0, at), version: m.slice(at + 1) };
  });
}

/** cairn's earlier requirement strings (`kvm`, `cuda>=12`) as the seed's `{key, value}`; facts as they are. */
function convertHost(h: JsonModel, i: number): { key: string; value: string } {
  if (isJsonObject(h) && typeof h.key === "string") return { key: h.key, value: String(h.value) };
  if (typeof h !== "string") return refuse(`/requires_host/${i}`, "a host requirement is neither a string nor {key, value}");
  const m = /^([a-z0-9][a-z0-9._+:-]*)(.*)$/.exec(h);
  if (m === null) return refuse(`/requires_host/${i}`, "not a host requirement");
  return { key: m[1]!, value: m[2] === "" ? "true" : m[2]! };
}

function convertPackages(v: JsonModel | undefined): LockPackageSet[] {
  if (v === undefined) return [];
  const c = new Checker("LOCK_INVALID");
  const out: LockPackageSet[] = [];
  c.array(v, "/packages")?.forEach((s, i) => {
    if (!isJsonObject(s)) return;
    const { frozen: unsafeFrozen, ...request } = s;
    const set = readPackageSet(c, request as JsonModel, `/packages/${i}`);
    const frozen: FrozenPackages | undefined = unsafeFrozen !== undefined ? readFrozen(c, c, unsafeFrozen, `/packages/${i}/frozen`, set?.manager) : undefined;
    if (set !== undefined) out.push(frozen !== undefined ? { ...set, frozen } : set);
  });
  c.done("cannot convert the package sets");
  return out;
}

/** Converts an old lockfile's text. Throws when it is not one, or when it holds what the new format cannot carry. */
export function convertV1Lockfile(text: string, source = "lockfile"): Converted {
  const root = parseYamlText(text, source);
  if (!isJsonObject(root) || root.format !== V1_FORMAT) return refuse("/format", `${source} is not in cairn's earlier format (${V1_FORMAT})`);
  const dropped: string[] = [];
  if (root.not_acted_upon !== undefined) dropped.push("/not_acted_upon");
  const mutable = root.mutable_layer;
  if (mutable !== undefined && mutable !== false) {
    throw new CairnError(
      "LOCK_DIRTY",
      "cannot convert: the lockfile has a mutable upper layer, which the old format recorded without the name and version Strata's spec requires",
      {
        path: "/mutable_layer",
        hint: "freeze the upper layer (`cairn layer freeze`) or resolve the profile again with mutable_layer: {name, version}",
      },
    );
  }
  const converted = Array.isArray(root.layers) ? root.layers.map(convertLayer) : refuse("/layers", "layers is not a list");
  const base = convertBase(root.base);
  const packages = convertPackages(root.packages);
  const formations: LockFormation[] = (Array.isArray(root.formations) ? root.formations : []).map((f, i) => {
    if (!isJsonObject(f)) return refuse(`/formations/${i}`, "a formation is not a mapping");
    const signature = attestation(f.signature, `/formations/${i}/signature`);
    return { name: str(f, "name", `/formations/${i}`), version: str(f, "version", `/formations/${i}`), ...(signature ? { signature } : {}) };
  });
  const requires = (Array.isArray(root.requires_host) ? root.requires_host : []).map((h, i) => convertHost(h, i));
  const policy = str(root, "verification_policy", "");
  const env = isJsonObject(root.env) ? Object.fromEntries(Object.entries(root.env).map(([k, x]) => [k, String(x)])) : {};
  const lock: spec.LockFile = {
    profile: str(root, "profile", ""),
    profile_sha256: typeof root.profile_sha256 === "string" ? bareHex(root.profile_sha256) : "",
    resolved_at: str(root, "resolved_at", ""),
    strata_version: `cairn ${str(root, "cairn_version", "")}`,
    rekor_entry: "",
    bundle: "",
    verification_policy: policy === "unsigned-offline" ? VERIFY_UNSIGNED_OFFLINE : "",
    base: specBase(base, base.name),
    layers: converted.map((x) => x.layer),
    env,
    on_ready: Array.isArray(root.on_ready) ? root.on_ready.map(String) : [],
    defaults: convertDefaults(root.defaults),
    packages: pinnedSets(packages),
    requires_host: specHostRequirements(requires),
  };
  const records: LockRecords = {
    ...(policy === "signed" || policy === "unsigned-offline" ? { policy } : {}),
    base_source: base.source,
    layers: new Map(converted.map((x) => [x.layer.id, x.record])),
    formations,
    packages,
  };
  return { lock: viewLock(lock, records), dropped };
}

/** lock.max_bytes: an old lockfile embeds every layer's manifest envelope, so it is read with the lockfile bound. */
const MAX_OLD_LOCK_BYTES = 16 * 1024 * 1024;

export function convertV1LockfileFile(path: string): Converted {
  return convertV1Lockfile(decodeUtf8(readFileBounded(path, MAX_OLD_LOCK_BYTES, "lock.max_bytes", { limitHint: FIXED_LIMIT_HINT }), path), path);
}
