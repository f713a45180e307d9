/**
 * Stage 6, mount order: topological, so a layer mounts after every layer that
 * satisfies one of its requirements and after the formation member listed
 * before it; among layers that are free to go next, the one with the lowest
 * blob digest goes first (then the lowest id), so the order depends only on
 * content and never on the order of the profile. A cycle is an error naming
 * the layers in it.
 */
import { compareBytes, CairnError } from "../../core/index.ts";
import { BASE_PROVIDER, type SatisfiedBy } from "./requirements.ts";
import { pickId, type Pick } from "./pick.ts";

export function mountOrder(picks: readonly Pick[], satisfiedBy: SatisfiedBy): Pick[] {
  const byId = new Map(picks.map((p) => [pickId(p), p]));
  const before = new Map<string, Set<string>>(); // id → ids that must mount first
  for (const p of picks) {
    const deps = new Set<string>();
    for (const providers of satisfiedBy.get(pickId(p))?.values() ?? []) {
      // Any one provider satisfies; all of them must be below so the layer sees whichever the mount exposes.
      for (const q of providers) if (q !== BASE_PROVIDER && byId.has(q)) deps.add(q);
    }
    if (p.after_in_formation !== undefined && byId.has(p.after_in_formation)) deps.add(p.after_in_formation);
    before.set(pickId(p), deps);
  }
  const key = (p: Pick): string => `${p.layer.doc.value.sha256}\0${pickId(p)}`;
  const order: Pick[] = [];
  const placed = new Set<string>();
  const remaining = [...picks].sort((a, b) => compareBytes(key(a), key(b)));
  while (remaining.length > 0) {
    const idx = remaining.findIndex((p) => [...before.get(pickId(p))!].every((d) => placed.has(d)));
    if (idx < 0) {
      throw new CairnError(
        "RESOLVE_FAILED",
        `the layers ${remaining.map(pickId).join(", ")} cannot be ordered: their requirements (and formation order) form a cycle`,
        {
          path: pickId(remaining[0]!),
          hint: "break the cycle: a layer must not require what a layer mounted after it provides, nor contradict its formation's member order",
        },
      );
    }
    const [next] = remaining.splice(idx, 1);
    order.push(next!);
    placed.add(pickId(next!));
  }
  return order;
}
