/**
 * Field-level differences between two manifests (standard core and cairn
 * extension). Keyed lists are compared by key, not position: features by id,
 * mounts by target, so a difference names the feature or mount that changed.
 * Core fields are named `/image`, `/mounts/<target>/kind`, …; extension fields
 * `/extension/<field>/…`. Environment values are never reported (they may be
 * secrets): a difference under containerEnv or remoteEnv names the variable
 * and says that its value differs.
 */
import { canonicalize, compareBytes, escapePointer, type JsonValue } from "../core/index.ts";
import type { EnvCore, EnvExtension } from "./core.ts";

export type ChangeKind = "added" | "removed" | "changed";

export interface CoreDifference {
  /** JSON pointer into the keyed view (features by id, mounts by target). */
  path: string;
  change: ChangeKind;
  /** The values on each side; omitted for environment values. */
  a?: JsonValue;
  b?: JsonValue;
}

const SECRET_PREFIXES = ["/containerEnv/", "/remoteEnv/", "/extension/remoteEnv/"];

type Keyed = { [k: string]: JsonValue };

/** The core with keyed lists turned into objects, so differences have stable names. */
function keyedView(core: EnvCore): Keyed {
  const view = JSON.parse(JSON.stringify(core)) as Keyed;
  const features: Keyed = {};
  for (const f of core.features) features[f.id] = { options: f.options };
  view.features = features;
  const mounts: Keyed = {};
  for (const m of core.mounts) mounts[m.target] = { ...m };
  view.mounts = mounts;
  return view;
}

function isObject(v: JsonValue | undefined): v is Keyed {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function walk(a: JsonValue | undefined, b: JsonValue | undefined, path: string, out: CoreDifference[]): void {
  if (a !== undefined && b !== undefined && canonicalize(a) === canonicalize(b)) return;
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort(compareBytes);
    for (const k of keys) walk(a[k], b[k], `${path}/${escapePointer(k)}`, out);
    return;
  }
  const change: ChangeKind = a === undefined ? "added" : b === undefined ? "removed" : "changed";
  const secret = SECRET_PREFIXES.some((p) => path.startsWith(p));
  const d: CoreDifference = { path, change };
  if (!secret && a !== undefined) d.a = a;
  if (!secret && b !== undefined) d.b = b;
  out.push(d);
}

/** Every field-level difference from core `a` to core `b`; empty when the addresses are equal. */
export function diffCores(a: EnvCore, b: EnvCore): CoreDifference[] {
  const out: CoreDifference[] = [];
  walk(keyedView(a), keyedView(b), "", out);
  return out;
}

/** Differences of the cores, then of the extensions (under `/extension`). */
export function diffManifestParts(a: { core: EnvCore; extension: EnvExtension }, b: { core: EnvCore; extension: EnvExtension }): CoreDifference[] {
  const out = diffCores(a.core, b.core);
  walk(JSON.parse(JSON.stringify(a.extension)) as Keyed, JSON.parse(JSON.stringify(b.extension)) as Keyed, "/extension", out);
  return out;
}
