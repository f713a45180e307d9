/**
 * Capabilities and requirements. A capability is something a layer or the base
 * provides (`python@3.12.4`, `glibc@2.36`); a requirement names a capability and
 * an optional version range (`python>=3.11,<3.13`).
 *
 * This file holds the single definition of capability satisfaction:
 * the name matches exactly, `min` is inclusive, `max` is exclusive, and any
 * satisfying provider is enough — the checker looks at every provider with the
 * right name, not only the first one it meets (a bug where `python@2.7` listed
 * before `python@3.12` made `python>=3` fail is what this rule prevents).
 */
import { CairnError, compareBytes } from "../core/index.ts";
import { compareVersionValues, isVersion } from "./version.ts";

export const CAPABILITY_NAME = /^[a-z0-9][a-z0-9._+:-]{0,127}$/;

export interface Capability {
  readonly name: string;
  readonly version: string;
}

export interface Requirement {
  readonly name: string;
  /** Inclusive lower bound. */
  readonly min?: string;
  /** Exclusive upper bound. */
  readonly max?: string;
}

function refuse(unsafe: string, path: string, what: string, hint: string): never {
  throw new CairnError("MODEL_VALUE", `${JSON.stringify(unsafe).slice(0, 80)} is not a ${what}`, { path, hint });
}

/** Parses `name@version`. */
export function parseCapability(unsafe: unknown, path = ""): Capability {
  const s = typeof unsafe === "string" ? unsafe : String(unsafe);
  const at = s.lastIndexOf("@");
  const name = at < 0 ? "" : s.slice(0, at);
  const version = at < 0 ? "" : s.slice(at + 1);
  if (typeof unsafe !== "string" || !CAPABILITY_NAME.test(name) || !isVersion(version)) {
    refuse(s, path, "capability", "write a capability as name@version, e.g. python@3.12.4");
  }
  return { name, version };
}

export function capabilityString(c: Capability): string {
  return `${c.name}@${c.version}`;
}

/** Parses `name`, `name>=a`, `name<b` or `name>=a,<b`. */
export function parseRequirement(unsafe: unknown, path = ""): Requirement {
  const hint = "write a requirement as name, name>=min, name<max or name>=min,<max (min inclusive, max exclusive)";
  if (typeof unsafe !== "string") refuse(String(unsafe), path, "requirement", hint);
  const m = /^([a-z0-9][a-z0-9._+:-]{0,127}?)(?:(>=|<)([^,<>=]+)(?:,(<)([^,<>=]+))?)?$/.exec(unsafe);
  if (m === null) refuse(unsafe, path, "requirement", hint);
  const name = m[1]!;
  let min: string | undefined;
  let max: string | undefined;
  if (m[2] === ">=") min = m[3];
  else if (m[2] === "<") max = m[3];
  if (m[4] === "<") {
    if (max !== undefined) refuse(unsafe, path, "requirement", hint);
    max = m[5];
  }
  for (const v of [min, max]) if (v !== undefined && !isVersion(v)) refuse(unsafe, path, "requirement", hint);
  if (min !== undefined && max !== undefined && compareVersionValues(min, max) >= 0) {
    throw new CairnError("MODEL_VALUE", `requirement ${JSON.stringify(unsafe)} is an empty range`, { path, hint: "min must be lower than max" });
  }
  return { name, ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) };
}

export function requirementString(r: Requirement): string {
  const parts: string[] = [];
  if (r.min !== undefined) parts.push(`>=${r.min}`);
  if (r.max !== undefined) parts.push(`<${r.max}`);
  return r.name + parts.join(",");
}

/** THE definition: does capability `c` satisfy requirement `r`? */
export function satisfies(c: Capability, r: Requirement): boolean {
  if (c.name !== r.name) return false;
  if (r.min !== undefined && compareVersionValues(c.version, r.min) < 0) return false;
  if (r.max !== undefined && compareVersionValues(c.version, r.max) >= 0) return false;
  return true;
}

