/**
 * Stage 3, resolve software refs: for each layer ref, the highest version
 * (by the one version order) among user-selectable layers of that name whose
 * version has the ref's prefix and that run on the base (arch and ABI).
 * Pre-releases (`3.12.0rc1`, `1.0.0-beta`: version.ts defines them) are
 * picked only when the ref itself names one or when no release fits, so
 * `python` never silently means a release candidate. Every ref that fits
 * nothing is reported at once, each with its pointer and the versions that
 * exist and why each was passed over.
 */
import { CairnError, compareBytes, type Issue } from "../../core/index.ts";
import type { LockBase } from "../base.ts";
import type { Catalog } from "../catalog.ts";
import { refString, type SoftwareRef } from "../ref.ts";
import { isPrerelease, versionHasPrefix } from "../version.ts";
import { abiMatches, archMatches } from "./match.ts";
import type { Pick } from "./pick.ts";

export function resolveRefs(refs: readonly SoftwareRef[], catalog: Catalog, base: LockBase): Pick[] {
  const picks: Pick[] = [];
  const issues: Issue[] = [];
  const hints: string[] = [];
  refs.forEach((ref, i) => {
    if (ref.kind !== "layer") return;
    const all = catalog.byName.get(ref.name) ?? [];
    // `all` is sorted highest version first, so the first fit is the highest.
    const fits = all.filter((l) => {
      const m = l.doc.value;
      return m.user_selectable && versionHasPrefix(m.version, ref.version ?? "") && archMatches(m, base) && abiMatches(m, base);
    });
    const wantsPre = ref.version !== undefined && isPrerelease(ref.version);
    const chosen = (wantsPre ? undefined : fits.find((l) => !isPrerelease(l.doc.value.version))) ?? fits[0];
    if (chosen !== undefined) {
      picks.push({ layer: chosen, requested_by: [refString(ref)] });
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
    const hint = seen.length === 0 ? `no layer named ${ref.name} in the registries` : `versions that exist: ${seen.join("; ")}`;
    hints.push(hint);
    issues.push({ code: "RESOLVE_FAILED", path: `/software/${i}`, message: `no layer matches ${refString(ref)} on ${base.name} ${base.arch} (${hint})` });
  });
  if (issues.length === 1) {
    throw new CairnError("RESOLVE_FAILED", `no layer matches ${refString(refs[Number(issues[0]!.path.slice(10))]!)}`, {
      path: issues[0]!.path,
      hint: hints[0]!,
      issues,
    });
  }
  if (issues.length > 1) {
    throw new CairnError("RESOLVE_FAILED", `${issues.length} refs match no layer:\n${issues.map((x) => `  ${x.path}: ${x.message}`).join("\n")}`, {
      path: issues[0]!.path,
      issues,
    });
  }
  return picks;
}

/** Merges formation picks and ref picks; the same layer twice is one pick (a formation's record wins), requested by every ref that asked. */
export function mergePicks(fromFormations: readonly Pick[], fromRefs: readonly Pick[]): Pick[] {
  const out = new Map<string, Pick>();
  for (const p of [...fromFormations, ...fromRefs]) {
    const id = p.layer.doc.value.id;
    const seen = out.get(id);
    out.set(id, seen === undefined ? p : { ...seen, requested_by: [...new Set([...(seen.requested_by ?? []), ...(p.requested_by ?? [])])].sort(compareBytes) });
  }
  return [...out.values()];
}
