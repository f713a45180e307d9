/**
 * Reading the devcontainers CLI's own lockfile (`devcontainer-lock.json`:
 * `features.<id as written>` → `{version, resolved, integrity}`) at ingest.
 * A feature the lock pins is ingested as its `resolved` reference
 * (`NAME@sha256:…`), so the address covers the digest and the feature counts
 * as pinned, exactly as if the file had named the digest itself.
 *
 * The lock is hostile input like the file: it is parsed strictly, every
 * entry must name a feature the file declares, or resolve to a digest the
 * file names (a file `manifest pin --write` rewrote); a lock for another
 * feature set is refused, naming the feature; `resolved` must be the same feature
 * name at a sha256 digest and `integrity` that digest, and every OCI feature
 * the file names by tag must be in the lock. Nothing is fetched.
 */
import { CairnError, isJsonObject, parseJsonBytes, readFileBounded, sha256, type JsonModel, type JsonObject, type Sha256Digest } from "../core/index.ts";
import { normalizeFeatureId } from "./reference.ts";

/** A lockfile larger than this is refused (limit `devcontainerLockBytes`). */
export const MAX_DEVCONTAINER_LOCK_BYTES = 1024 * 1024;

export interface AppliedLock {
  /** The devcontainer model with locked features renamed to their resolved references. */
  readonly model: JsonModel;
  /** sha256 of the lockfile's bytes (provenance). */
  readonly digest: Sha256Digest;
  /** How many features the lock pinned. */
  readonly pinned: number;
}

const escapeKey = (k: string): string => k.replaceAll("~", "~0").replaceAll("/", "~1");

function mismatch(path: string, message: string, lockPath: string): CairnError {
  return new CairnError("MANIFEST_MISMATCH", `${lockPath}: ${message}`, {
    path,
    hint: "run `cairn manifest pin --write` (or the devcontainers CLI) again to regenerate the lockfile for this file",
  });
}

/** Applies the lockfile at `lockPath` to a parsed devcontainer model; see the module comment. */
export function applyDevcontainerLock(model: JsonModel, lockPath: string): AppliedLock {
  const bytes = readFileBounded(lockPath, MAX_DEVCONTAINER_LOCK_BYTES, "devcontainerLockBytes", { missing: "IO_ERROR" });
  const lock = parseJsonBytes(bytes, { source: lockPath });
  if (!isJsonObject(lock) || !isJsonObject(lock.features)) throw mismatch("/features", "is not a devcontainer lockfile (no features object)", lockPath);
  if (!isJsonObject(model)) return { model, digest: sha256(bytes), pinned: 0 };
  const declared = isJsonObject(model.features) ? model.features : (Object.create(null) as JsonObject);
  const entries = lock.features;
  // a lock entry names a declared feature, or (after `manifest pin --write` rewrote the file) the digest the file now names
  const declaredIds = new Set(
    Object.keys(declared)
      .map((id) => normalizeFeatureId(id))
      .flatMap((n) => (n.ok ? [n.id] : [])),
  );
  for (const [id, entry] of Object.entries(entries)) {
    if (id in declared) continue;
    const resolved = isJsonObject(entry) && typeof entry.resolved === "string" ? normalizeFeatureId(entry.resolved) : undefined;
    if (resolved?.ok === true && declaredIds.has(resolved.id)) continue;
    throw mismatch(`/features/${escapeKey(id)}`, `locks feature ${JSON.stringify(id)}, which the file does not declare`, lockPath);
  }
  const renamed: JsonObject = Object.create(null) as JsonObject;
  let pinned = 0;
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
      continue;
    }
    const path = `/features/${escapeKey(id)}`;
    if (!isJsonObject(entry) || typeof entry.resolved !== "string" || typeof entry.integrity !== "string")
      throw mismatch(path, "entry needs resolved and integrity strings", lockPath);
    const r = normalizeFeatureId(entry.resolved);
    const at = entry.resolved.lastIndexOf("@");
    if (
      !r.ok ||
      r.kind !== "oci" ||
      !r.pinned ||
      r.base.replace(/:[^/]*$/, "") !== n.base.replace(/:[^/]*$/, "") ||
      entry.resolved.slice(at + 1) !== entry.integrity
    ) {
      throw mismatch(`${path}/resolved`, `resolved reference for ${JSON.stringify(id)} is not the same feature at its integrity digest`, lockPath);
    }
    if (n.pinned && r.id !== n.id) throw mismatch(path, `pins ${JSON.stringify(id)} to another digest than the file names`, lockPath);
    if (r.id in renamed) throw mismatch(path, `resolves two features to ${r.id}`, lockPath);
    renamed[r.id] = options;
    pinned++;
  }
  const out: JsonObject = Object.assign(Object.create(null) as JsonObject, model);
  if (isJsonObject(model.features)) out.features = renamed;
  return { model: out, digest: sha256(bytes), pinned };
}
