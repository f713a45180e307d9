/**
 * devcontainer.json model → manifest core. Driven by FIELD_SCOPE: every
 * top-level key is looked up there; identity fields go through the
 * normalizer below that has the same name, excluded fields are checked and
 * dropped, refused and unknown fields are issues. All issues are collected
 * and refused at once, so a user fixes every field in one pass.
 *
 * The core is a plain JSON model (strings, booleans, null, arrays, objects;
 * no numbers at all), so its JCS bytes are well defined.
 */
import { posix } from "node:path";
import { CairnError, Checker, childPath, compareBytes, isJsonObject, type JsonModel, type JsonObject, type Sha256Digest } from "../core/index.ts";
import { DEFAULT_MANIFEST_LIMITS, readText, withinLimit, type IngestContext, type ManifestLimits } from "./declared.ts";
import { normalizeFeatures, normalizeInstallOrder, type FeatureEntry, type NormalizedFeatures } from "./features.ts";
import { normalizeMount, type MountKind, type NormalizedMount } from "./mounts.ts";
import { parseReference } from "./reference.ts";
import {
  EXTENSION_SCHEMA,
  FIELD_SCOPE,
  MANIFEST_SCHEMA,
  scopeOf,
  type ExtensionField,
  type FieldScope,
  type IdentityField,
  type JsonKind,
  type NormalizedField,
} from "./scope.ts";
import { ownModel } from "./own.ts";
import { classifyVariable } from "./substitution.ts";

/** A mount in the standard's normal form: (source, target, kind). */
export interface StandardMount {
  source: string | null;
  target: string;
  kind: MountKind;
}

/**
 * The manifest core: exactly the standard's five fields in its normal form,
 * under its schema tag. Its JCS bytes are addressed; nothing else is in it.
 */
export interface EnvCore {
  schema: typeof MANIFEST_SCHEMA;
  image: string;
  features: FeatureEntry[];
  containerEnv: { [name: string]: string };
  mounts: StandardMount[];
  /** null when absent (absence is not a value: the default differs by tool). */
  remoteUser: string | null;
}

/**
 * cairn's extension object: the execution-relevant fields the standard does
 * not name, with their own schema tag and address. It never changes the
 * standard's address.
 */
export interface EnvExtension {
  schema: typeof EXTENSION_SCHEMA;
  overrideFeatureInstallOrder: string[];
  remoteEnv: { [name: string]: string | null };
  /** Targets of the mounts in `core.mounts` declared read-only, sorted. */
  read_only_mounts: string[];
  workspaceMount?: NormalizedMount;
  workspaceFolder?: string;
  containerUser?: string;
  userEnvProbe?: "none" | "loginShell" | "loginInteractiveShell" | "interactiveShell";
  init?: boolean;
  overrideCommand?: boolean;
  updateRemoteUserUID?: boolean;
  /**
   * The resolved references (`registry/path@sha256:…`) of the features the
   * dependsOn closure adds to the declared ones, sorted by bytes, when a
   * lockfile supplied the closure (devcontainer-lock.ts); omitted otherwise.
   * From the lock, not the declaration: pinned counts them.
   */
  feature_closure?: string[];
  /**
   * Local feature id → `cairn.fs/1` digest of its directory, when ingested with
   * `--features-dir` (local-features.ts); omitted otherwise. Not from the
   * declaration: from the bytes the declaration names.
   */
  local_features?: { [id: string]: Sha256Digest };
}

/** Everything one ingest normalizes, before it is split into core and extension. */
interface Declared {
  image: string;
  features: FeatureEntry[];
  containerEnv: { [name: string]: string };
  mounts: NormalizedMount[];
  remoteUser?: string;
  overrideFeatureInstallOrder: string[];
  remoteEnv: { [name: string]: string | null };
  workspaceMount?: NormalizedMount;
  workspaceFolder?: string;
  containerUser?: string;
  userEnvProbe?: EnvExtension["userEnvProbe"];
  init?: boolean;
  overrideCommand?: boolean;
  updateRemoteUserUID?: boolean;
}

// Compile-time half of the scope rule: what an ingest normalizes is exactly
// the identity and extension fields of FIELD_SCOPE. The runtime half is
// tests/manifest/scope.test.ts.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const DECLARED_MATCHES_SCOPE: Same<keyof Declared, NormalizedField> = true;
const CORE_MATCHES_SCOPE: Same<Exclude<keyof EnvCore, "schema">, IdentityField> = true;
const EXTENSION_MATCHES_SCOPE: Same<Exclude<keyof EnvExtension, "schema" | "read_only_mounts" | "local_features" | "feature_closure">, ExtensionField> = true;
void DECLARED_MATCHES_SCOPE;
void CORE_MATCHES_SCOPE;
void EXTENSION_MATCHES_SCOPE;

