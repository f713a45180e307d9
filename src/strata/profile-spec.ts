/**
 * Profile values as the lockfile carries them (seed 002): the fields the
 * resolver copies from the profile into the LockFile, in the seed's types.
 * The profile reader already holds them in those types; what is decided here
 * is the lockfile's form of each.
 */
import { compareBytes } from "../core/index.ts";
import type { HostRequirement } from "./capability.ts";
import type { MutableLayerSpec } from "./profile-forms.ts";
import type * as spec from "./spec/types.ts";

/** The mutable-layer spec as the seed's MutableLayerSpec (an absent ABI is the empty string, as Go writes it). */
export function specMutableLayer(m: MutableLayerSpec): spec.MutableLayerSpec {
  return { name: m.name, version: m.version, size_gb: m.size_gb, volume_type: m.volume_type, abi: m.abi ?? "" };
}

/** The host requirements as a set: sorted by key then value, duplicates dropped, so the profile's order never changes the lockfile. */
export function specHostRequirements(list: readonly HostRequirement[]): spec.HostRequirement[] {
  const out = new Map<string, spec.HostRequirement>();
  for (const h of list) out.set(JSON.stringify([h.key, h.value]), { key: h.key, value: h.value });
  return [...out.keys()].sort(compareBytes).map((k) => out.get(k)!);
}
