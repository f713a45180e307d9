/**
 * The profile: a short YAML file where a user declares the software they need
 * on which base. Its fields and their types are Strata's `Profile` (seed
 * 002_bbb23a1942433a8c.txt; profile-forms.ts holds the typed parts). Parsed
 * strictly (unknown fields, null list entries, duplicate keys, aliases are
 * errors, each with its JSON pointer) and written back, under the seed's field
 * names only, so that it reads back equal.
 *
 * `instance` and `storage` are recorded but cairn does not act on them (nor,
 * the seed says, does Strata's resolver); every output that mentions them says
 * so.
 */
import {
  sortedRecord,
  CairnError,
  Checker,
  isJsonObject,
  childPath,
  readYamlText,
  toYamlText,
  type Issue,
  type JsonModel,
  type JsonObject,
} from "../core/index.ts";
import { NAME_RULE, readRef, refToModel, REF_NAME, yamlNumberMessage, type SoftwareRef } from "./ref.ts";
import { isVersion, versionHint } from "./version.ts";
import { hostRequirementToModel, parseHostRequirement, type HostRequirement } from "./capability.ts";
import { ARCH_ALIASES, ARCHES, BASE_NAME, canonicalArch, type Arch } from "./platform.ts";
import {
  defaultsSize,
  defaultsToModel,
  instanceToModel,
  mutableLayerToModel,
  namedString,
  readDefaults,
  readInstance,
  readMutableLayer,
  readStorage,
  storageToModel,
  type InstanceConfig,
  type MutableLayer,
  type ProfileDefaults,
  type StorageMount,
} from "./profile-forms.ts";

export const PACKAGE_MANAGERS = ["pip", "conda", "cran"] as const;
export type PackageManager = (typeof PACKAGE_MANAGERS)[number];

export interface PackageRef {
  readonly name: string;
  readonly version?: string;
}

export interface PackageSet {
  readonly manager: PackageManager;
  readonly packages: readonly PackageRef[];
  /** The conda environment name (conda only). */
  readonly env?: string;
}

export interface RegistryRef {
  /** A local directory registry: a path (relative to the profile) or file:// URL. */
  readonly url: string;
  /**
   * The seed's trust modes: `keyfile://PATH` (an Ed25519 public key, the only
   * one cairn acts on), `strata-core` or `keyless` (validate; `resolve` refuses
   * them, since cairn verifies keyfiles offline only). Absent: nothing from
   * the registry is trusted.
   */
  readonly trust?: string;
}

/** The seed's RegistryRef.trust modes besides keyfile://PATH; read, refused by resolve (trust.ts). */
export const ONLINE_TRUST_MODES = ["strata-core", "keyless"] as const;

export interface Profile {
  readonly name: string;
  readonly description?: string;
  readonly version?: string;
  readonly base: { readonly os: string; readonly arch: Arch };
  readonly software: readonly SoftwareRef[];
  readonly registries: readonly RegistryRef[];
  readonly env: ReadonlyMap<string, string>;
  readonly on_ready: readonly string[];
  readonly defaults: ProfileDefaults;
  readonly packages: readonly PackageSet[];
  readonly mutable_layer: MutableLayer;
  readonly requires_host: readonly HostRequirement[];
  /** Recorded, not acted upon. */
  readonly instance?: InstanceConfig;
  /** Recorded, not acted upon. */
  readonly storage?: readonly StorageMount[];
}

export const PROFILE_FIELDS = [
  "name",
  "description",
  "version",
  "base",
  "software",
  "registries",
  "env",
  "on_ready",
  "defaults",
  "packages",
  "mutable_layer",
  "requires_host",
  "instance",
  "storage",
] as const;

/** The profile fields cairn records but does not act upon. */
export const NOT_ACTED_UPON = ["instance", "storage"] as const;

/** Which of the NOT_ACTED_UPON fields this profile sets (every output that mentions them says they are not acted upon). */
export function notActedUpon(p: Profile): string[] {
  return NOT_ACTED_UPON.filter((k) => p[k] !== undefined);
}

