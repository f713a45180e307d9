/**
 * A formation: a named, versioned group of layers that are meant to be used
 * together (`formation:bio-seq@2026.03`). It names each member by id and blob
 * digest, so a formation pins its layers' bytes. Signed like a layer manifest.
 * Files may overlap between members of one formation (its builder decided
 * their order); overlaps with layers outside it are conflicts.
 *
 * This record is what cairn signs; the registry also holds, beside it, the
 * seed's Formation it gives (layer-spec.ts `toSpecFormation`,
 * registry-documents.ts), so each member also records its name and version
 * (the seed's `name@version` ref) and the record carries the union of its
 * members' capabilities (the seed's `provides`). Publishing checks all three
 * against the members' signed manifests (registry.ts checkFormationMembers).
 */
import { CairnError, Checker, childPath, isDigest, safeComponent, type JsonModel, type Sha256Digest } from "../core/index.ts";
import { capabilityString, parseCapability, type Capability } from "./capability.ts";
import { REF_NAME } from "./ref.ts";
import { isVersion } from "./version.ts";

export const FORMATION_TYPE = "application/vnd.cairn.formation+json";

export interface FormationMember {
  readonly id: string;
  readonly name: string;
  readonly version: string;
  readonly sha256: Sha256Digest;
}

export interface Formation {
  readonly name: string;
  readonly version: string;
  readonly description?: string;
  readonly layers: readonly FormationMember[];
  /** The union of the members' capabilities, in mount order, each once (the seed's Formation.provides). */
  readonly provides: readonly Capability[];
}

export const FORMATION_FIELDS = ["name", "version", "description", "layers", "provides"] as const;

/** The union of capabilities the seed's Formation.provides names: in member order, each `name@version` once. */
export function providesUnion(members: readonly { readonly provides: readonly Capability[] }[]): Capability[] {
  const seen = new Set<string>();
  const out: Capability[] = [];
  for (const m of members)
    for (const c of m.provides) {
      const k = capabilityString(c);
      if (!seen.has(k)) {
        seen.add(k);
        out.push({ name: c.name, version: c.version });
      }
    }
  return out;
}

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
    const mo = c.object(m, p, ["id", "name", "version", "sha256"]);
    if (mo === undefined) return;
    const id = c.string(c.required(mo, "id", p), `${p}/id`);
    const memberName = c.string(c.required(mo, "name", p), `${p}/name`, { pattern: REF_NAME });
    const memberVersion = c.string(c.required(mo, "version", p), `${p}/version`);
    if (memberVersion !== undefined && !isVersion(memberVersion)) c.add(`${p}/version`, "not a version", "MODEL_VALUE");
    const sha = c.required(mo, "sha256", p);
    if (typeof sha !== "string" || !isDigest(sha) || !sha.startsWith("sha256:")) c.add(`${p}/sha256`, "expected sha256:<64 lowercase hex>", "DIGEST_INVALID");
    else if (id !== undefined) {
      try {
        safeComponent(id, `${p}/id`);
        if (layers.some((l) => l.id === id)) c.add(`${p}/id`, `layer ${id} is listed twice`, "RESOLVE_CONFLICT");
        else layers.push({ id, name: memberName ?? "", version: memberVersion ?? "", sha256: sha as Sha256Digest });
      } catch {
        c.add(`${p}/id`, "not a safe layer id", "PATH_UNSAFE");
      }
    }
  });
  const provides: Capability[] = [];
  c.stringArray(c.required(o!, "provides", ""), "/provides")?.forEach((x, i) => {
    try {
      provides.push(parseCapability(x, childPath("/provides", i)));
    } catch (e) {
      if (!(e instanceof CairnError)) throw e;
      c.add(childPath("/provides", i), e.message, e.code);
    }
  });
  c.done(source);
  return { name: name!, version: version!, ...(description !== undefined ? { description } : {}), layers, provides };
}

export function formationToModel(f: Formation): Record<string, unknown> {
  return {
    name: f.name,
    version: f.version,
    ...(f.description !== undefined ? { description: f.description } : {}),
    layers: f.layers.map((l) => ({ id: l.id, name: l.name, version: l.version, sha256: l.sha256 })),
    provides: f.provides.map(capabilityString),
  };
}
