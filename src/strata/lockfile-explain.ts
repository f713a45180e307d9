/**
 * `lock explain LOCK`: one lockfile's layers in mount order, each with its
 * size and why it is there, read from the lockfile alone: the profile refs it
 * satisfies (`satisfied_by`), the formation that brought it in
 * (`from_formation`), and the requirements of other layers it provides
 * (the wiring `viewLock` derives from the manifests, the same one the mount
 * order was chosen by); then the formations with their members and the
 * package sets with what each installs. What the lockfile does not record is
 * not guessed: a layer with an empty `satisfied_by` and no formation is said
 * to be listed without a reason, not "needed by" something the file does
 * not name.
 */
import { compareBytes } from "../core/index.ts";
import { capabilityString } from "./capability.ts";
import { environmentId } from "./env-id.ts";
import { environmentId as strataEnvironmentId } from "./spec/lock-file.ts";
import { installedPackages, packageSetKey } from "./lockfile-changes.ts";
import { lockfileCaveats } from "./lockfile-caveats.ts";
import { BASE_PROVIDER, isFrozen, type Lockfile } from "./lockfile.ts";

export interface ExplainedLayer {
  readonly mount_order: number;
  readonly id: string;
  readonly name: string;
  readonly version: string;
  /** `null` while unfrozen. */
  readonly sha256: string | null;
  readonly size: number;
  /** The profile refs this layer satisfies, as the lockfile lists them (`python@3.12`, `formation:bio-seq@2026.03`). */
  readonly satisfied_by: readonly string[];
  readonly from_formation: string | null;
  /** Each reason in words, in the order above; never empty (a layer without one says so). */
  readonly why: readonly string[];
  readonly provides: readonly string[];
  /** Each requirement with every provider that satisfies it ("base" or a layer id). */
  readonly requires: readonly { readonly requirement: string; readonly providers: readonly string[] }[];
  /** The other layers' requirements this layer provides. */
  readonly required_by: readonly { readonly layer: string; readonly requirement: string }[];
  /** Entries of its content manifest (files and symlinks). */
  readonly files: number;
}

export interface ExplainedPackageSet {
  readonly set: string;
  readonly manager: string;
  readonly env: string | null;
  /** `frozen` (cairn freeze: archives by digest), `pinned` (the wire's name, version, digest), `requested` (not pinned). */
  readonly state: "frozen" | "pinned" | "requested";
  readonly target: string | null;
  readonly packages: readonly { readonly name: string; readonly version: string | null; readonly sha256: string | null }[];
}

export interface LockExplained {
  readonly profile: string;
  readonly resolved_at: string;
  /** cairn's content identity; `null` for an unfrozen lockfile. */
  readonly environment_id: string | null;
  /** Strata's EnvironmentID (bare hex); `null` for an unfrozen lockfile. */
  readonly strata_environment_id: string | null;
  readonly frozen: boolean;
  readonly base: {
    readonly name: string;
    readonly arch: string;
    readonly digest: string | null;
    readonly source: string;
    readonly provides: readonly string[];
  };
  readonly layers: readonly ExplainedLayer[];
  readonly total_size: number;
  readonly formations: readonly { readonly name: string; readonly version: string; readonly members: readonly string[] }[];
  readonly package_sets: readonly ExplainedPackageSet[];
  readonly caveats: readonly string[];
}

const refsOf = (satisfiedBy: string): string[] =>
  satisfiedBy
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

export function explainLock(l: Lockfile): LockExplained {
  const frozen = isFrozen(l);
  const ordered = [...l.layers].sort((a, b) => a.mount_order - b.mount_order);
  const requiredBy = new Map<string, { layer: string; requirement: string }[]>();
  for (const other of ordered) {
    for (const [requirement, providers] of other.wiring) {
      for (const p of providers) {
        if (p === BASE_PROVIDER) continue;
        requiredBy.set(p, [...(requiredBy.get(p) ?? []), { layer: other.id, requirement }]);
      }
    }
  }
  const layers = ordered.map((x): ExplainedLayer => {
    const refs = refsOf(x.satisfied_by);
    const needs = requiredBy.get(x.id) ?? [];
    const why = [
      ...refs.map((r) => (r.startsWith("formation:") ? `a member of ${r}, which the profile asks for` : `the profile asks for ${r}`)),
      ...(x.from_formation !== undefined && !refs.includes(`formation:${x.from_formation}`) ? [`brought in by formation ${x.from_formation}`] : []),
      ...needs.map((n) => `provides ${n.requirement} for ${n.layer}`),
    ];
    return {
      mount_order: x.mount_order,
      id: x.id,
      name: x.name,
      version: x.version,
      sha256: x.sha256 ?? null,
      size: x.size,
      satisfied_by: refs,
      from_formation: x.from_formation ?? null,
      why: why.length > 0 ? why : ["the lockfile lists it without a reason (no satisfied_by, no formation, no layer needs it)"],
      provides: x.manifest.provides.map((c) => capabilityString(c)),
      requires: [...x.wiring].map(([requirement, providers]) => ({ requirement, providers })),
      required_by: needs,
      files: Object.keys(x.manifest.content_manifest).length,
    };
  });
  const formations = l.formations.map((f) => {
    const label = f.version === "" ? f.name : `${f.name}@${f.version}`;
    return { name: f.name, version: f.version, members: ordered.filter((x) => x.from_formation === label).map((x) => x.id) };
  });
  const package_sets = l.packages.map(
    (s): ExplainedPackageSet => ({
      set: packageSetKey(s),
      manager: s.manager,
      env: s.env ?? null,
      state: s.frozen !== undefined ? "frozen" : s.pinned !== undefined ? "pinned" : "requested",
      target: s.frozen
        ? [...s.frozen.target]
            .sort(([k], [j]) => compareBytes(k, j))
            .map(([k, v]) => `${k}=${v}`)
            .join(" ")
        : null,
      packages: installedPackages(s),
    }),
  );
  return {
    profile: l.profile,
    resolved_at: l.resolved_at,
    environment_id: frozen ? environmentId(l) : null,
    strata_environment_id: frozen ? strataEnvironmentId(l.spec) : null,
    frozen,
    base: {
      name: l.base.name,
      arch: l.base.arch,
      digest: l.base.digest ?? null,
      source: l.base.source,
      provides: l.base.capabilities.map((c) => capabilityString(c)),
    },
    layers,
    total_size: layers.reduce((n, x) => n + x.size, 0),
    formations,
    package_sets,
    caveats: lockfileCaveats(l),
  };
}
