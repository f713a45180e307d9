/**
 * What changed between two lockfiles, one entry per thing a person reviews:
 * per layer (added, removed, another version, rebuilt at the same version,
 * moved in the stack), per formation, per Lmod default and per package of
 * every package set (added, removed, another version, another archive at the
 * same version, pinned or unpinned), the way `uv lock` lists upgrades. This
 * is the single comparison: `lock diff` (lockfile-diff.ts) turns it into its
 * field-level changes, `cairn update` sorts those, and the CLI and the HTML
 * page only print it.
 *
 * A package set is matched across the two lockfiles by its manager and
 * conda environment, not by its position, so a set inserted before another
 * does not make every package of the later one look changed. What a set
 * installs is its frozen pins when cairn froze it, the pins the wire gives
 * when the lockfile carries no records (a Strata lockfile), and its requests
 * otherwise; a request is compared on its own only when both sides are
 * frozen, since otherwise the requests are the packages.
 */
import { compareBytes } from "../core/index.ts";
import type { Lockfile, LockLayer } from "./lockfile.ts";
import type { LockPackageSet } from "./freeze/pins.ts";
import { refString } from "./ref.ts";
import { compareVersions } from "./version.ts";

/** One layer as a change shows it: where it sits, its bytes, and why it is there. */
export interface LayerFacts {
  readonly id: string;
  readonly version: string;
  /** `null` while unfrozen. */
  readonly sha256: string | null;
  readonly size: number;
  readonly mount_order: number;
  readonly satisfied_by: string;
  readonly from_formation: string | null;
}

export type LayerChangeKind = "added" | "removed" | "version-changed" | "rebuilt" | "moved";

/** Layers are paired by name (one version of a layer per lockfile, the resolver's conflict rule). */
export interface LayerChange {
  readonly name: string;
  readonly change: LayerChangeKind;
  readonly a: LayerFacts | null;
  readonly b: LayerFacts | null;
}

export interface FormationChange {
  readonly name: string;
  readonly change: "added" | "removed" | "version-changed";
  readonly from: string | null;
  readonly to: string | null;
}

export interface DefaultChange {
  readonly name: string;
  readonly change: "added" | "removed" | "version-changed";
  /** The default as written (`python@3.12`, `formation:x`). */
  readonly from: string | null;
  readonly to: string | null;
}

/**
 * `pinned`: the same package, a request before and an archive by digest
 * after; `unpinned` the reverse; `digest-changed`: the same version, another
 * archive.
 */
export type PackageChangeKind = "added" | "removed" | "version-changed" | "digest-changed" | "pinned" | "unpinned";

export interface PackageChange {
  /** The set: its manager, and `manager:env` for a conda set with an environment name. */
  readonly set: string;
  readonly manager: string;
  readonly name: string;
  readonly change: PackageChangeKind;
  /** The version on each side (`null`: absent on that side, or a request with no version). */
  readonly from: string | null;
  readonly to: string | null;
  readonly from_sha256: string | null;
  readonly to_sha256: string | null;
}

/** A request of a frozen set, added, removed or asking for another version (the pins show what it chose). */
export interface RequestChange {
  readonly set: string;
  readonly name: string;
  readonly change: "added" | "removed" | "version-changed";
  readonly from: string | null;
  readonly to: string | null;
}

/** A whole set added or removed (its packages are listed one by one too), or frozen for another target. */
export interface PackageSetChange {
  readonly set: string;
  readonly change: "added" | "removed" | "target-changed";
  /** What the frozen pins were chosen for (python, platform…), `k=v` joined; `null` for a set not frozen or absent. */
  readonly from_target: string | null;
  readonly to_target: string | null;
}

export interface LockChanges {
  readonly layers: readonly LayerChange[];
  readonly formations: readonly FormationChange[];
  readonly defaults: readonly DefaultChange[];
  readonly packages: readonly PackageChange[];
  readonly requests: readonly RequestChange[];
  readonly package_sets: readonly PackageSetChange[];
}

export function layerFacts(l: LockLayer): LayerFacts {
  return {
    id: l.id,
    version: l.version,
    sha256: l.sha256 ?? null,
    size: l.size,
    mount_order: l.mount_order,
    satisfied_by: l.satisfied_by,
    from_formation: l.from_formation ?? null,
  };
}

const byName = <T extends { readonly name: string }>(xs: readonly T[]): Map<string, T> => new Map(xs.map((x) => [x.name, x]));
const names = (a: ReadonlyMap<string, unknown>, b: ReadonlyMap<string, unknown>): string[] => [...new Set([...a.keys(), ...b.keys()])].sort(compareBytes);

function layerChanges(a: Lockfile, b: Lockfile): LayerChange[] {
  const la = byName(a.layers);
  const lb = byName(b.layers);
  const out: LayerChange[] = [];
  for (const name of names(la, lb)) {
    const x = la.get(name);
    const y = lb.get(name);
    const fa = x ? layerFacts(x) : null;
    const fb = y ? layerFacts(y) : null;
    let change: LayerChangeKind | undefined;
    if (fa === null) change = "added";
    else if (fb === null) change = "removed";
    else if (fa.version !== fb.version) change = "version-changed";
    else if (fa.sha256 !== fb.sha256 || fa.size !== fb.size || fa.id !== fb.id) change = "rebuilt";
    else if (fa.mount_order !== fb.mount_order) change = "moved";
    if (change !== undefined) out.push({ name, change, a: fa, b: fb });
  }
  return out;
}

