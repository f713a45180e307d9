/**
 * The devcontainers CLI's own lockfile, exactly as @devcontainers/cli 0.89.0
 * reads and writes it (its `containerFeaturesConfiguration` lockfile code):
 *
 *   - name: `devcontainer-lock.json` beside the devcontainer.json, or
 *     `.devcontainer-lock.json` beside a `.devcontainer.json` (any config
 *     file whose name starts with a dot);
 *   - `{"features": {<id as written>: {version, resolved, integrity,
 *     dependsOn?}}}`: one entry per feature of the resolved closure (a
 *     feature pulled in by `dependsOn` is keyed by the id as the depending
 *     feature's metadata writes it); `resolved` is `registry/path@digest`
 *     lowercased, `integrity` the manifest digest, `dependsOn` the depending
 *     ids as written, only when there are any; entries sorted by
 *     `localeCompare` of their keys (the CLI's order, which follows the
 *     host's collation like the CLI's own does);
 *   - text: `JSON.stringify(lock, null, 2)` and a newline;
 *   - a file that is empty (or only whitespace) means "create the lockfile";
 *   - the frozen check: the lock that would be written must equal the
 *     existing file re-serialized the same way, else it fails.
 *
 * At ingest, the lock is hostile input like the file: parsed strictly, every
 * entry must be a feature the file declares (or, after `manifest pin
 * --write` rewrote the file, the digest it names now) or one reached from
 * them through `dependsOn` entries; a dependency the lock names without an
 * entry, an entry outside that closure, a dependency cycle or a closure over
 * `max_feature_closure` are refused, naming the feature; `resolved` must be
 * the same feature at the `integrity` digest. Nothing is fetched; messages
 * name keys, never values.
 */
import {
  CairnError,
  checkLimit,
  compareBytes,
  devcontainersCliOrder,
  isJsonObject,
  parseJsonBytes,
  readFileBounded,
  sha256,
  type JsonModel,
  type JsonObject,
  type Sha256Digest,
} from "../core/index.ts";
import { basename, dirname, join } from "node:path";
import { lstatSync } from "node:fs";
import { cliFeatureRef, MAX_FEATURE_CLOSURE, type FeatureClosure } from "./feature-closure.ts";
import { normalizeFeatureId } from "./reference.ts";

/** A lockfile larger than this is refused (limit `devcontainerLockBytes`). */
export const MAX_DEVCONTAINER_LOCK_BYTES = 1024 * 1024;

export interface DevcontainerLockEntry {
  readonly version?: string;
  readonly resolved: string;
  readonly integrity: string;
  readonly dependsOn?: readonly string[];
}

export interface DevcontainerLock {
  readonly features: { readonly [id: string]: DevcontainerLockEntry };
}

/** Where the devcontainers CLI keeps the lockfile of `configPath`. */
export function devcontainerLockPath(configPath: string): string {
  return join(dirname(configPath), basename(configPath).startsWith(".") ? ".devcontainer-lock.json" : "devcontainer-lock.json");
}

/** The lock the CLI writes for a resolved closure (OCI features; see the module comment). */
export function lockOfClosure(closure: FeatureClosure): DevcontainerLock {
  const rows = closure.order
    .flatMap((n) => (n.oci === undefined ? [] : [{ id: n.userFeatureId, n, oci: n.oci }]))
    .sort((a, b) => devcontainersCliOrder(a.id, b.id));
  const features: { [id: string]: DevcontainerLockEntry } = {};
  for (const { id, oci } of rows) {
    const deps = oci.metadata.dependsOn.map(([d]) => d);
    features[id] = {
      ...(oci.metadata.version === undefined ? {} : { version: oci.metadata.version }),
      resolved: `${oci.ref.registry}/${oci.ref.path}@${oci.digest}`,
      integrity: oci.digest,
      ...(deps.length > 0 ? { dependsOn: deps } : {}),
    };
  }
  return { features };
}