export interface BuiltCore {
  core: EnvCore;
  extension: EnvExtension;
  /** Excluded fields that were present (names only), for display. */
  excluded: string[];
}

/** Fields whose absence and emptiness mean the same, and which the core always holds. */
const LIST_DEFAULTS = { features: [], overrideFeatureInstallOrder: [], containerEnv: {}, remoteEnv: {}, mounts: [] };

interface BuildState {
  ctx: IngestContext;
  root: JsonObject;
  core: Partial<Declared>;
  features: NormalizedFeatures | undefined;
}

type Normalizer = (s: BuildState, v: JsonModel, path: string) => void;

function envMap(s: BuildState, v: JsonModel, path: string, allowNull: boolean): { [name: string]: string | null } | undefined {
  const c = s.ctx.checker;
  if (!isJsonObject(v)) {
    c.add(path, "must be an object of variable name to value", "MODEL_TYPE");
    return undefined;
  }
  const names = Object.keys(v).sort(compareBytes);
  if (!withinLimit(s.ctx, "max_env_entries", names.length, path)) return undefined;
  const out: { [name: string]: string | null } = {};
  let ok = true;
  for (const name of names) {
    const p = childPath(path, name);
    if (name.length === 0 || name.includes("=")) {
      c.add(p, "variable name must be non-empty without '='", "MODEL_VALUE");
      ok = false;
      continue;
    }
    const literal = readText(s.ctx, name, p, { what: "variable name" });
    if (literal !== name) {
      // undefined: already reported; a different string: a substitution would rename the variable.
      if (literal !== undefined) c.add(p, "variable name must be literal (no substitutions)", "MANIFEST_REFUSED");
      ok = false;
      continue;
    }
    const value = v[name];
    if (value === null && allowNull) {
      out[name] = null;
      continue;
    }
    // The value is never echoed: readText names only the rule or the variable.
    const text = readText(s.ctx, value, p, { containerEnv: allowNull, what: "variable value" });
    if (text === undefined) ok = false;
    else out[name] = text;
  }
  return ok ? out : undefined;
}

function user(s: BuildState, v: JsonModel, path: string): string | undefined {
  const u = readText(s.ctx, v, path, { nonEmpty: true, what: "user" });
  if (u !== undefined && /[\s\u0000-\u001f]/.test(u)) {
    s.ctx.checker.add(path, "user must not contain whitespace or control characters", "MODEL_VALUE");
    return undefined;
  }
  return u;
}

function bool(s: BuildState, v: JsonModel, path: string): boolean | undefined {
  return s.ctx.checker.boolean(v, path);
}

const USER_ENV_PROBES = ["none", "loginShell", "loginInteractiveShell", "interactiveShell"] as const;

/** One normalizer per identity and extension field; the mapped type makes a missing one a compile error. */
const NORMALIZERS: { readonly [K in NormalizedField]: Normalizer } = {
  image(s, v, path) {
    const image = readText(s.ctx, v, path, { nonEmpty: true, what: "image" });
    if (image === undefined) return;
    const r = parseReference(image);
    if (!r.ok) s.ctx.checker.add(path, `image ${r.why}`, "MODEL_VALUE");
    else s.core.image = image;
  },
  features(s, v, path) {
    s.features = normalizeFeatures(s.ctx, v, path);
    if (s.features) s.core.features = s.features.features;
  },
  overrideFeatureInstallOrder(s, v, path) {
    // Absent features mean none are declared; invalid ones skip the cross-check (already reported).
    const declared = s.root.features === undefined ? { features: [], bases: new Set<string>() } : s.features;
    const order = normalizeInstallOrder(s.ctx, v, path, declared);
    if (order) s.core.overrideFeatureInstallOrder = order;
  },
  containerEnv(s, v, path) {
    const env = envMap(s, v, path, false);
    if (env) s.core.containerEnv = env as { [name: string]: string };
  },
  remoteEnv(s, v, path) {
    const env = envMap(s, v, path, true);
    if (env) s.core.remoteEnv = env;
  },
  mounts(s, v, path) {
    const list = s.ctx.checker.array(v, path);
    if (list === undefined || !withinLimit(s.ctx, "max_mounts", list.length, path)) return;
    const out: NormalizedMount[] = [];
    list.forEach((item, i) => {
      const m = mountOf(s, item, childPath(path, i));
      if (m) out.push(m);
    });
    if (out.length === list.length) s.core.mounts = out.sort((a, b) => compareBytes(a.target, b.target));
  },
  workspaceMount(s, v, path) {
    if (typeof v !== "string") s.ctx.checker.add(path, "workspaceMount must be a mount string", "MODEL_TYPE");
    else s.core.workspaceMount = mountOf(s, v, path);
  },
  workspaceFolder(s, v, path) {
    // Already read into the context (it feeds ${containerWorkspaceFolder}); report it here.
    const r = readWorkspaceFolder(v);
    if (r.ok) s.core.workspaceFolder = r.value;
    else s.ctx.checker.add(path, r.why, r.code);
  },
  containerUser(s, v, path) {
    s.core.containerUser = user(s, v, path);
  },
  remoteUser(s, v, path) {
    s.core.remoteUser = user(s, v, path);
  },
  userEnvProbe(s, v, path) {
    const p = USER_ENV_PROBES.find((x) => x === v);
    if (p === undefined) s.ctx.checker.add(path, `userEnvProbe must be one of ${USER_ENV_PROBES.join(", ")}`, "MODEL_VALUE");
    else s.core.userEnvProbe = p;
  },
  init(s, v, path) {
    s.core.init = bool(s, v, path);
  },
  overrideCommand(s, v, path) {
    s.core.overrideCommand = bool(s, v, path);
  },
  updateRemoteUserUID(s, v, path) {
    s.core.updateRemoteUserUID = bool(s, v, path);
  },
};

