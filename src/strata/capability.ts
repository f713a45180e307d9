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
import type { HostRequirement } from "./spec/types.ts";

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
 * A host requirement, the seed's `HostRequirement` (002_bbb23a1942433a8c.txt):
 * `requires_host: [{key: cuda-driver, value: ">=525"}, {key: efa, value: "true"}]`,
 * a key the host must have and a constraint or boolean string. The resolver
 * cannot see the host the environment will run on, so it records the
 * requirement and says (as a lockfile caveat) that nothing checked it;
 * `requires_host` as a whole is a set, so its order in the profile never
 * changes the EnvironmentID.
 */
export type { HostRequirement } from "./spec/types.ts"; // one definition: the lockfile's own struct

const HOST_KEY = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
const HOST_HINT = 'write a host requirement as the seed\'s {key, value} mapping: {key: cuda-driver, value: ">=525"} or {key: efa, value: "true"}';

/**
 * Reads one `requires_host` entry, a `{key, value}` mapping. A YAML boolean
 * or whole-number value is recorded as its text (Strata's YAML reader decodes
 * it into its string field the same way), so `value: true` and
 * `value: "true"` are one requirement. A string (cairn's earlier `kvm`,
 * `cuda>=12`) is refused naming the mapping it would be.
 */
export function parseHostRequirement(unsafe: unknown, path = ""): HostRequirement {
  if (typeof unsafe === "string") {
    const m = /^([A-Za-z0-9][A-Za-z0-9._:/-]{0,127}?)((?:>=|<=|==|>|<|=).*)?$/.exec(unsafe);
    const as = m === null ? '{key: NAME, value: "true"}' : `{key: ${m[1]}, value: "${m[2] === undefined ? "true" : m[2].slice(0, 40)}"}`;
    throw new CairnError(
      "MODEL_TYPE",
      `host requirement ${JSON.stringify(unsafe.slice(0, 80))} is a string, cairn's earlier form: write the seed's mapping ${as}`,
      {
        path,
        hint: HOST_HINT,
      },
    );
  }
  if (typeof unsafe !== "object" || unsafe === null || Array.isArray(unsafe)) {
    throw new CairnError(
      "MODEL_TYPE",
      `expected a {key, value} mapping, found ${unsafe === null ? "null" : Array.isArray(unsafe) ? "a list" : typeof unsafe}`,
      {
        path,
        hint: HOST_HINT,
      },
    );
  }
  const o = unsafe as Record<string, unknown>;
  const extra = Object.keys(o).filter((k) => k !== "key" && k !== "value");
  if (extra.length > 0)
    throw new CairnError("MODEL_UNKNOWN_FIELD", `unknown field "${extra[0]}" in a {key, value} host requirement`, {
      path: `${path}/${extra[0]}`,
      hint: HOST_HINT,
    });
  const key = o.key;
  const value = o.value;
  if (typeof key !== "string" || !HOST_KEY.test(key)) {
    throw new CairnError(
      key === undefined ? "MODEL_MISSING_FIELD" : "MODEL_VALUE",
      "a host requirement needs a key (letters, digits, '.', '_', ':', '/', '-'; at most 128)",
      { path: `${path}/key`, hint: HOST_HINT },
    );
  }
  if (typeof value === "number" && !Number.isSafeInteger(value)) {
    // 12.10 arrives as 12.1: the text the user wrote is lost, so ask for quotes instead of recording the wrong one.
    throw new CairnError("MODEL_TYPE", `YAML read this value as the number ${value}, which may lose digits: write it in quotes`, {
      path: `${path}/value`,
      hint: HOST_HINT,
    });
  }
  if (typeof value === "string" ? value.length === 0 || value.length > 1024 : !(typeof value === "boolean" || typeof value === "number")) {
    throw new CairnError(
      value === undefined ? "MODEL_MISSING_FIELD" : "MODEL_VALUE",
      "a host requirement needs a value: a non-empty string (at most 1024 characters), a boolean or a whole number",
      { path: `${path}/value`, hint: HOST_HINT },
    );
  }
  // The value is printed (resolve's warning, lock explain, lock diff): a control character could rewrite the terminal or forge a line.
  if (typeof value === "string" && /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(value)) {
    throw new CairnError("MODEL_VALUE", "a host requirement's value holds a control character or line break: write it on one line of printable text", {
      path: `${path}/value`,
      hint: HOST_HINT,
    });
  }
  return { key, value: String(value) };
}

/** One line for people: `cuda-driver>=525` when the value is a constraint, `efa=true` otherwise. */
export function hostRequirementString(h: HostRequirement): string {
  return /^[<>=]/.test(h.value) ? `${h.key}${h.value}` : `${h.key}=${h.value}`;
}

/** The model form: the `{key, value}` mapping. */
export function hostRequirementToModel(h: HostRequirement): { key: string; value: string } {
  return { key: h.key, value: h.value };
}

/** `requires_host` is a set: sorted by key then value (bytes), duplicates dropped. */
export function hostRequirementSet(list: readonly HostRequirement[]): HostRequirement[] {
  const byKey = new Map<string, HostRequirement>();
  for (const h of list) byKey.set(`${h.key}\u0000${h.value}`, h);
  return [...byKey.keys()].sort(compareBytes).map((k) => byKey.get(k)!);
}