/** The lockfile's text, byte for byte as the CLI writes it. */
export function devcontainerLockText(lock: DevcontainerLock): string {
  return `${JSON.stringify(lock, null, 2)}\n`;
}

/** What is at a lockfile path: nothing, the CLI's empty "create one" marker, or a lockfile's bytes. */
export type LockFileState = { readonly kind: "absent" } | { readonly kind: "empty" } | { readonly kind: "present"; readonly bytes: Buffer };

export function readLockFileState(lockPath: string): LockFileState {
  // lstat, not exists: a dangling symlink is not "no lockfile" (the bounded read refuses any symlink, naming it)
  try {
    lstatSync(lockPath);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { kind: "absent" };
  }
  const bytes = readFileBounded(lockPath, MAX_DEVCONTAINER_LOCK_BYTES, "devcontainerLockBytes", { missing: "IO_ERROR" });
  if (bytes.toString("utf8").trim() === "") return { kind: "empty" };
  return { kind: "present", bytes };
}

const escapeKey = (k: string): string => k.replaceAll("~", "~0").replaceAll("/", "~1");

function mismatch(path: string, message: string, lockPath: string): CairnError {
  return new CairnError("MANIFEST_MISMATCH", `${lockPath}: ${message}`, {
    path,
    hint: "run `cairn manifest pin --write` (or the devcontainers CLI) again to regenerate the lockfile for this file",
  });
}

const ENTRY_FIELDS = new Set(["version", "resolved", "integrity", "dependsOn"]);

/** Parses a lockfile's bytes strictly into the CLI's model. */
export function parseDevcontainerLock(bytes: Uint8Array, lockPath: string): DevcontainerLock {
  const doc = parseJsonBytes(bytes, { source: lockPath });
  if (!isJsonObject(doc) || !isJsonObject(doc.features)) throw mismatch("/features", "is not a devcontainer lockfile (no features object)", lockPath);
  for (const k of Object.keys(doc))
    if (k !== "features") throw new CairnError("MODEL_UNKNOWN_FIELD", `${lockPath}: unknown field`, { path: `/${escapeKey(k)}` });
  const features: { [id: string]: DevcontainerLockEntry } = {};
  for (const [id, e] of Object.entries(doc.features)) {
    const path = `/features/${escapeKey(id)}`;
    if (!isJsonObject(e) || typeof e.resolved !== "string" || typeof e.integrity !== "string")
      throw mismatch(path, "entry needs resolved and integrity strings", lockPath);
    for (const k of Object.keys(e))
      if (!ENTRY_FIELDS.has(k)) throw new CairnError("MODEL_UNKNOWN_FIELD", `${lockPath}: unknown field`, { path: `${path}/${escapeKey(k)}` });
    if (e.version !== undefined && typeof e.version !== "string") throw mismatch(`${path}/version`, "must be a string", lockPath);
    const deps = e.dependsOn;
    if (deps !== undefined && (!Array.isArray(deps) || !deps.every((d): d is string => typeof d === "string")))
      throw mismatch(`${path}/dependsOn`, "must be a list of feature ids", lockPath);
    features[id] = {
      ...(e.version === undefined ? {} : { version: e.version }),
      resolved: e.resolved,
      integrity: e.integrity,
      ...(deps === undefined ? {} : { dependsOn: deps as string[] }),
    };
  }
  return { features };
}

/**
 * The CLI's frozen check: the lock that would be written must be the
 * existing file re-serialized (a missing file fails too). Throws
 * DEVCONTAINER_LOCK_FROZEN naming the first feature whose entry would change.
 */
