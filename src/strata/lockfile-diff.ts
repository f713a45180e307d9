/**
 * `lock diff A B`: what changed between two lockfiles, field by field, and
 * whether their EnvironmentIDs differ. Environment variable values are never
 * printed (they may be secrets): a changed variable is named, not shown.
 *
 * The per-layer, per-formation, per-default and per-package comparison is
 * lockfile-changes.ts's (one entry per package, never a package set
 * flattened into one string); this module adds the other fields and turns
 * every change into a field-level entry (`changes`) that `cairn update`
 * sorts.
 */
import { capabilityString, hostRequirementSet, hostRequirementString } from "./capability.ts";
import { childPath, compareBytes, type Issue } from "../core/index.ts";
import { environmentId } from "./env-id.ts";
import { isFrozen, type LockLayer, type Lockfile } from "./lockfile.ts";
import { type LockChanges, lockChanges, type PackageChange } from "./lockfile-changes.ts";

export interface LockChange {
  readonly path: string;
  readonly change: "added" | "removed" | "changed";
  readonly a?: string;
  readonly b?: string;
}

export interface LockDiff extends LockChanges {
  readonly id_a: string | null;
  readonly id_b: string | null;
  readonly same_id: boolean;
  readonly changes: readonly LockChange[];
  /** What Validate finds wrong with each side (a lockfile with problems has no EnvironmentID here). */
  readonly problems_a: readonly Issue[];
  readonly problems_b: readonly Issue[];
}

function cmp(out: LockChange[], path: string, a: string | undefined, b: string | undefined, secret = false): void {
  if (a === b) return;
  const show = (v: string | undefined): string | undefined => (v === undefined ? undefined : secret ? "(value hidden)" : v);
  const change = a === undefined ? "added" : b === undefined ? "removed" : "changed";
  out.push({ path, change, ...(a !== undefined ? { a: show(a)! } : {}), ...(b !== undefined ? { b: show(b)! } : {}) });
}

function maps(out: LockChange[], path: string, a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>, secret: boolean): void {
  for (const k of [...new Set([...a.keys(), ...b.keys()])].sort(compareBytes)) cmp(out, `${path}/${k}`, a.get(k), b.get(k), secret);
}

function layerSummary(l: LockLayer): string {
  return `${l.sha256 ?? "(no digest)"} ${l.size} bytes at ${l.mount_order ?? "-"}`;
}

/** One side of a package change as a field value: `1.26.4 sha256:…`, `(any version)` for a request without one; undefined where absent. */
function packageText(p: PackageChange, side: "from" | "to"): string | undefined {
  const [v, d] = side === "from" ? [p.from, p.from_sha256] : [p.to, p.to_sha256];
  if ((side === "from" && p.change === "added") || (side === "to" && p.change === "removed")) return undefined;
  return `${v ?? "(any version)"}${d !== null ? ` ${d}` : ""}`;
}

export function diffLocks(a: Lockfile, b: Lockfile, problems_a: readonly Issue[] = [], problems_b: readonly Issue[] = []): LockDiff {
  const out: LockChange[] = [];
  cmp(out, "/base/name", a.base.name, b.base.name);
  cmp(out, "/base/arch", a.base.arch, b.base.arch);
  cmp(out, "/base/digest", a.base.digest, b.base.digest);
  cmp(out, "/base/capabilities", a.base.capabilities.map(capabilityString).join(", "), b.base.capabilities.map(capabilityString).join(", "));
  const la = new Map(a.layers.map((l) => [l.name, l]));
  const lb = new Map(b.layers.map((l) => [l.name, l]));
  for (const name of [...new Set([...la.keys(), ...lb.keys()])].sort(compareBytes)) {
    const x = la.get(name);
    const y = lb.get(name);
    cmp(out, `/layers/${name}/version`, x?.version, y?.version);
    if (x && y) cmp(out, `/layers/${name}`, layerSummary(x), layerSummary(y));
  }
  maps(out, "/env", a.env, b.env, true);
  cmp(out, "/on_ready", JSON.stringify(a.on_ready), JSON.stringify(b.on_ready));
  const model = lockChanges(a, b);
  for (const f of model.formations) cmp(out, childPath("/formations", f.name), f.from ?? undefined, f.to ?? undefined);
  for (const d of model.defaults) cmp(out, childPath("/defaults", d.name), d.from ?? undefined, d.to ?? undefined);
  for (const p of model.packages)
    cmp(out, childPath(childPath(childPath("/packages", p.set), "packages"), p.name), packageText(p, "from"), packageText(p, "to"));
  for (const r of model.requests)
    cmp(
      out,
      childPath(childPath(childPath("/packages", r.set), "requests"), r.name),
      r.from ?? (r.change === "added" ? undefined : "(any)"),
      r.to ?? (r.change === "removed" ? undefined : "(any)"),
    );
  for (const t of model.package_sets) {
    const at = childPath("/packages", t.set);
    if (t.change === "target-changed") cmp(out, childPath(at, "target"), t.from_target ?? undefined, t.to_target ?? undefined);
    else out.push({ path: at, change: t.change, ...(t.change === "removed" ? { a: t.set } : { b: t.set }) });
  }
  cmp(out, "/mutable_layer", JSON.stringify(a.mutable_layer ?? null), JSON.stringify(b.mutable_layer ?? null));
  const hosts = (l: Lockfile): string => hostRequirementSet(l.requires_host).map(hostRequirementString).join(", ");
  cmp(out, "/requires_host", hosts(a), hosts(b));
  cmp(out, "/verification_policy", a.spec.verification_policy, b.spec.verification_policy); // the field the files carry (cairn's verdict lives in its records)
  cmp(out, "/profile", a.profile, b.profile);
  cmp(out, "/profile_sha256", a.profile_sha256, b.profile_sha256);
  cmp(out, "/resolved_at", a.resolved_at, b.resolved_at);
  const id_a = isFrozen(a) && problems_a.length === 0 ? environmentId(a) : null;
  const id_b = isFrozen(b) && problems_b.length === 0 ? environmentId(b) : null;
  return { id_a, id_b, same_id: id_a !== null && id_a === id_b, changes: out, problems_a, problems_b, ...model };
}
