/**
 * `lock diff A B`: what changed between two lockfiles, field by field, and
 * whether their EnvironmentIDs differ. Environment variable values are never
 * printed (they may be secrets): a changed variable is named, not shown.
 */
import { capabilityString, hostRequirementSet, hostRequirementString } from "./capability.ts";
import { compareBytes, type Issue } from "../core/index.ts";
import { environmentId } from "./env-id.ts";
import { refString } from "./ref.ts";
import { isFrozen, type LockLayer, type Lockfile } from "./lockfile.ts";

export interface LockChange {
  readonly path: string;
  readonly change: "added" | "removed" | "changed";
  readonly a?: string;
  readonly b?: string;
}

export interface LockDiff {
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
  return `${l.sha256 ?? "(no digest)"} at ${l.mount_order ?? "-"}`;
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
  cmp(out, "/defaults", a.defaults.map(refString).join(", "), b.defaults.map(refString).join(", "));
  for (let i = 0; i < Math.max(a.packages.length, b.packages.length); i++) {
    const [x, y] = [a.packages[i], b.packages[i]];
    const request = (s: typeof x) => s && JSON.stringify({ manager: s.manager, packages: s.packages, env: s.env });
    cmp(out, `/packages/${i}`, request(x), request(y));
    // frozen pins, one line each (name version sha256) and the target they were chosen for
    const pins = (s: typeof x) =>
      s?.frozen &&
      `${[...s.frozen.target].map(([k, v]) => `${k}=${v}`).join(" ")}: ${s.frozen.pins.map((p) => `${p.name} ${p.version} ${p.sha256}`).join(", ")}`;
    cmp(out, `/packages/${i}/frozen`, pins(x), pins(y));
    const pinned = (s: typeof x) => s?.pinned?.map((p) => `${p.name} ${p.version} ${p.sha256 ?? "(no digest)"}`).join(", ");
    cmp(out, `/packages/${i}/pinned`, pinned(x), pinned(y));
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
  return { id_a, id_b, same_id: id_a !== null && id_a === id_b, changes: out, problems_a, problems_b };
}
