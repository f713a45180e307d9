/**
 * Reading declared values out of a devcontainer.json model: the shared
 * context of one ingest (issue collector, substitution context, limits) and
 * the string reader every normalizer uses, so that the substitution rules and
 * the "never echo a value" rule are applied in one place.
 */
import type { Checker, JsonModel } from "../core/index.ts";
import { substitute } from "./substitution.ts";

/** Named limits of one ingest; each error names the limit it hit. */
export interface ManifestLimits {
  /** Bytes of the devcontainer.json or manifest file read from disk. */
  readonly max_input_bytes: number;
  readonly max_features: number;
  readonly max_feature_options: number;
  readonly max_mounts: number;
  readonly max_env_entries: number;
  /** Characters in any single declared string (names, values, paths). */
  readonly max_string_length: number;
  /** Nesting of objects and lists, checked before the recursive parser runs. */
  readonly max_depth: number;
}

export const DEFAULT_MANIFEST_LIMITS: ManifestLimits = {
  max_input_bytes: 1024 * 1024,
  max_features: 256,
  max_feature_options: 256,
  max_mounts: 256,
  max_env_entries: 4096,
  max_string_length: 65536,
  max_depth: 64,
};

export interface IngestContext {
  readonly checker: Checker;
  readonly limits: ManifestLimits;
  /** The declared workspaceFolder, when it is present and valid. */
  readonly workspaceFolder: string | undefined;
  /**
   * The resources (`registry/path`, lowercased) of every feature of the
   * dependsOn closure, when a lockfile supplied it; undefined when the
   * closure is not known (offline, no lockfile).
   */
  readonly closureResources?: ReadonlySet<string>;
}

export interface TextOptions {
  /** `${containerEnv:…}` is allowed (remoteEnv only). */
  containerEnv?: boolean;
  nonEmpty?: boolean;
  /** An excluded (cosmetic) field: limits apply, substitutions are not read (they never reach an address). */
  cosmetic?: boolean;
  /** What the string is, for messages ("value", "name", "feature id"). */
  what?: string;
}

/**
 * Reads a declared string: type, length limit, no NUL, substitution rules.
 * Returns the value with allowed substitutions resolved, or undefined after
 * recording an issue. Messages name the variable or the rule, never the value.
 */
export function readText(ctx: IngestContext, v: JsonModel | undefined, path: string, opts: TextOptions = {}): string | undefined {
  const c = ctx.checker;
  const what = opts.what ?? "value";
  if (typeof v !== "string") {
    c.add(path, `${what} must be a string`, "MODEL_TYPE");
    return undefined;
  }
  if (v.length > ctx.limits.max_string_length) {
    c.add(path, `${what} exceeds limit max_string_length (${ctx.limits.max_string_length})`, "LIMIT_EXCEEDED");
    return undefined;
  }
  if (opts.nonEmpty && v.length === 0) {
    c.add(path, `${what} must not be empty`, "MODEL_VALUE");
    return undefined;
  }
  if (v.includes("\u0000")) {
    c.add(path, `${what} holds a NUL character`, "MODEL_VALUE");
    return undefined;
  }
  if (opts.cosmetic === true) return v;
  const r = substitute(v, { workspaceFolder: ctx.workspaceFolder, containerEnvAllowed: opts.containerEnv === true });
  if (!r.ok) {
    c.add(path, `\${${r.variable}} is refused: it ${r.why}`, "MANIFEST_REFUSED");
    return undefined;
  }
  return r.value;
}

/** Checks a count against a named limit, recording LIMIT_EXCEEDED. */
export function withinLimit(ctx: IngestContext, name: keyof ManifestLimits, count: number, path: string): boolean {
  const max = ctx.limits[name];
  if (count <= max) return true;
  ctx.checker.add(path, `${count} entries exceed limit ${name} (${max})`, "LIMIT_EXCEEDED");
  return false;
}
