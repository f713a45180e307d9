/**
 * A formation: a named, versioned group of layers that are meant to be used
 * together (`formation:bio-seq@2026.03`). It names each member by id and blob
 * digest, so a formation pins its layers' bytes. Signed like a layer manifest.
 * Files may overlap between members of one formation (its builder decided
 * their order); overlaps with layers outside it are conflicts.
 */
import { Checker, childPath, isDigest, safeComponent, type JsonModel, type Sha256Digest } from "../core/index.ts";
import { REF_NAME } from "./ref.ts";
import { isVersion } from "./version.ts";

export const FORMATION_TYPE = "application/vnd.cairn.formation+json";

export interface FormationMember {
  readonly id: string;
  readonly sha256: Sha256Digest;
}

export interface Formation {
  readonly name: string;
  readonly version: string;
  readonly description?: string;
  readonly layers: readonly FormationMember[];
}

export const FORMATION_FIELDS = ["name", "version", "description", "layers"] as const;

/** The registry file name of a formation: `name-version`, checked as one safe component. */
export function formationKey(name: string, version: string): string {
  return safeComponent(`${name}-${version}`, "/name");
}

export function parseFormation(v: JsonModel, source = "formation"): Formation {
  const c = new Checker("LAYER_INVALID");
  const o = c.object(v, "", FORMATION_FIELDS);
  c.done(source);
  const name = c.string(c.required(o!, "name", ""), "/name", { pattern: REF_NAME });
  const version = c.string(c.required(o!, "version", ""), "/version");
  if (version !== undefined && !isVersion(version)) c.add("/version", "not a version", "MODEL_VALUE");
  const description = Object.hasOwn(o!, "description") ? c.string(o!.description, "/description", { max: 4096 }) : undefined;
  const layers: FormationMember[] = [];
  const arr = c.array(c.required(o!, "layers", ""), "/layers");
  if (arr?.length === 0) c.add("/layers", "a formation needs at least one layer", "MODEL_VALUE");
  arr?.forEach((m, i) => {
    const p = childPath("/layers", i);
    const mo = c.object(m, p, ["id", "sha256"]);
    if (mo === undefined) return;
    const id = c.string(c.required(mo, "id", p), `${p}/id`);
    const sha = c.required(mo, "sha256", p);
    if (typeof sha !== "string" || !isDigest(sha) || !sha.startsWith("sha256:")) c.add(`${p}/sha256`, "expected sha256:<64 lowercase hex>", "DIGEST_INVALID");
    else if (id !== undefined) {
      try {
        safeComponent(id, `${p}/id`);
        if (layers.some((l) => l.id === id)) c.add(`${p}/id`, `layer ${id} is listed twice`, "RESOLVE_CONFLICT");
        else layers.push({ id, sha256: sha as Sha256Digest });
      } catch {
        c.add(`${p}/id`, "not a safe layer id", "PATH_UNSAFE");
      }
    }
  });
  c.done(source);
  return { name: name!, version: version!, ...(description !== undefined ? { description } : {}), layers };
}

export function formationToModel(f: Formation): Record<string, unknown> {
  return {
    name: f.name,
    version: f.version,
    ...(f.description !== undefined ? { description: f.description } : {}),
    layers: f.layers.map((l) => ({ id: l.id, sha256: l.sha256 })),
  };
}
