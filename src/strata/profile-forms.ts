/**
 * The profile fields that Strata writes in more than one form, each read into
 * one value and written back in one form, so a profile written by cairn reads
 * back equal:
 * - `defaults`: cairn's settings mapping (`{shell: bash}`), or Strata's Lmod
 *   preload list (`[gcc/12.2, openmpi]`: the modules a login loads, in order).
 * - `mutable_layer`: a boolean (a writable upper layer, size left to the
 *   runtime), or Strata's spec `{size, volume_type, abi}`. The spec is checked
 *   here (a size with a unit, within mutable_layer.max_bytes; a volume type
 *   name; an ABI cairn knows) and its ABI against the base in the resolver.
 * - `storage`: a mapping, or Strata's list of mappings; recorded, not acted upon.
 * The model does no I/O.
 */
import { type Checker, childPath, isJsonObject, sortedRecord, type JsonModel } from "../core/index.ts";

/** Defaults: cairn's settings map, or Strata's Lmod preload list (order kept: Lmod loads modules in order). */
export type ProfileDefaults = ReadonlyMap<string, string> | readonly string[];

export interface MutableLayerSpec {
  /** As written (`20GiB`, `512M`, `1073741824`): recorded text, checked by `parseByteSize`. */
  readonly size: string;
  readonly volume_type?: string;
  readonly abi?: "gnu" | "musl" | "none";
}

export type MutableLayer = boolean | MutableLayerSpec;

export const MUTABLE_LAYER_FIELDS = ["size", "volume_type", "abi"] as const;
const MUTABLE_ABIS = ["gnu", "musl", "none"] as const;
/** mutable_layer.max_bytes: 64 TiB; a larger writable layer is a typo, not a plan. */
export const MAX_MUTABLE_LAYER_BYTES = 64 * 1024 ** 4;
const SIZE = /^([1-9][0-9]{0,15})\s?(|B|K|KB|KiB|M|MB|MiB|G|GB|GiB|T|TB|TiB)$/;
const SIZE_UNITS: Readonly<Record<string, number>> = {
  "": 1,
  B: 1,
  K: 1024,
  KiB: 1024,
  M: 1024 ** 2,
  MiB: 1024 ** 2,
  G: 1024 ** 3,
  GiB: 1024 ** 3,
  T: 1024 ** 4,
  TiB: 1024 ** 4,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  TB: 1e12,
};
const VOLUME_TYPE = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** An Lmod module name: `name` or `name/version` (slash-separated path segments). */
export const MODULE_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]*(\/[A-Za-z0-9][A-Za-z0-9._+-]*)*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `20GiB` → bytes; undefined when it is not a size. */
export function parseByteSize(s: string): number | undefined {
  const m = SIZE.exec(s);
  if (m === null) return undefined;
  return Number(m[1]) * SIZE_UNITS[m[2]!]!;
}

export function readDefaults(c: Checker, v: JsonModel | undefined, path: string): ProfileDefaults {
  if (Array.isArray(v)) {
    const modules = c.stringArray(v, path) ?? [];
    const seen = new Set<string>();
    modules.forEach((m, i) => {
      if (!MODULE_NAME.test(m)) c.add(childPath(path, i), `"${m.slice(0, 60)}" is not an Lmod module name (name or name/version)`, "MODEL_VALUE");
      else if (seen.has(m)) c.add(childPath(path, i), `module ${m} is listed twice`, "MODEL_VALUE");
      seen.add(m);
    });
    return modules;
  }
  if (!isJsonObject(v)) {
    c.add(path, "defaults is a mapping of settings ({shell: bash}) or a list of Lmod modules to preload ([gcc/12, openmpi])", "MODEL_TYPE");
    return new Map();
  }
  const m = c.stringMap(v, path) ?? new Map<string, string>();
  for (const k of m.keys()) if (!ENV_NAME.test(k)) c.add(childPath(path, k), `"${k}" is not a setting name`, "MODEL_VALUE");
  return m;
}

export function readMutableLayer(c: Checker, v: JsonModel | undefined, path: string): MutableLayer | undefined {
  if (typeof v === "boolean") return v;
  if (!isJsonObject(v)) {
    c.add(path, "mutable_layer is true, false, or a spec {size: 20GiB, volume_type: NAME, abi: gnu}", "MODEL_TYPE");
    return undefined;
  }
  const o = c.object(v, path, MUTABLE_LAYER_FIELDS);
  if (o === undefined) return undefined;
  const sizeRaw = c.required(o, "size", path);
  let size: string | undefined;
  if (typeof sizeRaw === "number" && Number.isSafeInteger(sizeRaw) && sizeRaw > 0) size = String(sizeRaw);
  else if (sizeRaw !== undefined) size = c.string(sizeRaw, childPath(path, "size"));
  if (size !== undefined) {
    const bytes = parseByteSize(size);
    if (bytes === undefined)
      c.add(childPath(path, "size"), `"${size.slice(0, 40)}" is not a size: write a whole number and a unit, e.g. 20GiB or 512M`, "MODEL_VALUE");
    else if (bytes > MAX_MUTABLE_LAYER_BYTES) c.add(childPath(path, "size"), `${size} is more than mutable_layer.max_bytes (64 TiB)`, "LIMIT_EXCEEDED");
  }
  const volume_type = Object.hasOwn(o, "volume_type") ? c.string(o.volume_type, childPath(path, "volume_type"), { pattern: VOLUME_TYPE }) : undefined;
  const abi = Object.hasOwn(o, "abi") ? c.string(o.abi, childPath(path, "abi")) : undefined;
  if (abi !== undefined && !(MUTABLE_ABIS as readonly string[]).includes(abi))
    c.add(childPath(path, "abi"), `abi must be one of ${MUTABLE_ABIS.join(", ")}`, "MODEL_VALUE");
  if (size === undefined || parseByteSize(size) === undefined) return undefined;
  return {
    size,
    ...(volume_type !== undefined ? { volume_type } : {}),
    ...(abi !== undefined && (MUTABLE_ABIS as readonly string[]).includes(abi) ? { abi: abi as (typeof MUTABLE_ABIS)[number] } : {}),
  };
}

export function mutableLayerToModel(m: MutableLayer): boolean | Record<string, string> {
  if (typeof m === "boolean") return m;
  return { size: m.size, ...(m.volume_type !== undefined ? { volume_type: m.volume_type } : {}), ...(m.abi !== undefined ? { abi: m.abi } : {}) };
}

export function defaultsToModel(d: ProfileDefaults): Record<string, string> | string[] {
  if (Array.isArray(d)) return [...(d as readonly string[])];
  return sortedRecord(d as ReadonlyMap<string, string>);
}

export function defaultsSize(d: ProfileDefaults): number {
  return Array.isArray(d) ? d.length : (d as ReadonlyMap<string, string>).size;
}

/** Storage as Strata writes it (a list of mappings) or as a mapping; recorded, not acted upon. */
export function readStorage(c: Checker, v: JsonModel | undefined, path: string): JsonModel | undefined {
  if (Array.isArray(v)) {
    v.forEach((item, i) => void c.object(item, childPath(path, i)));
    return v;
  }
  return c.object(v, path);
}
