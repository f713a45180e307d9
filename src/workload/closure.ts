/**
 * The raw closure: every raw object a workload was assembled from, each by
 * role, sha256 and size. Named by the derived entry and by the lock; verify
 * re-reads and re-checks every one, and a missing one fails even when the
 * derived tree is present.
 */
import { type Checker, childPath, parseSha256, type JsonModel, type Sha256Digest } from "../core/index.ts";

/**
 * binary: spec, executable. oci: spec, manifest, config, layer (one per layer, base first).
 * `oci-layout`, `index` and `descriptor` are read (so an older lock parses) and refused by
 * verification: the layout's own index does not affect what runs (see oci-workload.ts).
 */
export const RAW_ROLES = ["spec", "executable", "oci-layout", "index", "descriptor", "manifest", "config", "layer"] as const;
export const LEGACY_OCI_ROLES = ["oci-layout", "index", "descriptor"] as const;
export type RawRole = (typeof RAW_ROLES)[number];

export interface RawRef {
  readonly role: RawRole;
  readonly digest: Sha256Digest;
  readonly size: number;
}

export function rawModel(refs: readonly RawRef[]): Array<{ role: string; digest: string; size: number }> {
  return refs.map((r) => ({ role: r.role, digest: r.digest, size: r.size }));
}

/** Strictly parses a raw closure list (from a lock or a derived entry). */
export function checkRaw(c: Checker, v: JsonModel | undefined, path: string): RawRef[] | undefined {
  const arr = c.array(v, path);
  if (arr === undefined) return undefined;
  const out: RawRef[] = [];
  arr.forEach((item, i) => {
    const p = childPath(path, i);
    const o = c.object(item, p, ["role", "digest", "size"]);
    if (o === undefined) return;
    const role = c.string(c.required(o, "role", p), childPath(p, "role"));
    const found = RAW_ROLES.find((r) => r === role);
    if (role !== undefined && found === undefined) c.add(childPath(p, "role"), `unknown raw role`, "MODEL_VALUE");
    let digest: Sha256Digest | undefined;
    try {
      digest = parseSha256(c.required(o, "digest", p), childPath(p, "digest"));
    } catch {
      c.add(childPath(p, "digest"), "must be sha256:<64 lowercase hex>", "DIGEST_INVALID");
    }
    const size = c.integer(c.required(o, "size", p), childPath(p, "size"), { min: 0 });
    if (found !== undefined && digest !== undefined && size !== undefined) out.push({ role: found, digest, size });
  });
  return out.length === arr.length ? out : undefined;
}
