/**
 * Stage 1, the base: the probed base must be the one the profile names
 * (os-release name and arch); with no probe, the profile's base is recorded as
 * declared and nothing about it is checked.
 */
import { CairnError } from "../../core/index.ts";
import { declaredBase, type LockBase } from "../base.ts";
import type { Profile } from "../profile-model.ts";

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
  return probed;
}
