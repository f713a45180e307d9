/**
 * Stage 1, the base: the probed base must be the one the profile names
 * (os-release name and arch); with no probe, the profile's base is recorded as
 * declared and nothing about it is checked. A mutable-layer spec that names
 * an ABI must name the probed base's (software installed into the upper layer
 * links against the base's C library).
 */
import { CairnError } from "../../core/index.ts";
import { declaredBase, type LockBase } from "../base.ts";
import type { Profile } from "../profile-model.ts";
import { abiFamily } from "../profile-forms.ts";

export function stageBase(profile: Profile, probed: LockBase | undefined): LockBase {
  if (probed === undefined) return declaredBase(profile.base.os, profile.base.arch);
  if (probed.name !== profile.base.os || probed.arch !== profile.base.arch) {
    throw new CairnError(
      "RESOLVE_FAILED",
      `the probed base is ${probed.name} on ${probed.arch}, but the profile asks for ${profile.base.os} on ${profile.base.arch}`,
      {
        path: "/base",
        hint: "probe a base that matches the profile, or change the profile's base",
      },
    );
  }
  const ml = profile.mutable_layer;
  if (ml !== false && ml.abi !== undefined && probed.abi !== "unknown") {
    // cairn's gnu/musl and Strata's linux-gnu-2.34 name a libc family; an ABI naming none cairn knows cannot be checked, so it is refused.
    const family = abiFamily(ml.abi);
    if (family === undefined || (family !== "none" && family !== probed.abi)) {
      throw new CairnError(
        "RESOLVE_FAILED",
        family === undefined
          ? `mutable_layer asks for abi ${ml.abi}, which names no C library cairn knows (gnu, musl, linux-gnu-VERSION, linux-musl-VERSION, none)`
          : `mutable_layer asks for abi ${ml.abi}, but the probed base is ${probed.abi}`,
        { path: "/mutable_layer/abi", hint: `write abi: ${probed.abi}, or leave abi out (the base's is used)` },
      );
    }
  }
  return probed;
}