export function checkFrozenLock(state: LockFileState, next: DevcontainerLock, lockPath: string): void {
  const hint = "run `cairn manifest pin` without --frozen-lockfile to update the lockfile, and commit it";
  if (state.kind !== "present")
    throw new CairnError("DEVCONTAINER_LOCK_FROZEN", `${lockPath} does not exist (or is empty), and the lock is frozen`, { path: lockPath, hint });
  // the CLI's comparison: the existing file through JSON.parse and JSON.stringify(…, null, 2)
  let old: { features?: Record<string, unknown> } | undefined;
  try {
    old = JSON.parse(state.bytes.toString("utf8")) as { features?: Record<string, unknown> };
  } catch {
    old = undefined;
  }
  if (old !== undefined && `${JSON.stringify(old, null, 2)}\n` === devcontainerLockText(next)) return;
  const before = typeof old?.features === "object" && old.features !== null ? old.features : {};
  const ids = new Set([...Object.keys(before), ...Object.keys(next.features)]);
  const changed = [...ids].find((id) => JSON.stringify(Object.hasOwn(before, id) ? before[id] : undefined) !== JSON.stringify(next.features[id]));
  throw new CairnError(
    "DEVCONTAINER_LOCK_FROZEN",
    changed === undefined
      ? `${lockPath} would change, and the lock is frozen`
      : `${lockPath} would change for feature ${JSON.stringify(changed)}, and the lock is frozen`,
    { path: changed === undefined ? lockPath : `/features/${escapeKey(changed)}`, hint },
  );
}

export interface AppliedLock {
  /** The devcontainer model with locked features renamed to their resolved references. */
  readonly model: JsonModel;
  /** sha256 of the lockfile's bytes (provenance). */
  readonly digest: Sha256Digest;
  /** How many declared features the lock pinned. */
  readonly pinned: number;
  /** The resolved references of the closure features the file does not declare (sorted by bytes). */
  readonly closure: readonly string[];
  /** The resources (`registry/path`, lowercased) of every feature of the closure, declared or not: what overrideFeatureInstallOrder may name. */
  readonly closureResources: readonly string[];
}

/** Checks one entry's `resolved` against its key: the same feature, at the `integrity` digest. */
function checkResolved(id: string, entry: DevcontainerLockEntry, lockPath: string): string {
  const path = `/features/${escapeKey(id)}`;
  const n = normalizeFeatureId(id);
  const r = normalizeFeatureId(entry.resolved);
  const at = entry.resolved.lastIndexOf("@");
  if (
    !n.ok ||
    n.kind !== "oci" ||
    !r.ok ||
    r.kind !== "oci" ||
    !r.pinned ||
    cliFeatureRef(id).resource !== cliFeatureRef(entry.resolved).resource ||
    entry.resolved.slice(at + 1) !== entry.integrity
  ) {
    throw mismatch(`${path}/resolved`, `resolved reference for ${JSON.stringify(id)} is not the same feature at its integrity digest`, lockPath);
  }
  if (n.pinned && r.id !== n.id) throw mismatch(path, `pins ${JSON.stringify(id)} to another digest than the file names`, lockPath);
  return r.id;
}