function mountOf(s: BuildState, item: JsonModel, path: string): NormalizedMount | undefined {
  let resolved: JsonModel = item;
  if (typeof item === "string") {
    const t = readText(s.ctx, item, path, { what: "mount" });
    if (t === undefined) return undefined;
    resolved = t;
  } else if (isJsonObject(item)) {
    const copy: JsonObject = Object.create(null) as JsonObject;
    for (const k of Object.keys(item)) {
      const val = item[k];
      const t = typeof val === "string" ? readText(s.ctx, val, childPath(path, k), { what: "mount field" }) : val;
      if (t === undefined) return undefined;
      copy[k] = t;
    }
    resolved = copy;
  }
  const r = normalizeMount(resolved, path);
  if (r.ok) return r.mount;
  for (const p of r.problems) s.ctx.checker.add(p.path, p.why, "MANIFEST_REFUSED");
  return undefined;
}

/**
 * Runs one field's normalizer and fails closed: a present field that leaves
 * no value in the core and no issue behind would silently drop out of the
 * address, so that is an issue too.
 */
function normalizeField(s: BuildState, key: NormalizedField, value: JsonModel, path: string): void {
  const before = s.ctx.checker.issues.length;
  const core = s.core as { [k: string]: unknown };
  delete core[key];
  NORMALIZERS[key](s, value, path);
  if (core[key] === undefined && s.ctx.checker.issues.length === before) {
    s.ctx.checker.add(path, `"${key}" could not be normalized`, "MANIFEST_REFUSED");
  }
}

type FolderResult = { ok: true; value: string | undefined } | { ok: false; why: string; code: "MODEL_VALUE" | "MANIFEST_REFUSED" };

/** workspaceFolder is read before every other field: absolute, substitution-free, normalized. */
function readWorkspaceFolder(v: JsonModel | undefined): FolderResult {
  if (v === undefined) return { ok: true, value: undefined };
  if (typeof v !== "string" || !v.startsWith("/") || v.includes("\u0000")) {
    return { ok: false, why: "workspaceFolder must be an absolute path", code: "MODEL_VALUE" };
  }
  for (const m of v.matchAll(/\$\{(.*?)\}/g)) {
    const { name } = classifyVariable(m[1] ?? "");
    return { ok: false, why: `\${${name}} is refused in workspaceFolder: it must be a literal path`, code: "MANIFEST_REFUSED" };
  }
  const n = posix.normalize(v);
  return { ok: true, value: n.length > 1 && n.endsWith("/") ? n.slice(0, -1) : n };
}

function kindOf(v: JsonModel): JsonKind | "null" | "number" {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "object") return "object";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v as "string" | "boolean";
}

/**
 * Excluded fields are type-checked and dropped. Host substitutions in them are
 * accepted: they never reach an address (the standard excludes cosmetic
 * fields from identity), and refusing them refused real files for a display name.
 * String limits still apply.
 */
