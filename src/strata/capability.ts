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
import { CairnError } from "../core/index.ts";
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
