/**
 * Stage 3, resolve software refs: for each layer ref, the highest version
 * (by the one version order) among user-selectable layers of that name whose
 * version has the ref's prefix and that run on the base (arch and ABI). When
 * nothing fits, the error lists the versions that exist and why each was
 * passed over.
 */
import { CairnError } from "../../core/index.ts";
import type { LockBase } from "../base.ts";
import type { Catalog } from "../catalog.ts";
import { refString, type SoftwareRef } from "../ref.ts";
import { versionHasPrefix } from "../version.ts";
import { abiMatches, archMatches } from "./match.ts";
import type { Pick } from "./pick.ts";

export function resolveRefs(refs: readonly SoftwareRef[], catalog: Catalog, base: LockBase): Pick[] {
  const picks: Pick[] = [];
  refs.forEach((ref, i) => {
    if (ref.kind !== "layer") return;
    const all = catalog.byName.get(ref.name) ?? [];
    // `all` is sorted highest version first, so the first fit is the highest.
    const chosen = all.find((l) => {
      const m = l.doc.value;
      return m.user_selectable && versionHasPrefix(m.version, ref.version ?? "") && archMatches(m, base) && abiMatches(m, base);
    });
    if (chosen !== undefined) {
      picks.push({ layer: chosen });
      return;
    }
    const seen = all.map((l) => {
      const m = l.doc.value;
      const why = !m.user_selectable
        ? "not user-selectable"
        : !versionHasPrefix(m.version, ref.version ?? "")
          ? "version"
          : !archMatches(m, base)
            ? `arch ${m.arch}`
            : `abi ${m.abi}`;
      return `${m.version} (${m.arch}, ${m.abi}: ${why})`;
    });
    throw new CairnError("RESOLVE_FAILED", `no layer matches ${refString(ref)} on ${base.name} ${base.arch}`, {
      path: `/software/${i}`,
      hint: seen.length === 0 ? `no layer named ${ref.name} in the registries` : `versions that exist: ${seen.join("; ")}`,
    });
  });
  return picks;
}

/** Merges formation picks and ref picks; the same layer twice is one pick (a formation's record wins). */
export function mergePicks(fromFormations: readonly Pick[], fromRefs: readonly Pick[]): Pick[] {
  const out = new Map<string, Pick>();
  for (const p of [...fromFormations, ...fromRefs]) {
    const id = p.layer.doc.value.id;
    if (!out.has(id)) out.set(id, p);
  }
  return [...out.values()];
}
