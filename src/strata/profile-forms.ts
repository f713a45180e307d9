/**
 * The profile fields whose types are Strata's (seed 002_bbb23a1942433a8c.txt,
 * the `spec` package's `Profile`), each read strictly into one value and
 * written back in the seed's form, so a profile written by cairn reads back
 * equal and reads in Strata:
 * - `defaults`: `[]SoftwareRef`, the software Lmod loads at login, in order
 *   (`[{name: gcc, version: "14.2.0"}]` or the scalar `[gcc@14.2.0]`).
 * - `mutable_layer`: `MutableLayerSpec` `{name, version, size_gb, volume_type,
 *   abi}`; name and version are required (the layer `layer freeze` makes),
 *   `size_gb` defaults to 20 and `volume_type` to gp3, as the seed says.
 * - `instance`: `InstanceConfig`; `storage`: `[]StorageMount`. Typed and
 *   strict, recorded, not acted upon.
 * cairn's earlier forms (a settings mapping or Lmod module list for
 * `defaults`, `true`/`false` or `{size}` for `mutable_layer`, free mappings
 * for `instance` and `storage`) are refused with a message naming the seed's
 * form. The model does no I/O.
 */
import { type Checker, childPath, isJsonObject, type JsonModel } from "../core/index.ts";
import { NAME_RULE, readRef, refToModel, REF_NAME, type SoftwareRef } from "./ref.ts";
import { isVersion, versionHint } from "./version.ts";

/** Defaults: software refs Lmod loads at login (order kept: Lmod loads modules in order). */
export type ProfileDefaults = readonly SoftwareRef[];

export interface MutableLayerSpec {
  /** The name of the layer `layer freeze` makes from the upper directory. */
  readonly name: string;
  readonly version: string;
  /** The volume size in GiB (the seed's default, 20, when absent or 0). */
  readonly size_gb: number;
  /** The volume type (the seed's default, gp3, when absent). */
  readonly volume_type: string;
  /** The C runtime ABI of the layer it becomes; absent means the base's. */
  readonly abi?: string;
}

/** `false`: no mutable layer (the profile has none). */
export type MutableLayer = false | MutableLayerSpec;

export const MUTABLE_LAYER_FIELDS = ["name", "version", "size_gb", "volume_type", "abi"] as const;
/** The seed's defaults for an absent (or zero) size and an absent volume type. */
export const MUTABLE_LAYER_DEFAULT_SIZE_GB = 20;
export const MUTABLE_LAYER_DEFAULT_VOLUME_TYPE = "gp3";
/** mutable_layer.max_size_gb: 65536 GiB (64 TiB); a larger writable layer is a typo, not a plan. */
export const MAX_MUTABLE_LAYER_SIZE_GB = 65536;
const VOLUME_TYPE = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** An ABI name: cairn's (`gnu`, `musl`, `none`) or Strata's (`linux-gnu-2.34`). */
const ABI_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** An Lmod module name: `name` or `name/version` (slash-separated path segments). */
export const MODULE_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]*(\/[A-Za-z0-9][A-Za-z0-9._+-]*)*$/;

/**
 * A string matching `re`, refused with `rule` in words (a message never shows
 * the pattern itself). `undefined` in: the field is absent and was reported.
 */