function versioned<T extends { readonly name: string }>(
  a: readonly T[],
  b: readonly T[],
  version: (x: T) => string,
): { name: string; change: "added" | "removed" | "version-changed"; x?: T; y?: T }[] {
  const ma = byName(a);
  const mb = byName(b);
  const out: { name: string; change: "added" | "removed" | "version-changed"; x?: T; y?: T }[] = [];
  for (const name of names(ma, mb)) {
    const x = ma.get(name);
    const y = mb.get(name);
    if (x === undefined) out.push({ name, change: "added", y: y! });
    else if (y === undefined) out.push({ name, change: "removed", x });
    else if (version(x) !== version(y)) out.push({ name, change: "version-changed", x, y });
  }
  return out;
}

/** The set's key: its manager, and the conda environment when it names one. */
export function packageSetKey(s: LockPackageSet): string {
  return s.env !== undefined && s.env !== "" ? `${s.manager}:${s.env}` : s.manager;
}

/** Keys of every set, a repeated key numbered by its occurrence (`pip`, `pip#2`) so no set is lost. */
function keyedSets(sets: readonly LockPackageSet[]): Map<string, LockPackageSet> {
  const out = new Map<string, LockPackageSet>();
  const seen = new Map<string, number>();
  for (const s of sets) {
    const k = packageSetKey(s);
    const n = (seen.get(k) ?? 0) + 1;
    seen.set(k, n);
    out.set(n === 1 ? k : `${k}#${n}`, s);
  }
  return out;
}

interface Installed {
  readonly name: string;
  readonly version: string | null;
  readonly sha256: string | null;
}

/** What a set installs: frozen pins, else the wire's pins, else its requests (see the file's comment). */
export function installedPackages(s: LockPackageSet): Installed[] {
  if (s.frozen !== undefined) return s.frozen.pins.map((p) => ({ name: p.name, version: p.version, sha256: p.sha256 }));
  // The wire writes bare hex, cairn's pins `sha256:hex`: one spelling, so the same archive is never "another archive".
  const tagged = (d: string | undefined): string | null => (d === undefined || d === "" ? null : d.startsWith("sha256:") ? d : `sha256:${d}`);
  if (s.pinned !== undefined) return s.pinned.map((p) => ({ name: p.name, version: p.version, sha256: tagged(p.sha256) }));
  return s.packages.map((p) => ({ name: p.name, version: p.version ?? null, sha256: null }));
}

function packageChanges(set: string, manager: string, a: readonly Installed[], b: readonly Installed[]): PackageChange[] {
  const ma = byName(a);
  const mb = byName(b);
  const out: PackageChange[] = [];
  for (const name of names(ma, mb)) {
    const x = ma.get(name);
    const y = mb.get(name);
    let change: PackageChangeKind | undefined;
    if (x === undefined) change = "added";
    else if (y === undefined) change = "removed";
    else if (x.sha256 === null && y.sha256 !== null) change = "pinned";
    else if (x.sha256 !== null && y.sha256 === null) change = "unpinned";
    else if (x.version !== y.version) change = "version-changed";
    else if (x.sha256 !== y.sha256) change = "digest-changed";
    if (change === undefined) continue;
    out.push({
      set,
      manager,
      name,
      change,
      from: x?.version ?? null,
      to: y?.version ?? null,
      from_sha256: x?.sha256 ?? null,
      to_sha256: y?.sha256 ?? null,
    });
  }
  return out;
}

const targetText = (s: LockPackageSet | undefined): string | null =>
  s?.frozen
    ? [...s.frozen.target]
        .sort(([k], [l]) => compareBytes(k, l))
        .map(([k, v]) => `${k}=${v}`)
        .join(" ")
    : null;

export function lockChanges(a: Lockfile, b: Lockfile): LockChanges {
  const formations = versioned(a.formations, b.formations, (f) => f.version).map(
    (c): FormationChange => ({ name: c.name, change: c.change, from: c.x?.version ?? null, to: c.y?.version ?? null }),
  );
  const defaults = versioned(a.defaults, b.defaults, (r) => `${r.kind} ${r.version ?? ""}`).map(
    (c): DefaultChange => ({ name: c.name, change: c.change, from: c.x ? refString(c.x) : null, to: c.y ? refString(c.y) : null }),
  );
  const sa = keyedSets(a.packages);
  const sb = keyedSets(b.packages);
  const packages: PackageChange[] = [];
  const requests: RequestChange[] = [];
  const package_sets: PackageSetChange[] = [];
  for (const key of names(sa, sb)) {
    const x = sa.get(key);
    const y = sb.get(key);
    const manager = (x ?? y)!.manager;
    packages.push(...packageChanges(key, manager, x ? installedPackages(x) : [], y ? installedPackages(y) : []));
    if (x?.frozen !== undefined && y?.frozen !== undefined) {
      for (const c of versioned(x.packages, y.packages, (p) => p.version ?? "")) {
        requests.push({ set: key, name: c.name, change: c.change, from: c.x?.version ?? null, to: c.y?.version ?? null });
      }
    }
    const [ta, tb] = [targetText(x), targetText(y)];
    const change = x === undefined ? "added" : y === undefined ? "removed" : ta !== null && tb !== null && ta !== tb ? "target-changed" : undefined;
    if (change !== undefined) package_sets.push({ set: key, change, from_target: ta, to_target: tb });
  }
  return { layers: layerChanges(a, b), formations, defaults, packages, requests, package_sets };
}

/** `upgrade` or `downgrade` for a version change, by the one version comparison (version.ts). */
export function direction(from: string, to: string): "upgrade" | "downgrade" | "same" {
  const c = compareVersions(to, from);
  return c > 0 ? "upgrade" : c < 0 ? "downgrade" : "same";
}
