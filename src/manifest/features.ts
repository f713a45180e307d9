/**
 * Features and their install order, normalized for the manifest core.
 *
 * A feature becomes (id, options): the id lowercased and checked as an OCI
 * reference or https URL, the options an object of string or boolean values
 * (the only option types the feature spec has; JCS makes their key order
 * irrelevant). The legacy shorthand `"id": "1.2"` means `{ "version": "1.2" }`.
 * Two keys that normalize to the same id are a collision, refused: the
 * devcontainer CLI would silently keep one of them.
 */
import { childPath, compareBytes, isJsonObject, type JsonModel } from "../core/index.ts";
import { readText, withinLimit, type IngestContext } from "./declared.ts";
import { normalizeFeatureId } from "./reference.ts";

export type FeatureOptions = { [name: string]: string | boolean };

export interface FeatureEntry {
  id: string;
  options: FeatureOptions;
}

export interface NormalizedFeatures {
  features: FeatureEntry[];
  /** Ids without tag or digest, for matching overrideFeatureInstallOrder. */
  bases: Set<string>;
}

function readOptions(ctx: IngestContext, v: JsonModel | undefined, path: string): FeatureOptions | undefined {
  if (typeof v === "string") {
    const version = readText(ctx, v, path, { what: "feature version" });
    return version === undefined ? undefined : { version };
  }
  if (!isJsonObject(v)) {
    ctx.checker.add(path, "feature options must be an object (or a version string)", "MODEL_TYPE");
    return undefined;
  }
  const names = Object.keys(v).sort(compareBytes);
  if (!withinLimit(ctx, "max_feature_options", names.length, path)) return undefined;
  const out: FeatureOptions = {};
  let ok = true;
  for (const name of names) {
    const p = childPath(path, name);
    const value = v[name];
    if (name.length === 0) {
      ctx.checker.add(p, "option name must not be empty", "MODEL_VALUE");
      ok = false;
    } else if (typeof value === "boolean") {
      out[name] = value;
    } else if (typeof value === "string") {
      const s = readText(ctx, value, p, { what: "option value" });
      if (s === undefined) ok = false;
      else out[name] = s;
    } else {
      ctx.checker.add(p, "option value must be a string or a boolean (quote numbers)", "MODEL_TYPE");
      ok = false;
    }
  }
  return ok ? out : undefined;
}

export function normalizeFeatures(ctx: IngestContext, v: JsonModel | undefined, path: string): NormalizedFeatures | undefined {
  if (!isJsonObject(v)) {
    ctx.checker.add(path, "features must be an object of feature id to options", "MODEL_TYPE");
    return undefined;
  }
  const keys = Object.keys(v);
  if (!withinLimit(ctx, "max_features", keys.length, path)) return undefined;
  const byId = new Map<string, string>();
  const features: FeatureEntry[] = [];
  const bases = new Set<string>();
  let ok = true;
  for (const key of keys) {
    const p = childPath(path, key);
    const rawId = readText(ctx, key, p, { what: "feature id", nonEmpty: true });
    const norm = rawId === undefined ? undefined : normalizeFeatureId(rawId);
    if (norm !== undefined && !norm.ok) ctx.checker.add(p, `feature id ${norm.why}`, "MANIFEST_REFUSED");
    const options = readOptions(ctx, v[key], p);
    if (norm === undefined || !norm.ok || options === undefined) {
      ok = false;
      continue;
    }
    const first = byId.get(norm.id);
    if (first !== undefined) {
      ctx.checker.add(p, `feature id collides with ${first} after normalization (ids are case-insensitive)`, "MANIFEST_COLLISION");
      ok = false;
      continue;
    }
    byId.set(norm.id, p);
    bases.add(norm.base);
    features.push({ id: norm.id, options });
  }
  features.sort((a, b) => compareBytes(a.id, b.id));
  return ok ? { features, bases } : undefined;
}

/**
 * Whether an override entry that names no declared feature may name one the
 * declared features pull in through `dependsOn`: with a lockfile the closure
 * is known and must hold it; without one (offline) it may whenever an OCI
 * feature is declared, since its dependencies are known only to its registry
 * (`cairn manifest show` and `pin` check the entry against the resolved
 * closure). With no OCI feature declared nothing can be pulled in.
 */
function mayBeInClosure(ctx: IngestContext, declared: NormalizedFeatures, base: string): boolean {
  if (ctx.closureResources !== undefined) return ctx.closureResources.has(base);
  return declared.features.some((f) => {
    const n = normalizeFeatureId(f.id);
    return n.ok && n.kind === "oci";
  });
}

/**
 * overrideFeatureInstallOrder: ids without version, lowercased, order kept.
 * A repeated entry, or one that names no declared feature and none the
 * closure may hold (mayBeInClosure), is refused: either would make the order
 * mean something other than what it says.
 */
export function normalizeInstallOrder(
  ctx: IngestContext,
  v: JsonModel | undefined,
  path: string,
  declared: NormalizedFeatures | undefined,
): string[] | undefined {
  if (!Array.isArray(v)) {
    ctx.checker.add(path, "overrideFeatureInstallOrder must be a list of feature ids", "MODEL_TYPE");
    return undefined;
  }
  if (!withinLimit(ctx, "max_features", v.length, path)) return undefined;
  const out: string[] = [];
  let ok = true;
  v.forEach((item, i) => {
    const p = childPath(path, i);
    const raw = readText(ctx, item, p, { what: "feature id", nonEmpty: true });
    const norm = raw === undefined ? undefined : normalizeFeatureId(raw);
    if (norm === undefined || !norm.ok) {
      if (norm !== undefined && !norm.ok) ctx.checker.add(p, `feature id ${norm.why}`, "MANIFEST_REFUSED");
      ok = false;
      return;
    }
    if (out.includes(norm.base)) {
      ctx.checker.add(p, "feature is listed twice in the install order", "MANIFEST_COLLISION");
      ok = false;
    } else if (declared !== undefined && !declared.bases.has(norm.base) && !mayBeInClosure(ctx, declared, norm.base)) {
      ctx.checker.add(
        p,
        ctx.closureResources === undefined ? "names no declared feature" : "names no feature of the declared features' dependsOn closure",
        "MODEL_VALUE",
      );
      ok = false;
    } else out.push(norm.base);
  });
  return ok ? out : undefined;
}
