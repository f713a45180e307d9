/**
 * `cairn update`: what re-resolving a profile would change in its existing
 * lockfile, the way `uv lock --upgrade --dry-run` reports it. The comparison
 * is `lock diff`'s (lockfile-diff.ts), not a second one: this module only
 * sorts its changes into what a person reviewing an update reads first
 * (layers added, removed, upgraded or downgraded from one version to another,
 * rebuilt at the same version; the base; the package sets) and decides
 * whether anything changes at all.
 *
 * `resolved_at` is left out of that decision: a fresh resolution always has
 * a new time, and counting it would make every update a change, so a
 * lockfile would be rewritten (and its citation broken) when nothing in it
 * moved. Everything else `lock diff` compares counts. A lockfile field that
 * differs although `lock diff` reports nothing under it (`strata_version`, a
 * layer manifest field `lock diff` does not compare) is named
 * in `unlisted`, so "nothing changes" never claims more than was compared;
 * such a field alone is not a change.
 */
import type { Issue } from "../core/index.ts";
import { diffLocks, type LockChange, type LockDiff } from "./lockfile-diff.ts";
import type { Lockfile } from "./lockfile.ts";
import { LOCK_FILE } from "./spec/schema.ts";
import { writeStruct } from "./spec/struct-wire.ts";
import { compareVersions } from "./version.ts";

/** The clock fields a re-resolution always changes (see above): when it resolved, and when it probed the base. */
export const UPDATE_IGNORED_PATHS = ["/resolved_at", "/base/capabilities/probed_at"] as const;

export interface LayerVersionChange {
  readonly name: string;
  readonly from: string;
  readonly to: string;
}

export interface UpdatePlan {
  /** `lock diff` of the existing lockfile (a) against the fresh resolution (b). */
  readonly diff: LockDiff;
  /** True when anything but `resolved_at` differs. */
  readonly changed: boolean;
  readonly layers: {
    readonly added: readonly { readonly name: string; readonly version: string }[];
    readonly removed: readonly { readonly name: string; readonly version: string }[];
    readonly upgraded: readonly LayerVersionChange[];
    readonly downgraded: readonly LayerVersionChange[];
    /** Same name and version, another blob or mount order: `lock diff`'s summary, old → new. */
    readonly rebuilt: readonly { readonly name: string; readonly from: string; readonly to: string }[];
  };
  /** `lock diff`'s changes under `/base`. */
  readonly base: readonly LockChange[];
  /** `lock diff`'s changes under `/packages`. */
  readonly packages: readonly LockChange[];
  /** Every other change but `resolved_at` (env, on_ready, defaults, requires_host, profile, policy…). */
  readonly other: readonly LockChange[];
  /** Top-level lockfile fields that differ where `lock diff` reports no change (not counted as changes). */
  readonly unlisted: readonly string[];
}

/** The written lockfile without the ignored clock fields (a copy; pointers of any depth). */
function withoutIgnored(m: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(m);
  for (const p of UPDATE_IGNORED_PATHS) {
    const keys = p.slice(1).split("/");
    let at: unknown = out;
    for (const k of keys.slice(0, -1)) at = typeof at === "object" && at !== null ? (at as Record<string, unknown>)[k] : undefined;
    if (typeof at === "object" && at !== null) delete (at as Record<string, unknown>)[keys[keys.length - 1]!];
  }
  return out;
}

/** Top-level fields whose written form differs though no change of `changes` is under them (resolved_at aside). */
function unlistedFields(a: Lockfile, b: Lockfile, changes: readonly LockChange[]): string[] {
  const ma = withoutIgnored(writeStruct(a.spec as unknown as Record<string, unknown>, LOCK_FILE));
  const mb = withoutIgnored(writeStruct(b.spec as unknown as Record<string, unknown>, LOCK_FILE));
  const out: string[] = [];
  for (const k of new Set([...Object.keys(ma), ...Object.keys(mb)])) {
    if (JSON.stringify(ma[k]) === JSON.stringify(mb[k])) continue;
    if (changes.some((c) => under(c, `/${k}`))) continue;
    out.push(k);
  }
  return out;
}

const under = (c: LockChange, prefix: string): boolean => c.path === prefix || c.path.startsWith(`${prefix}/`);

/** The plan of replacing `current` (read without Validate, with its `problems`) by `fresh`. */
export function planUpdate(current: Lockfile, fresh: Lockfile, problems: readonly Issue[] = []): UpdatePlan {
  const diff = diffLocks(current, fresh, problems, []);
  const changes = diff.changes.filter((c) => !(UPDATE_IGNORED_PATHS as readonly string[]).includes(c.path));
  const added: { name: string; version: string }[] = [];
  const removed: { name: string; version: string }[] = [];
  const upgraded: LayerVersionChange[] = [];
  const downgraded: LayerVersionChange[] = [];
  const rebuilt: { name: string; from: string; to: string }[] = [];
  const versioned = new Set<string>();
  // lock diff pairs layers by name: `/layers/NAME/version` says added, removed or which versions; `/layers/NAME` the rest
  for (const c of changes) {
    const m = /^\/layers\/(.+)\/version$/.exec(c.path);
    if (m === null) continue;
    const name = m[1]!;
    versioned.add(name);
    if (c.change === "added") added.push({ name, version: c.b! });
    else if (c.change === "removed") removed.push({ name, version: c.a! });
    else (compareVersions(c.b!, c.a!) > 0 ? upgraded : downgraded).push({ name, from: c.a!, to: c.b! });
  }
  for (const c of changes) {
    const m = /^\/layers\/([^/]+)$/.exec(c.path);
    if (m !== null && !versioned.has(m[1]!) && c.change === "changed") rebuilt.push({ name: m[1]!, from: c.a!, to: c.b! });
  }
  return {
    diff,
    changed: changes.length > 0 || problems.length > 0,
    layers: { added, removed, upgraded, downgraded, rebuilt },
    base: changes.filter((c) => under(c, "/base")),
    packages: changes.filter((c) => under(c, "/packages")),
    other: changes.filter((c) => !under(c, "/base") && !under(c, "/packages") && !under(c, "/layers")),
    unlisted: unlistedFields(current, fresh, changes),
  };
}