function checkExcluded(s: BuildState, scope: FieldScope, v: JsonModel, path: string): void {
  const c = s.ctx.checker;
  const kind = kindOf(v);
  if (scope.kinds && !scope.kinds.includes(kind as JsonKind)) {
    c.add(path, `expected ${scope.kinds.join(" or ")}, found ${kind}`, "MODEL_TYPE");
    return;
  }
  if (scope.values && !scope.values.includes(v as string)) {
    c.add(path, `must be one of ${scope.values.join(", ")}`, "MODEL_VALUE");
    return;
  }
  const walk = (x: JsonModel, p: string): void => {
    if (typeof x === "string") readText(s.ctx, x, p, { cosmetic: true });
    else if (Array.isArray(x))
      x.forEach((y, i) => {
        walk(y, childPath(p, i));
      });
    else if (isJsonObject(x)) {
      for (const k of Object.keys(x)) {
        readText(s.ctx, k, childPath(p, k), { cosmetic: true, what: "key" });
        walk(x[k] as JsonModel, childPath(p, k));
      }
    }
  };
  walk(v, path);
}

/**
 * Builds the manifest core from a parsed devcontainer.json, or throws one
 * error (MANIFEST_REFUSED, or the single issue's own code) listing every
 * problem.
 */
export function buildCore(unsafeInput: unknown, limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS, closureResources?: readonly string[]): BuiltCore {
  const checker = new Checker("MANIFEST_REFUSED");
  const unsafeModel = ownModel(unsafeInput, limits.max_depth);
  if (!isJsonObject(unsafeModel)) {
    throw new CairnError("MODEL_TYPE", "devcontainer.json refused: the top level must be an object", { path: "" });
  }
  const root = unsafeModel;
  const folder = readWorkspaceFolder(root.workspaceFolder);
  const ctx: IngestContext = {
    checker,
    limits,
    workspaceFolder: folder.ok ? folder.value : undefined,
    ...(closureResources === undefined ? {} : { closureResources: new Set(closureResources) }),
  };
  const s: BuildState = { ctx, root, core: structuredClone(LIST_DEFAULTS), features: undefined };
  const excluded: string[] = [];
  for (const key of Object.keys(root)) {
    const path = childPath("", key);
    const scope = scopeOf(key);
    const value = root[key] as JsonModel;
    if (scope === undefined) checker.add(path, `unknown field "${key.slice(0, 64)}"`, "MODEL_UNKNOWN_FIELD");
    else if (scope.class === "refused") checker.add(path, `"${key}" is refused: ${scope.reason}`, "MANIFEST_REFUSED");
    else if (scope.class === "excluded") {
      excluded.push(key);
      checkExcluded(s, scope, value, path);
    } else if (key !== "overrideFeatureInstallOrder") normalizeField(s, key as NormalizedField, value, path);
  }
  if (root.image === undefined) {
    checker.add("/image", "image is required", "MODEL_MISSING_FIELD");
  }
  if (root.overrideFeatureInstallOrder !== undefined) {
    // After every other field: it is checked against the declared features.
    normalizeField(s, "overrideFeatureInstallOrder", root.overrideFeatureInstallOrder, "/overrideFeatureInstallOrder");
  }
  const targets = new Map<string, string>();
  const allMounts = [...(s.core.mounts ?? []), ...(s.core.workspaceMount ? [s.core.workspaceMount] : [])];
  for (const m of allMounts) {
    if (targets.has(m.target)) checker.add("/mounts", "two mounts share one target", "MANIFEST_COLLISION");
    targets.set(m.target, m.target);
  }
  checker.done("devcontainer.json refused", "fix every listed field; see docs/manifest.md for what cairn accepts and why");
  return { ...split(s.core as Declared), excluded: excluded.sort(compareBytes) };
}

/** Splits what was declared into the standard's core and cairn's extension (keys in table order, for people reading the JSON; JCS ignores key order). */
function split(d: Declared): { core: EnvCore; extension: EnvExtension } {
  const core: EnvCore = {
    schema: MANIFEST_SCHEMA,
    image: d.image,
    features: d.features,
    containerEnv: d.containerEnv,
    mounts: d.mounts.map((m) => ({ source: m.source, target: m.target, kind: m.kind })),
    remoteUser: d.remoteUser ?? null,
  };
  const ext: { [k: string]: unknown } = {
    schema: EXTENSION_SCHEMA,
    read_only_mounts: d.mounts.filter((m) => m.read_only).map((m) => m.target),
  };
  for (const k of Object.keys(FIELD_SCOPE)) {
    const v = (d as unknown as { [k: string]: unknown })[k];
    if (FIELD_SCOPE[k as keyof typeof FIELD_SCOPE].class === "extension" && v !== undefined) ext[k] = v;
  }
  return { core, extension: ext as unknown as EnvExtension };
}