/** Every provider among `candidates` whose capabilities satisfy `r` (any one is enough). */
export function satisfyingProviders<P>(r: Requirement, candidates: Iterable<{ provider: P; capability: Capability }>): P[] {
  const out: P[] = [];
  for (const c of candidates) if (satisfies(c.capability, r)) out.push(c.provider);
  return out;
}

/**
 * A host fact, Strata's `requires_host: [{key: efa, value: "true"}]`: a
 * key/value the host must have. The resolver cannot see the host the
 * environment will run on, so it records the fact and says (as a lockfile
 * caveat) that nothing checked it; `requires_host` as a whole is a set, so its
 * order in the profile never changes the EnvironmentID.
 */
export interface HostFact {
  readonly key: string;
  readonly value: string;
}

export type HostRequirement = Requirement | HostFact;

const HOST_KEY = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;

export function isHostFact(h: HostRequirement): h is HostFact {
  return Object.hasOwn(h, "key");
}

/**
 * Reads one `requires_host` entry: a requirement string (`gpu`, `cuda>=12`)
 * or a `{key, value}` mapping. The value may be a YAML scalar (`true`, `4`):
 * it is recorded as its text, so `value: true` and `value: "true"` are one fact.
 */
export function parseHostRequirement(unsafe: unknown, path = ""): HostRequirement {
  if (typeof unsafe === "string") return parseRequirement(unsafe, path);
  const hint = 'write a host requirement as a requirement string (gpu, cuda>=12) or a mapping {key: efa, value: "true"}';
  if (typeof unsafe !== "object" || unsafe === null || Array.isArray(unsafe)) {
    throw new CairnError(
      "MODEL_TYPE",
      `expected a requirement string or a {key, value} mapping, found ${unsafe === null ? "null" : Array.isArray(unsafe) ? "a list" : typeof unsafe}`,
      { path, hint },
    );
  }
  const o = unsafe as Record<string, unknown>;
  const extra = Object.keys(o).filter((k) => k !== "key" && k !== "value");
  if (extra.length > 0)
    throw new CairnError("MODEL_UNKNOWN_FIELD", `unknown field "${extra[0]}" in a {key, value} host requirement`, { path: `${path}/${extra[0]}`, hint });
  const key = o.key;
  const value = o.value;
  if (typeof key !== "string" || !HOST_KEY.test(key)) {
    throw new CairnError(
      key === undefined ? "MODEL_MISSING_FIELD" : "MODEL_VALUE",
      "a host requirement needs a key (letters, digits, '.', '_', ':', '/', '-')",
      { path: `${path}/key`, hint },
    );
  }
  if (
    typeof value === "string"
      ? value.length === 0 || value.length > 1024
      : !(typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value)))
  ) {
    throw new CairnError(
      value === undefined ? "MODEL_MISSING_FIELD" : "MODEL_VALUE",
      "a host requirement needs a value: a non-empty string, a boolean or a number",
      { path: `${path}/value`, hint },
    );
  }
  return { key, value: String(value) };
}

/** One line: the requirement string, or `key=value`. */
export function hostRequirementString(h: HostRequirement): string {
  return isHostFact(h) ? `${h.key}=${h.value}` : requirementString(h);
}

/** The model form: a requirement string, or the `{key, value}` mapping. */
export function hostRequirementToModel(h: HostRequirement): string | { key: string; value: string } {
  return isHostFact(h) ? { key: h.key, value: h.value } : requirementString(h);
}

/** `requires_host` is a set: sorted by its one-line form (requirements before facts of the same text), duplicates dropped. */
export function hostRequirementSet(list: readonly HostRequirement[]): HostRequirement[] {
  const byKey = new Map<string, HostRequirement>();
  for (const h of list) byKey.set(`${isHostFact(h) ? "1" : "0"}${hostRequirementString(h)}`, h);
  return [...byKey.keys()].sort(compareBytes).map((k) => byKey.get(k)!);
}
