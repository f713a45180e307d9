/**
 * Stage 4, requirements: every requirement of every chosen layer must be
 * satisfied by the base or by another chosen layer (capability satisfaction is
 * defined once, in capability.ts; any satisfying provider is enough). The
 * result records, per layer and requirement, every provider that satisfies it
 * ("base" or a layer id), sorted, so the mount order can put providers first.
 * All unsatisfied requirements are reported together.
 */
import { compareBytes, CairnError, type Issue } from "../../core/index.ts";
import { requirementString, satisfies, capabilityString } from "../capability.ts";
import type { LockBase } from "../base.ts";
import { pickId, type Pick } from "./pick.ts";

export const BASE_PROVIDER = "base";

/** layer id → requirement string → providers. */
export type SatisfiedBy = Map<string, Map<string, string[]>>;

export function checkRequirements(picks: readonly Pick[], base: LockBase): SatisfiedBy {
  const issues: Issue[] = [];
  const out: SatisfiedBy = new Map();
  for (const p of picks) {
    const id = pickId(p);
    const reqs = new Map<string, string[]>();
    for (const r of p.layer.doc.value.requires) {
      const providers: string[] = [];
      if (base.capabilities.some((c) => satisfies(c, r))) providers.push(BASE_PROVIDER);
      for (const q of picks) {
        if (q === p) continue;
        if (q.layer.doc.value.provides.some((c) => satisfies(c, r))) providers.push(pickId(q));
      }
      const key = requirementString(r);
      if (providers.length === 0) {
        const near = [
          ...base.capabilities.filter((c) => c.name === r.name).map((c) => `${capabilityString(c)} from the base`),
          ...picks.flatMap((q) => q.layer.doc.value.provides.filter((c) => c.name === r.name).map((c) => `${capabilityString(c)} from ${pickId(q)}`)),
        ];
        issues.push({
          code: "RESOLVE_FAILED",
          path: id,
          message: `${id} requires ${key}, which ${near.length === 0 ? "nothing provides" : `is not satisfied by ${near.join(", ")}`}${base.source === "declared" && base.capabilities.length === 0 ? " (the base was not probed: pass --base)" : ""}`,
        });
        continue;
      }
      reqs.set(
        key,
        providers.sort((a, b) => (a === BASE_PROVIDER ? -1 : b === BASE_PROVIDER ? 1 : compareBytes(a, b))),
      );
    }
    out.set(id, reqs);
  }
  if (issues.length > 0) {
    const lines = issues.map((i) => `  ${i.message}`).join("\n");
    throw new CairnError("RESOLVE_FAILED", `unsatisfied requirements:\n${lines}`, {
      path: issues[0]!.path,
      issues,
      hint: "add a layer that provides the capability, or probe a base that has it",
    });
  }
  return out;
}