/** One line per registry whose trust mode (strata-core, keyless) validates but that `resolve` refuses. */
export function trustNotes(p: Profile): string[] {
  return p.registries.flatMap((r, i) =>
    r.trust !== undefined && (ONLINE_TRUST_MODES as readonly string[]).includes(r.trust)
      ? [`registries/${i}: trust ${r.trust} is read, but resolve refuses it: cairn verifies keyfiles (keyfile://PATH) offline only`]
      : [],
  );
}

/** The NOT_ACTED_UPON fields this profile sets, as plain models (what a lockfile records under not_acted_upon). */
export function notActedUponModel(p: Profile): Record<string, JsonModel> {
  const out: Record<string, JsonModel> = {};
  if (p.instance !== undefined) out.instance = instanceToModel(p.instance) as JsonModel;
  if (p.storage !== undefined) out.storage = storageToModel(p.storage) as JsonModel;
  return out;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PKG_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$/;
const PKG_RULE = "letters, digits, '.', '_', '+', '-'; at most 128, starting with a letter or digit";

function has(o: JsonObject, k: string): boolean {
  return Object.hasOwn(o, k);
}

function list<T>(c: Checker, o: JsonObject, key: string, path: string, read: (v: JsonModel, p: string) => T | undefined): T[] {
  if (!has(o, key)) return [];
  const p = childPath(path, key);
  const arr = c.array(o[key], p);
  const out: T[] = [];
  arr?.forEach((item, i) => {
    if (item === null) return; // reported by c.array with its index
    const r = read(item, childPath(p, i));
    if (r !== undefined) out.push(r);
  });
  return out;
}

function envMap(c: Checker, o: JsonObject, key: string, path: string): Map<string, string> {
  if (!has(o, key)) return new Map();
  const m = c.stringMap(o[key], childPath(path, key)) ?? new Map<string, string>();
  for (const k of m.keys()) if (!ENV_NAME.test(k)) c.add(childPath(childPath(path, key), k), `"${k}" is not a variable name`, "MODEL_VALUE");
  return m;
}

/**
 * One package set (`{manager, packages: [{name, version}], env}`), the single
 * rule for profiles and lockfiles alike: names match PKG_NAME, versions are
 * non-empty strings (a YAML number is refused), `env` is for conda only.
 */
export function readPackageSet(c: Checker, v: JsonModel, p: string): PackageSet | undefined {
  const o = c.object(v, p, ["manager", "packages", "env"]);
  if (o === undefined) return undefined;
  const manager = c.string(c.required(o, "manager", p), childPath(p, "manager"));
  if (manager !== undefined && !(PACKAGE_MANAGERS as readonly string[]).includes(manager)) {
    c.add(childPath(p, "manager"), `manager must be one of ${PACKAGE_MANAGERS.join(", ")}`, "MODEL_VALUE");
  }
  const packages = list(c, o, "packages", p, (item, ip) => {
    const po = c.object(item, ip, ["name", "version"]);
    if (po === undefined) return undefined;
    const name = namedString(c, c.required(po, "name", ip), childPath(ip, "name"), PKG_NAME, PKG_RULE);
    if (typeof po.version === "number") c.add(childPath(ip, "version"), yamlNumberMessage(po.version), "MODEL_TYPE");
    const version =
      has(po, "version") && typeof po.version !== "number" ? c.string(po.version, childPath(ip, "version"), { nonEmpty: true, max: 128 }) : undefined;
    return name === undefined ? undefined : { name, ...(version !== undefined ? { version } : {}) };
  });
  let env: string | undefined;
  if (has(o, "env")) {
    env = namedString(c, o.env, childPath(p, "env"), PKG_NAME, PKG_RULE);
    if (manager !== "conda") c.add(childPath(p, "env"), "env is for the conda manager only", "MODEL_VALUE");
  }
  if (manager === undefined || !(PACKAGE_MANAGERS as readonly string[]).includes(manager)) return undefined;
  return { manager: manager as PackageManager, packages, ...(env !== undefined ? { env } : {}) };
}

/**
 * Reads a profile model strictly; throws PROFILE_INVALID (or the single
 * issue's code) listing every issue, those the YAML reader found in the text
 * (`prior`) included.
 */
export function parseProfileModel(v: JsonModel, source = "profile", prior: readonly Issue[] = []): Profile {
  const c = new Checker("PROFILE_INVALID");
  c.adopt(prior);
  const o = c.object(v, "", PROFILE_FIELDS);
  if (o === undefined) c.done(source);
  const root = o!;
  const name = namedString(c, c.required(root, "name", ""), "/name", REF_NAME, NAME_RULE);
  const description = has(root, "description") ? c.string(root.description, "/description", { max: 4096 }) : undefined;
  if (typeof root.version === "number") c.add("/version", yamlNumberMessage(root.version), "MODEL_TYPE");
  const version = has(root, "version") && typeof root.version !== "number" ? c.string(root.version, "/version") : undefined;
  if (version !== undefined && !isVersion(version)) c.add("/version", `not a version (${versionHint(version)})`, "MODEL_VALUE");
  const bo = has(root, "base") ? c.object(root.base, "/base", ["os", "arch"]) : void c.required(root, "base", "");
  let base: Profile["base"] | undefined;
  if (bo !== undefined) {
    const os = namedString(c, c.required(bo, "os", "/base"), "/base/os", BASE_NAME, "an os-release ID and major version: debian12, al2023, rocky9, ubuntu24");
    const archText = has(bo, "arch") ? c.string(bo.arch, "/base/arch") : "x86_64";
    // Strata's GOARCH spellings (arm64, amd64) are read as cairn's; only the canonical name is written back.
    const arch = archText === undefined ? undefined : canonicalArch(archText);
    if (archText !== undefined && arch === undefined)
      c.add("/base/arch", `arch must be one of ${ARCHES.join(", ")} (or ${Object.keys(ARCH_ALIASES).join(", ")}, Strata's spellings)`, "MODEL_VALUE");
    if (os !== undefined && arch !== undefined) base = { os, arch: arch as Arch };
  }
  const software = list(c, root, "software", "", (item, p) => readRef(c, item, p));
  const registries = list(c, root, "registries", "", (item, p) => {
    if (typeof item === "string") {
      // Refused form: a bare string names no trust; say which form to write.
      c.add(p, `a registry is a mapping: write {url: ${JSON.stringify(item.slice(0, 60))}, trust: keyfile://PATH}`, "MODEL_TYPE");
      return undefined;
    }
    const ro = c.object(item, p, ["url", "trust"]);
    if (ro === undefined) return undefined;
    const url = c.string(c.required(ro, "url", p), childPath(p, "url"), { nonEmpty: true, max: 4096 });
    const trust = has(ro, "trust") ? c.string(ro.trust, childPath(p, "trust"), { nonEmpty: true, max: 4096 }) : undefined;
    if (trust !== undefined && !trust.startsWith("keyfile://") && !(ONLINE_TRUST_MODES as readonly string[]).includes(trust)) {
      c.add(
        childPath(p, "trust"),
        `trust ${JSON.stringify(trust.slice(0, 80))} is not a trust mode: write keyfile://PATH, strata-core or keyless`,
        "MODEL_VALUE",
      );
    } else if (trust === "keyfile://") c.add(childPath(p, "trust"), "trust keyfile:// names no key file: write keyfile://PATH", "MODEL_VALUE");
    return url === undefined ? undefined : { url, ...(trust !== undefined ? { trust } : {}) };
  });
  const env = envMap(c, root, "env", "");
  const on_ready = list(c, root, "on_ready", "", (item, p) => c.string(item, p, { nonEmpty: true, max: 65536 }));
  const defaults = has(root, "defaults") ? readDefaults(c, root.defaults, "/defaults") : [];
  if (has(root, "packages") && isJsonObject(root.packages)) {
    // Refused form: a mapping keyed by manager. cairn's list form carries each set's options (conda env) beside its packages.
    const managers = Object.keys(root.packages).slice(0, 3).join(", ");
    c.add(
      "/packages",
      `packages is a list of sets: write [{manager: ${managers.split(", ")[0] || "pip"}, packages: [{name: NAME, version: "V"}]}] (one entry per manager: ${managers})`,
      "MODEL_TYPE",
    );
  }
  const packages = isJsonObject(root.packages) ? [] : list(c, root, "packages", "", (item, p) => readPackageSet(c, item, p));
  let mutable_layer: MutableLayer | undefined = false;
  if (typeof root.mutable_layer === "boolean") {
    // cairn's earlier switch; false (no layer) is written by leaving the field out, as the seed's omitempty does.
    c.add(
      "/mutable_layer",
      `mutable_layer: ${root.mutable_layer} is cairn's earlier form and is not read: write the seed's MutableLayerSpec {name: NAME, version: "V", size_gb: 20, volume_type: gp3}${root.mutable_layer ? "" : ", or leave mutable_layer out"}`,
      "MODEL_TYPE",
    );
  } else if (has(root, "mutable_layer")) mutable_layer = readMutableLayer(c, root.mutable_layer, "/mutable_layer");
  const requires_host = list(c, root, "requires_host", "", (item, p) => {
    try {
      return parseHostRequirement(item, p);
    } catch (e) {
      if (!(e instanceof CairnError)) throw e;
      c.add(e.path ?? p, e.message, e.code);
      return undefined;
    }
  });
  const instance = has(root, "instance") ? readInstance(c, root.instance, "/instance") : undefined;
  const storage = has(root, "storage") ? readStorage(c, root.storage, "/storage") : undefined;
  c.done(source, "fix every listed field; see docs/strata.md for the profile format");
  return {
    name: name!,
    ...(description !== undefined ? { description } : {}),
    ...(version !== undefined ? { version } : {}),
    base: base!,
    software,
    registries,
    env,
    on_ready,
    defaults,
    packages,
    mutable_layer: mutable_layer!,
    requires_host,
    ...(instance !== undefined ? { instance } : {}),
    ...(storage !== undefined ? { storage } : {}),
  };
}

/** Parses a profile's text: a problem of its YAML (a bare `-`, a duplicate key) hides none of the model's. */
export function parseProfileText(text: string, source = "profile"): Profile {
  const { model, issues } = readYamlText(text, source);
  return parseProfileModel(model, source, issues);
}

/** The profile as a plain model, in field order; reads back equal through `parseProfileModel`. */
export function profileToModel(p: Profile): Record<string, unknown> {
  const out: Record<string, unknown> = { name: p.name };
  if (p.description !== undefined) out.description = p.description;
  if (p.version !== undefined) out.version = p.version;
  // Strata's BaseRef spells aarch64 arm64 (the seed's two arches: x86_64, arm64); it reads back as aarch64.
  out.base = { os: p.base.os, arch: p.base.arch === "aarch64" ? "arm64" : p.base.arch };
  out.software = p.software.map(refToModel);
  if (p.registries.length > 0) out.registries = p.registries.map((r) => ({ ...r }));
  if (p.env.size > 0) out.env = sortedRecord(p.env);
  if (p.on_ready.length > 0) out.on_ready = [...p.on_ready];
  if (defaultsSize(p.defaults) > 0) out.defaults = defaultsToModel(p.defaults);
  if (p.packages.length > 0) {
    out.packages = p.packages.map((s) => ({
      manager: s.manager,
      packages: s.packages.map((x) => ({ ...x })),
      ...(s.env !== undefined ? { env: s.env } : {}),
    }));
  }
  if (p.mutable_layer !== false) out.mutable_layer = mutableLayerToModel(p.mutable_layer);
  if (p.requires_host.length > 0) out.requires_host = p.requires_host.map(hostRequirementToModel);
  if (p.instance !== undefined) out.instance = instanceToModel(p.instance);
  if (p.storage !== undefined) out.storage = storageToModel(p.storage);
  return out;
}

export function profileToYaml(p: Profile): string {
  return toYamlText(profileToModel(p));
}
