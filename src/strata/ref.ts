/**
 * Software refs: what a profile asks for, Strata's `SoftwareRef` (seed
 * 002_bbb23a1942433a8c.txt). A ref names a layer (`python`, `python@3.12`)
 * or a formation (`formation:bio-seq@2026.03`). The version is a prefix
 * (segment-wise, see version.ts): `python@3.12` accepts 3.12.0 and 3.12.4 but
 * not 3.120.
 *
 * The scalar form (read by `parseSoftwareRef`, the seed's ParseSoftwareRef:
 * surrounding whitespace trimmed, `formation:` prefix, else split at the first
 * `@`) and the mapping forms (`{name, version}`, `{formation: "name@version"}`,
 * cairn's `{formation: NAME, version: V}`, and `{name: "formation:NAME@V"}`,
 * which Strata's profile reader re-reads as the scalar it spells) are
 * spellings of the same value. `refToModel` writes the mapping form
 * (`{name, version}` or `{formation: "name@version"}`), which reads back
 * equal and which every Strata reads: v0.22's decoder has no scalar form,
 * though v0.29's MarshalYAML writes one.
 *
 * Names: the seed refuses whitespace, `@`, `:` and `/` in a name; cairn also
 * keeps names to one safe path component of letters (either case: Strata's
 * layer for R is `R`), digits, `.`, `_`, `+` and `-`, since a name becomes a
 * layer id, a mount point and a modulefile directory.
 */
import { Checker, childPath, type JsonModel } from "../core/index.ts";
import { isVersion, versionHint } from "./version.ts";

export const REF_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$/;
/** What REF_NAME allows, in words (messages never show the pattern). */
export const NAME_RULE = "letters, digits, '.', '_', '+', '-'; at most 100, starting with a letter or digit";
const FORMATION_PREFIX = "formation:";

export interface SoftwareRef {
  readonly kind: "layer" | "formation";
  readonly name: string;
  /** A version prefix; absent means any version. */
  readonly version?: string;
}

/** How the user wrote the ref, whole, for messages (never a part of it: `formation:cuda-python-ml@2024.03`, not `cuda-python-ml`). */
function quoted(written: string): string {
  const s = JSON.stringify(written);
  return s.length > 120 ? `${s.slice(0, 117)}..."` : s;
}

function fromParts(c: Checker, kind: SoftwareRef["kind"], name: unknown, version: unknown, path: string, written: string): SoftwareRef | undefined {
  let ok = true;
  if (typeof name !== "string" || !REF_NAME.test(name)) {
    const shown = typeof name === "string" && name.length > 0 ? `the ${kind} name ${quoted(name)}` : `an empty ${kind} name`;
    c.add(path, `software ref ${quoted(written)}: ${shown} is not valid (${NAME_RULE})`, "MODEL_VALUE");
    ok = false;
  }
  if (typeof version === "number") {
    c.add(childPath(path, "version"), yamlNumberMessage(version), "MODEL_TYPE");
    ok = false;
  } else if (version !== undefined && (typeof version !== "string" || !isVersion(version))) {
    c.add(path, `software ref ${quoted(written)}: ${quoted(String(version))} is not a version (${versionHint(version)})`, "MODEL_VALUE");
    ok = false;
  }
  if (!ok) return undefined;
  return { kind, name: name as string, ...(version !== undefined ? { version: version as string } : {}) };
}

/** Splits a scalar ref: the seed's ParseSoftwareRef (trim; `formation:` prefix; else name up to the first `@`). */
function readScalar(c: Checker, raw: string, path: string): SoftwareRef | undefined {
  const s = raw.trim();
  if (s === "") {
    c.add(path, "a software ref is empty: write NAME, NAME@VERSION or formation:NAME@VERSION", "MODEL_VALUE");
    return undefined;
  }
  const formation = s.startsWith(FORMATION_PREFIX);
  const body = formation ? s.slice(FORMATION_PREFIX.length) : s;
  const at = body.indexOf("@");
  const name = at < 0 ? body : body.slice(0, at);
  const version = at < 0 ? undefined : body.slice(at + 1);
  return fromParts(c, formation ? "formation" : "layer", name, version, path, s);
}

/**
 * The seed's ParseSoftwareRef for one string, with cairn's name and version
 * rules: throws PROFILE_INVALID (naming the whole ref) when it is not a ref.
 */
export function parseSoftwareRef(s: string, source = "software ref"): SoftwareRef {
  const c = new Checker("PROFILE_INVALID");
  const r = readScalar(c, s, "");
  c.done(source, "write NAME, NAME@VERSION or formation:NAME@VERSION");
  return r!;
}

/** Reads one ref (scalar or mapping) at `path`, recording issues on `c`. */
export function readRef(c: Checker, v: JsonModel, path: string): SoftwareRef | undefined {
  if (typeof v === "string") return readScalar(c, v, path);
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
  const key = hasName ? "name" : "formation";
  let kind: SoftwareRef["kind"] = hasName ? "layer" : "formation";
  let name = hasName ? o.name : o.formation;
  if (typeof name !== "string") {
    c.add(childPath(path, key), `${key} must be a string`, "MODEL_TYPE");
    return undefined;
  }
  const written = version === undefined ? name : `${name}@${String(version)}`;
  // {name: "formation:NAME@V"}: Strata's profile reader re-reads a lone name as the scalar it spells.
  if (hasName && name.startsWith(FORMATION_PREFIX)) {
    if (version !== undefined) {
      c.add(
        path,
        `software ref ${quoted(name)}: a formation takes its version in the ref, write {formation: "${name.slice(FORMATION_PREFIX.length, 80)}@V"} or the scalar`,
        "MODEL_VALUE",
      );
      return undefined;
    }
    kind = "formation";
    name = name.slice(FORMATION_PREFIX.length);
  }
  // The version carried in the value: {formation: "bio-seq@2026.03"} (the seed's format), {name: "python@3.12"}.
  if (name.includes("@")) {
    if (version !== undefined) {
      c.add(path, `software ref ${quoted(written)}: give the version once, {${key}: ${quoted(name)}} or {${key}: NAME, version: V}`, "MODEL_VALUE");
      return undefined;
    }
    const at = name.indexOf("@");
    version = name.slice(at + 1);
    name = name.slice(0, at);
  }
  return fromParts(c, kind, name, version, path, written);
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
export function refToModel(r: SoftwareRef): Record<string, string> {
  // The seed's mapping forms, which every Strata reads (v0.22's decoder has no scalar form; v0.29 reads both):
  // a formation carries its version in the value.
  if (r.kind === "formation") return { formation: r.version === undefined ? r.name : `${r.name}@${r.version}` };
  return r.version === undefined ? { name: r.name } : { name: r.name, version: r.version };
}

/** The message for a version YAML read as a number: `12.10` became 12.1, so say so and ask for quotes. */
export function yamlNumberMessage(n: number): string {
  return `YAML read this version as the number ${n}, which loses digits (12.10 becomes 12.1): write the version in quotes, as you meant it (version: "12.10", not version: 12.10)`;
}