/** Applies a parsed lockfile to a parsed devcontainer model; see the module comment. */
export function applyDevcontainerLock(model: JsonModel, lockPath: string, bytes: Buffer, maxClosure = MAX_FEATURE_CLOSURE): AppliedLock {
  const lock = parseDevcontainerLock(bytes, lockPath);
  const digest = sha256(bytes);
  if (!isJsonObject(model)) return { model, digest, pinned: 0, closure: [], closureResources: [] };
  const declared = isJsonObject(model.features) ? model.features : (Object.create(null) as JsonObject);
  const entries = lock.features;
  const declaredIds = new Set(
    Object.keys(declared)
      .map((id) => normalizeFeatureId(id))
      .flatMap((n) => (n.ok ? [n.id] : [])),
  );
  // the roots: entries of declared features (by key, or by the digest a rewritten file names)
  const roots: string[] = [];
  for (const [id, entry] of Object.entries(entries)) {
    if (Object.hasOwn(declared, id)) roots.push(id);
    else {
      const r = normalizeFeatureId(entry.resolved);
      if (r.ok && declaredIds.has(r.id)) roots.push(id);
    }
  }
  // the closure: entries reached from the roots through dependsOn, each of which must have an entry
  const reached = new Set<string>(roots);
  const queue = [...roots];
  while (queue.length > 0) {
    const id = queue.shift()!;
    for (const dep of entries[id]?.dependsOn ?? []) {
      if (!Object.hasOwn(entries, dep))
        throw mismatch(
          `/features/${escapeKey(id)}/dependsOn`,
          `feature ${JSON.stringify(id)} depends on ${JSON.stringify(dep)}, which the lock has no entry for`,
          lockPath,
        );
      if (reached.has(dep)) continue;
      reached.add(dep);
      checkLimit("max_feature_closure", reached.size, maxClosure, `/features/${escapeKey(dep)}`, "count");
      queue.push(dep);
    }
  }
  for (const id of Object.keys(entries)) {
    if (!reached.has(id))
      throw mismatch(
        `/features/${escapeKey(id)}`,
        `locks feature ${JSON.stringify(id)}, which is neither declared by the file nor a dependency of one`,
        lockPath,
      );
  }
  checkAcyclic(entries, roots, lockPath);
  const resolvedOf = new Map<string, string>();
  for (const id of reached) resolvedOf.set(id, checkResolved(id, entries[id]!, lockPath));

  const renamed: JsonObject = Object.create(null) as JsonObject;
  let pinned = 0;
  const declaredResolved = new Set<string>();
  for (const [id, options] of Object.entries(declared)) {
    const n = normalizeFeatureId(id);
    const entry = entries[id];
    if (!n.ok || n.kind !== "oci") {
      renamed[id] = options;
      continue;
    }
    if (entry === undefined) {
      if (!n.pinned) throw mismatch(`/features/${escapeKey(id)}`, `does not lock feature ${JSON.stringify(id)}, which the file names by tag`, lockPath);
      renamed[id] = options;
      declaredResolved.add(n.id);
      continue;
    }
    const r = resolvedOf.get(id)!;
    if (r in renamed) throw mismatch(`/features/${escapeKey(id)}`, `resolves two features to ${r}`, lockPath);
    renamed[r] = options;
    declaredResolved.add(r);
    pinned++;
  }
  const closure = [...new Set([...reached].map((id) => resolvedOf.get(id)!))].filter((r) => !declaredResolved.has(r)).sort(compareBytes);
  const closureResources = [...new Set([...reached].map((id) => cliFeatureRef(id).resource))].sort(compareBytes);
  const out: JsonObject = Object.assign(Object.create(null) as JsonObject, model);
  if (isJsonObject(model.features)) out.features = renamed;
  return { model: out, digest, pinned, closure, closureResources };
}

/** A dependsOn cycle among the lock's entries is refused, naming a feature on it. */
function checkAcyclic(entries: DevcontainerLock["features"], roots: readonly string[], lockPath: string): void {
  const state = new Map<string, "open" | "done">();
  const visit = (start: string): void => {
    const stack: { id: string; next: number }[] = [{ id: start, next: 0 }];
    state.set(start, "open");
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const deps = entries[top.id]?.dependsOn ?? [];
      if (top.next >= deps.length) {
        state.set(top.id, "done");
        stack.pop();
        continue;
      }
      const dep = deps[top.next++]!;
      const s = state.get(dep);
      if (s === "open") {
        throw new CairnError("FEATURE_DEPENDENCY", `${lockPath}: feature ${JSON.stringify(dep)} is in a dependency cycle`, {
          path: `/features/${escapeKey(dep)}/dependsOn`,
          hint: "a feature cannot depend on itself through its dependencies; the devcontainers CLI fails on it too",
        });
      }
      if (s === undefined) {
        state.set(dep, "open");
        stack.push({ id: dep, next: 0 });
      }
    }
  };
  for (const r of roots) if (!state.has(r)) visit(r);
}
