/**
 * Software refs: what a profile asks for. A ref names a layer (`python`,
 * `python@3.12`) or a formation (`formation:bio-seq@2026.03`). The version is
 * a prefix (segment-wise, see version.ts): `python@3.12` accepts 3.12.0 and
 * 3.12.4 but not 3.120.
 *
 * The scalar form and the mapping forms (`{name, version}`,
 * `{formation, version}`, and Strata's `{formation: "name@version"}`) are
 * spellings of the same value. `refToModel`
 * writes the scalar only when parsing it back gives the same ref, so a profile
 * written by cairn always reads back equal.
 */
import { Checker, childPath, type JsonModel } from "../core/index.ts";
import { isVersion, versionHint } from "./version.ts";

export const REF_NAME = /^[a-z0-9][a-z0-9._+-]{0,99}$/;
const FORMATION_PREFIX = "formation:";

export interface SoftwareRef {
  readonly kind: "layer" | "formation";
  readonly name: string;
  /** A version prefix; absent means any version. */
  readonly version?: string;
}

function fromParts(c: Checker, kind: SoftwareRef["kind"], name: unknown, version: unknown, path: string): SoftwareRef | undefined {
  let ok = true;
  if (typeof name !== "string" || !REF_NAME.test(name)) {
    c.add(path, `${JSON.stringify(String(name)).slice(0, 60)} is not a ${kind} name (lowercase letters, digits, '.', '_', '+', '-')`, "MODEL_VALUE");
    ok = false;
  }
  if (typeof version === "number") {
    c.add(childPath(path, "version"), yamlNumberMessage(version), "MODEL_TYPE");
    ok = false;
  } else if (version !== undefined && (typeof version !== "string" || !isVersion(version))) {
    c.add(path, `${JSON.stringify(String(version)).slice(0, 60)} is not a version (${versionHint(version)})`, "MODEL_VALUE");
    ok = false;
  }
  if (!ok) return undefined;
  return { kind, name: name as string, ...(version !== undefined ? { version: version as string } : {}) };
}

/** Reads one ref (scalar or mapping) at `path`, recording issues on `c`. */
export function readRef(c: Checker, v: JsonModel, path: string): SoftwareRef | undefined {
  if (typeof v === "string") {
    const formation = v.startsWith(FORMATION_PREFIX);
    const body = formation ? v.slice(FORMATION_PREFIX.length) : v;
    const at = body.indexOf("@");
    const name = at < 0 ? body : body.slice(0, at);
    const version = at < 0 ? undefined : body.slice(at + 1);
    return fromParts(c, formation ? "formation" : "layer", name, version, path);
  }
  const o = c.object(v, path, ["name", "formation", "version"]);
  if (o === undefined) return undefined;
  const hasName = Object.hasOwn(o, "name");
  const hasFormation = Object.hasOwn(o, "formation");
  if (hasName === hasFormation) {
    c.add(path, hasName ? 'a ref has either "name" or "formation", not both' : 'a ref mapping needs "name" or "formation"', "MODEL_VALUE");
    return undefined;
  }
  let version = Object.hasOwn(o, "version") ? o.version : undefined;
  if (version === null) {
    c.add(childPath(path, "version"), "version is null", "MODEL_TYPE");
    return undefined;
  }
  const kind = hasName ? "layer" : "formation";
  let name = hasName ? o.name : o.formation;
  // Strata's mapping form carries the version in the value: {formation: "bio-seq@2026.03"}.
  if (typeof name === "string" && name.includes("@")) {
    if (version !== undefined) {
      c.add(
        path,
        `give the version once: {${kind === "layer" ? "name" : "formation"}: "${name.slice(0, 40)}"} or {${kind === "layer" ? "name" : "formation"}: NAME, version: V}`,
        "MODEL_VALUE",
      );
      return undefined;
    }
    const at = name.indexOf("@");
    version = name.slice(at + 1);
    name = name.slice(0, at);
  }
  return fromParts(c, kind, name, version, path);
}

/** The canonical scalar spelling: `name`, `name@v` or `formation:name@v`. */
export function refString(r: SoftwareRef): string {
  const head = r.kind === "formation" ? `${FORMATION_PREFIX}${r.name}` : r.name;
  return r.version === undefined ? head : `${head}@${r.version}`;
}

export function sameRef(a: SoftwareRef, b: SoftwareRef): boolean {
  return a.kind === b.kind && a.name === b.name && a.version === b.version;
}

/** Writes the scalar when it reads back equal, the mapping otherwise. */
export function refToModel(r: SoftwareRef): string | Record<string, string> {
  const s = refString(r);
  const c = new Checker("PROFILE_INVALID");
  const back = readRef(c, s, "");
  if (back !== undefined && c.ok && sameRef(back, r)) return s;
  const key = r.kind === "formation" ? "formation" : "name";
  return r.version === undefined ? { [key]: r.name } : { [key]: r.name, version: r.version };
}

/** The message for a version YAML read as a number: `12.10` became 12.1, so say so and ask for quotes. */
export function yamlNumberMessage(n: number): string {
  return `YAML read this version as the number ${n}, which loses digits (12.10 becomes 12.1): write the version in quotes, as you meant it (version: "12.10", not version: 12.10)`;
}
