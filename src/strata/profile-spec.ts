/**
 * Profile values as the lockfile carries them (seed 002): the fields the
 * resolver copies from the profile into the LockFile, in the seed's types.
 */
import { CairnError, compareBytes } from "../core/index.ts";
import type { SoftwareRef } from "./ref.ts";
import { type HostRequirement, isHostFact } from "./capability.ts";
import type { MutableLayer } from "./profile-forms.ts";
import type * as spec from "./spec/types.ts";

/** The mutable-layer spec as the seed's MutableLayerSpec (the profile reader already holds it in that form). */
export function specMutableLayer(m: Exclude<MutableLayer, false>): spec.MutableLayerSpec {
  if (m === true || !("name" in m)) {
    throw new CairnError("PROFILE_INVALID", "mutable_layer needs the seed's MutableLayerSpec: the name and version of the layer it will be frozen into", {
      path: "/mutable_layer",
      hint: 'write mutable_layer: {name: NAME, version: "V", size_gb: 20, volume_type: gp3}',
    });
  }
  const s = m as unknown as { name: string; version: string; size_gb: number; volume_type: string; abi?: string };
  return { name: s.name, version: s.version, size_gb: s.size_gb, volume_type: s.volume_type, abi: s.abi ?? "" };
}

/**
 * A host requirement as the seed's `{key, value}`: a fact as it is; cairn's
 * requirement spelling becomes the key and its bounds (`cuda>=12` →
 * `{key: cuda, value: ">=12"}`, a bare `kvm` → `{key: kvm, value: "true"}`).
 * A set: sorted by key then value, duplicates dropped, so the profile's order
 * never changes the lockfile.
 */
export function specHostRequirements(list: readonly HostRequirement[]): spec.HostRequirement[] {
  const out = new Map<string, spec.HostRequirement>();
  for (const h of list) {
    const e = isHostFact(h)
      ? { key: h.key, value: h.value }
      : {
          key: h.name,
          value: h.min === undefined && h.max === undefined ? "true" : [h.min !== undefined ? `>=${h.min}` : "", h.max !== undefined ? `<${h.max}` : ""].filter(Boolean).join(","),
        };
    out.set(`${e.key}\0${e.value}`, e);
  }
  return [...out.keys()].sort(compareBytes).map((k) => out.get(k)!);
}

/** The profile's defaults as software refs (the profile reader holds Strata's form; a module path `gcc/12.2` is read as gcc@12.2). */
export function specDefaults(d: unknown): SoftwareRef[] {
  if (d instanceof Map) {
    if (d.size === 0) return [];
    throw new CairnError("PROFILE_INVALID", "defaults as a settings mapping has no place in Strata's lockfile", {
      path: "/defaults",
      hint: 'write defaults as software refs: [{name: gcc, version: "14.2.0"}] or [gcc@14.2.0]',
    });
  }
  return (d as readonly (string | SoftwareRef)[]).map((x): SoftwareRef => {
    if (typeof x !== "string") return x;
    const at = x.indexOf("/");
    return at < 0 ? { kind: "layer", name: x } : { kind: "layer", name: x.slice(0, at), version: x.slice(at + 1) };
  });
}
