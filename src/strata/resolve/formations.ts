/**
 * Stage 2, expand formations: each `formation:name@prefix` ref becomes the
 * highest formation version matching the prefix, its signature is checked
 * (unsigned ones are refused unless --allow-unsigned-offline), and every
 * member must be in the catalog with the digest the formation pins and must
 * run on the base.
 */
import { CairnError, type Issue } from "../../core/index.ts";
import type { LockBase } from "../base.ts";
import type { Catalog } from "../catalog.ts";
import type { SoftwareRef } from "../ref.ts";
import { refString } from "../ref.ts";
import { attest, type Attestation } from "../trust.ts";
import { versionHasPrefix } from "../version.ts";
import { abiMatches, archMatches } from "./match.ts";
import type { Pick } from "./pick.ts";

export interface FormationRecord {
  readonly name: string;
  readonly version: string;
  readonly signature: Attestation;
}

export function expandFormations(
  refs: readonly SoftwareRef[],
  catalog: Catalog,
  base: LockBase,
  allowUnsignedOffline: boolean,
): { picks: Pick[]; formations: FormationRecord[] } {
  const picks: Pick[] = [];
  const formations: FormationRecord[] = [];
  const problems: CairnError[] = [];
  refs.forEach((ref, i) => {
    if (ref.kind !== "formation") return;
    try {
      expandOne(ref, i);
    } catch (e) {
      if (!(e instanceof CairnError)) throw e;
      problems.push(e); // every formation ref is checked; all problems are reported together
    }
  });
  if (problems.length === 1) throw problems[0]!;
  if (problems.length > 1) {
    const issues: Issue[] = problems.map((e) => ({ code: e.code, path: e.path ?? "", message: e.message }));
    throw new CairnError(
      problems[0]!.code,
      `${problems.length} formation refs cannot be expanded:\n${issues.map((x) => `  ${x.path}: ${x.message}`).join("\n")}`,
      {
        path: issues[0]!.path,
        issues,
      },
    );
  }
  return { picks, formations };

  function expandOne(ref: SoftwareRef, i: number): void {
    const all = catalog.formations.get(ref.name) ?? [];
    const chosen = all.find((f) => versionHasPrefix(f.doc.value.version, ref.version ?? ""));
    if (chosen === undefined) {
      throw new CairnError("RESOLVE_FAILED", `no formation matches ${refString(ref)}`, {
        path: `/software/${i}`,
        hint: all.length === 0 ? `no formation named ${ref.name} in the registries` : `versions that exist: ${all.map((f) => f.doc.value.version).join(", ")}`,
      });
    }
    const f = chosen.doc.value;
    const label = `${f.name}@${f.version}`;
    const signature = attest(chosen.doc, chosen.source.keys, allowUnsignedOffline, `formation ${label}`);
    formations.push({ name: f.name, version: f.version, signature });
    let previous: string | undefined;
    for (const member of f.layers) {
      const layer = catalog.byId.get(member.id);
      if (layer === undefined || layer.doc.value.sha256 !== member.sha256) {
        throw new CairnError("RESOLVE_FAILED", `formation ${label} names layer ${member.id} (${member.sha256}), which no registry holds`, {
          path: `/software/${i}`,
          hint: "publish the member layer, or rebuild the formation",
        });
      }
      if (!archMatches(layer.doc.value, base) || !abiMatches(layer.doc.value, base)) {
        throw new CairnError("RESOLVE_FAILED", `formation ${label} member ${member.id} does not run on ${base.name} ${base.arch} (abi ${base.abi})`, {
          path: `/software/${i}`,
        });
      }
      picks.push({ layer, from_formation: label, requested_by: [`formation:${label}`], ...(previous !== undefined ? { after_in_formation: previous } : {}) });
      previous = member.id;
    }
  }
}