export function namedString(c: Checker, v: JsonModel | undefined, path: string, re: RegExp, rule: string): string | undefined {
  if (v === undefined) return undefined;
  const s = c.string(v, path);
  if (s === undefined) return undefined;
  if (!re.test(s)) {
    const shown = JSON.stringify(s);
    c.add(path, `${shown.length > 80 ? `${shown.slice(0, 77)}..."` : shown} is not valid: ${rule}`, "MODEL_VALUE");
    return undefined;
  }
  return s;
}

const SEED_DEFAULTS = 'a list of software refs, [{name: gcc, version: "14.2.0"}] or [gcc@14.2.0]';
const SEED_MUTABLE = '{name: NAME, version: "V", size_gb: 20, volume_type: gp3}';

export function readDefaults(c: Checker, v: JsonModel | undefined, path: string): ProfileDefaults {
  if (!Array.isArray(v)) {
    const was = isJsonObject(v) ? "a settings mapping is cairn's earlier form and is not read: " : "";
    c.add(path, `defaults is ${was}write ${SEED_DEFAULTS} (the seed's Profile.defaults)`, "MODEL_TYPE");
    return [];
  }
  const out: SoftwareRef[] = [];
  v.forEach((item, i) => {
    const p = childPath(path, i);
    if (item === null) {
      c.add(p, "null entry in defaults", "MODEL_TYPE");
      return;
    }
    // cairn's earlier Lmod module form, gcc/12.2: say which ref it would be.
    if (typeof item === "string" && item.includes("/") && MODULE_NAME.test(item)) {
      const slash = item.indexOf("/");
      c.add(
        p,
        `defaults entry ${JSON.stringify(item)} is an Lmod module name: write the software ref ${item.slice(0, slash)}@${item.slice(slash + 1)}`,
        "MODEL_VALUE",
      );
      return;
    }
    const r = readRef(c, item, p);
    if (r !== undefined) out.push(r);
  });
  return out;
}

export function defaultsToModel(d: ProfileDefaults): (string | Record<string, string>)[] {
  return d.map(refToModel);
}

export function defaultsSize(d: ProfileDefaults): number {
  return d.length;
}

/**
 * Reads a MutableLayerSpec. `false` reads as no mutable layer (the marker a
 * cairn lockfile writes); `true` and cairn's earlier `{size}` spec are refused
 * naming the seed's form.
 */
export function readMutableLayer(c: Checker, v: JsonModel | undefined, path: string): MutableLayer | undefined {
  if (v === false) return false;
  if (!isJsonObject(v)) {
    const was = v === true ? "true is cairn's earlier form and is not read: " : "";
    c.add(path, `mutable_layer is ${was}write the seed's MutableLayerSpec ${SEED_MUTABLE}`, "MODEL_TYPE");
    return undefined;
  }
  if (Object.hasOwn(v, "size")) {
    c.add(
      childPath(path, "size"),
      "size is cairn's earlier field and is not read: write size_gb, a whole number of GiB (the seed's MutableLayerSpec)",
      "MODEL_UNKNOWN_FIELD",
    );
    return undefined;
  }
  const o = c.object(v, path, MUTABLE_LAYER_FIELDS);
  if (o === undefined) return undefined;
  let ok = true;
  const name = namedString(c, c.required(o, "name", path), childPath(path, "name"), REF_NAME, NAME_RULE);
  const versionRaw = c.required(o, "version", path);
  // (absent: reported by required)
  let version: string | undefined;
  if (typeof versionRaw === "number") {
    c.add(childPath(path, "version"), `YAML read this version as the number ${versionRaw}: write it in quotes (version: "1.0")`, "MODEL_TYPE");
  } else if (versionRaw !== undefined) {
    version = c.string(versionRaw, childPath(path, "version"));
    if (version !== undefined && !isVersion(version)) {
      c.add(childPath(path, "version"), `not a version (${versionHint(version)})`, "MODEL_VALUE");
      version = undefined;
    }
  }
  let size_gb = MUTABLE_LAYER_DEFAULT_SIZE_GB;
  if (Object.hasOwn(o, "size_gb")) {
    const s = o.size_gb;
    if (typeof s !== "number" || !Number.isSafeInteger(s) || s < 0) {
      c.add(childPath(path, "size_gb"), "size_gb is a whole number of GiB (0 or absent: the default, 20)", "MODEL_TYPE");
      ok = false;
    } else if (s > MAX_MUTABLE_LAYER_SIZE_GB) {
      c.add(childPath(path, "size_gb"), `size_gb ${s} is more than mutable_layer.max_size_gb (${MAX_MUTABLE_LAYER_SIZE_GB})`, "LIMIT_EXCEEDED");
      ok = false;
    } else if (s > 0) size_gb = s;
  }
  const volume_type = Object.hasOwn(o, "volume_type")
    ? namedString(c, o.volume_type, childPath(path, "volume_type"), VOLUME_TYPE, "lowercase letters, digits, '.', '_', '-' (gp3, io2)")
    : MUTABLE_LAYER_DEFAULT_VOLUME_TYPE;
  const abi = Object.hasOwn(o, "abi")
    ? namedString(c, o.abi, childPath(path, "abi"), ABI_NAME, "lowercase letters, digits, '.', '_', '-' (linux-gnu-2.34, gnu, musl)")
    : undefined;
  if (!ok || name === undefined || version === undefined || volume_type === undefined || (Object.hasOwn(o, "abi") && abi === undefined)) return undefined;
  return { name, version, size_gb, volume_type, ...(abi !== undefined ? { abi } : {}) };
}

export function mutableLayerToModel(m: MutableLayer): false | Record<string, string | number> {
  if (m === false) return false;
  return { name: m.name, version: m.version, size_gb: m.size_gb, volume_type: m.volume_type, ...(m.abi !== undefined ? { abi: m.abi } : {}) };
}

/**
 * The libc family an ABI name says (`gnu` for cairn's `gnu` and Strata's
 * `linux-gnu-2.34`), or undefined when it names none cairn knows.
 */
export function abiFamily(abi: string): "gnu" | "musl" | "none" | undefined {
  if (abi === "gnu" || abi === "musl" || abi === "none") return abi;
  const m = /^linux-(gnu|musl)(-[0-9][0-9.]*)?$/.exec(abi);
  return m === null ? undefined : (m[1] as "gnu" | "musl");
}

/** The seed's InstanceConfig: the EC2 instance Strata would launch. Recorded, not acted upon. */
export interface InstanceConfig {
  readonly type?: string;
  readonly spot?: true;
  readonly spot_fallback?: string;
  readonly placement?: string;
  readonly region?: string;
}

export const INSTANCE_FIELDS = ["type", "spot", "spot_fallback", "placement", "region"] as const;

/** The seed's StorageMount. Recorded, not acted upon. */
export interface StorageMount {
  readonly type: string;
  readonly mount: string;
  readonly bucket?: string;
  readonly id?: string;
  readonly read_only?: true;
}

export const STORAGE_FIELDS = ["type", "mount", "bucket", "id", "read_only"] as const;
export const STORAGE_TYPES = ["s3", "efs", "ebs", "instance_store"] as const;

function optString(c: Checker, o: Record<string, JsonModel>, k: string, path: string): string | undefined {
  return Object.hasOwn(o, k) ? c.string(o[k], childPath(path, k), { nonEmpty: true, max: 256 }) : undefined;
}

function optTrue(c: Checker, o: Record<string, JsonModel>, k: string, path: string): true | undefined {
  if (!Object.hasOwn(o, k)) return undefined;
  if (typeof o[k] !== "boolean") {
    c.add(childPath(path, k), `${k} is true or false`, "MODEL_TYPE");
    return undefined;
  }
  return o[k] === true ? true : undefined;
}

/** InstanceConfig; an empty one (all fields zero) is no instance, as the seed's omitempty writes it. */
export function readInstance(c: Checker, v: JsonModel | undefined, path: string): InstanceConfig | undefined {
  const o = c.object(v, path, INSTANCE_FIELDS);
  if (o === undefined) return undefined;
  const out: Record<string, string | true> = {};
  for (const k of INSTANCE_FIELDS) {
    const val = k === "spot" ? optTrue(c, o, k, path) : optString(c, o, k, path);
    if (val !== undefined) out[k] = val;
  }
  return Object.keys(out).length > 0 ? (out as InstanceConfig) : undefined;
}

/** `[]StorageMount`: each entry's type one of the seed's four, mount a path. */
export function readStorage(c: Checker, v: JsonModel | undefined, path: string): readonly StorageMount[] | undefined {
  if (!Array.isArray(v)) {
    c.add(path, "storage is a list of mounts: write [{type: efs, mount: /shared, id: fs-…}] (the seed's StorageMount)", "MODEL_TYPE");
    return undefined;
  }
  const out: StorageMount[] = [];
  v.forEach((item, i) => {
    const p = childPath(path, i);
    const o = c.object(item, p, STORAGE_FIELDS);
    if (o === undefined) return;
    const typeRaw = c.required(o, "type", p);
    const type = typeRaw === undefined ? undefined : c.string(typeRaw, childPath(p, "type"));
    if (type !== undefined && !(STORAGE_TYPES as readonly string[]).includes(type))
      c.add(childPath(p, "type"), `type must be one of ${STORAGE_TYPES.join(", ")}`, "MODEL_VALUE");
    const mountRaw = c.required(o, "mount", p);
    const mount = mountRaw === undefined ? undefined : c.string(mountRaw, childPath(p, "mount"), { nonEmpty: true, max: 4096 });
    const bucket = optString(c, o, "bucket", p);
    const id = optString(c, o, "id", p);
    const read_only = optTrue(c, o, "read_only", p);
    if (type === undefined || mount === undefined || !(STORAGE_TYPES as readonly string[]).includes(type)) return;
    out.push({
      type,
      mount,
      ...(bucket !== undefined ? { bucket } : {}),
      ...(id !== undefined ? { id } : {}),
      ...(read_only !== undefined ? { read_only } : {}),
    });
  });
  return out.length > 0 ? out : undefined;
}

export function instanceToModel(i: InstanceConfig): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {};
  for (const k of INSTANCE_FIELDS) if (i[k] !== undefined) out[k] = i[k];
  return out;
}

export function storageToModel(s: readonly StorageMount[]): Record<string, string | boolean>[] {
  return s.map((m) => {
    const out: Record<string, string | boolean> = {};
    for (const k of STORAGE_FIELDS) if (m[k] !== undefined) out[k] = m[k];
    return out;
  });
}
