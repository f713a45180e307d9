/**
 * Feature dependencies and install order, as the devcontainers CLI computes
 * them (its `containerFeaturesOrder`, read from @devcontainers/cli 0.89.0):
 *
 *   1. a worklist: the declared features, then every `dependsOn` entry of
 *      every feature reached, breadth first; a feature equal to one already
 *      in the worklist (same artifact digest and same options) is not added
 *      again. `installsAfter` entries are soft: they are looked up (for their
 *      aliases) but do not join the worklist, and one that names no worklist
 *      feature is dropped;
 *   2. `overrideFeatureInstallOrder`: the i-th of n entries gives every
 *      worklist feature it names (same resource, or one of its aliases:
 *      `currentId`/`id` and `legacyIds`) the round priority n - i;
 *   3. rounds: a feature is ready when all its `dependsOn` and remaining
 *      `installsAfter` are installed; of the ready ones only those of the
 *      highest priority install this round, sorted by the CLI's comparison
 *      (namespace, id or alias, tag, options, digest; `localeCompare`). A
 *      round with nothing ready is a cycle.
 *
 * cairn refuses what the CLI would fail on, naming the feature: a cycle, a
 * dependency that cannot be fetched, a closure over `max_feature_closure`;
 * and one thing the CLI ignores: an override entry that names no feature of
 * the closure (it would say an order that means nothing).
 *
 * A feature the lock names is fetched at the lock's digest (as the CLI does),
 * and the registry's bytes must match it. Only OCI features have metadata
 * here; local and https features are leaves (their dependencies, if any, are
 * not followed: cairn does not fetch tarballs, and local folders are hashed,
 * not read for metadata).
 */
import { CairnError, checkLimit, devcontainersCliOrder, type Sha256Digest } from "../core/index.ts";
import { parseImageRef, type ImageRef } from "../oci/index.ts";
import type { FeatureMetadata, FeatureOptionValues, FeatureSource } from "./feature-metadata.ts";
import { normalizeFeatureId } from "./reference.ts";

/** A closure with more features than this is refused (limit `max_feature_closure`). */
export const MAX_FEATURE_CLOSURE = 256;
/**
 * One resolution reads at most this many feature artifacts (limit
 * `max_feature_fetches`): a feature listing thousands of dependencies that
 * are all one feature adds one to the closure but costs a registry round trip
 * each.
 */
export const MAX_FEATURE_FETCHES = 1024;

/** A feature reference split the way the devcontainers CLI splits it (lowercased). */
export interface CliFeatureRef {
  readonly registry: string;
  readonly namespace: string;
  readonly id: string;
  /** `namespace/id`. */
  readonly path: string;
  /** `registry/path`. */
  readonly resource: string;
  readonly tag: string | undefined;
  readonly digest: string | undefined;
}

/** The CLI's parse of an OCI feature id (lowercased; `@digest`, else `:tag` after the last `/`, else `latest`). */
export function cliFeatureRef(userFeatureId: string): CliFeatureRef {
  const a = userFeatureId.toLowerCase();
  const at = a.lastIndexOf("@");
  const colon = a.lastIndexOf(":");
  let resource = a;
  let tag: string | undefined;
  let digest: string | undefined;
  if (at !== -1) {
    resource = a.slice(0, at);
    digest = a.slice(at + 1);
  } else if (colon !== -1 && colon > a.lastIndexOf("/")) {
    resource = a.slice(0, colon);
    tag = a.slice(colon + 1);
  } else tag = "latest";
  const s = resource.split("/");
  const id = s[s.length - 1] ?? "";
  const namespace = s.slice(1, -1).join("/");
  return { registry: s[0] ?? "", namespace, id, path: `${namespace}/${id}`, resource, tag, digest };
}

/** One feature of the closure. */
export interface FeatureNode {
  readonly kind: "declared" | "dependency";
  /** The id as written (in the devcontainer.json, or in the `dependsOn` of the feature that pulled it in). */
  readonly userFeatureId: string;
  readonly options: FeatureOptionValues | undefined;
  /** Present for OCI features. */
  readonly oci:
    | { readonly ref: CliFeatureRef; readonly digest: Sha256Digest; readonly metadata: FeatureMetadata; readonly aliases: readonly string[] }
    | undefined;
  readonly dependsOn: FeatureNode[];
  readonly installsAfter: SoftRef[];
  roundPriority: number;
}

/** An `installsAfter` or override entry: what it names, for matching only. */
export interface SoftRef {
  readonly userFeatureId: string;
  readonly ref: CliFeatureRef;
  readonly aliases: readonly string[];
  /** False when it could not be fetched: then it satisfies nothing. */
  readonly matches: boolean;
}

export interface LockedDigests {
  /** The digest a lock gives for `userFeatureId` (the CLI's `integrity`), if it has an entry. */
  (userFeatureId: string): Sha256Digest | undefined;
}

export interface ClosureOptions {
  readonly source: FeatureSource;
  /** Digests from a lockfile: a feature it names is fetched at that digest, not its tag. */
  readonly locked?: LockedDigests;
  readonly overrideFeatureInstallOrder?: readonly string[];
  readonly maxClosure?: number;
  readonly maxFetches?: number;
}

export interface FeatureClosure {
  /** Every feature of the closure, in install order. */
  readonly order: readonly FeatureNode[];
}

function dependencyError(feature: string, message: string, cause?: unknown): CairnError {
  return new CairnError("FEATURE_DEPENDENCY", `feature ${JSON.stringify(feature)}: ${message}`, {
    path: feature,
    hint: "fix the feature's dependsOn/installsAfter, or the devcontainer.json's overrideFeatureInstallOrder; see docs/manifest.md",
    ...(cause === undefined ? {} : { cause }),
  });
}

/** The CLI's comparison of option values (its `compareTo` on options). */
function compareOptions(a: unknown, b: unknown): number {
  if (typeof a === "string" && typeof b === "string") return devcontainersCliOrder(a, b);
  if (typeof a === "boolean" && typeof b === "boolean") return a === b ? 0 : a ? 1 : -1;
  if (typeof a === "object" && typeof b === "object" && a !== null && b !== null) {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    if (ka.length !== kb.length) return ka.length - kb.length;
    for (let i = 0; i < ka.length; i++) {
      if (ka[i] !== kb[i]) return devcontainersCliOrder(ka[i]!, kb[i]!);
      const x: unknown = Reflect.get(a, ka[i]!);
      const y: unknown = Reflect.get(b, kb[i]!);
      if (typeof x === "string" && typeof y === "string" && x !== y) return devcontainersCliOrder(x, y);
      if (typeof x === "boolean" && typeof y === "boolean" && x !== y) return x ? 1 : -1;
    }
    return 0;
  }
  return devcontainersCliOrder(typeof a, typeof b);
}

const withoutVersion = (id: string): string => id.replace(/[:@][^/]*$/, "");

/** The CLI's order of two features within a round (0: the same feature). */
function compareNodes(a: FeatureNode, b: FeatureNode): number {
  if ((a.oci === undefined) !== (b.oci === undefined)) return devcontainersCliOrder(a.userFeatureId, b.userFeatureId);
  if (a.oci === undefined || b.oci === undefined) {
    const c = devcontainersCliOrder(withoutVersion(a.userFeatureId), withoutVersion(b.userFeatureId));
    return c !== 0 ? c : compareOptions(a.options, b.options);
  }
  const [x, y] = [a.oci, b.oci];
  if (x.digest === y.digest && compareOptions(a.options, b.options) === 0) return 0;
  const nx = `${x.ref.registry}/${x.ref.namespace}`;
  const ny = `${y.ref.registry}/${y.ref.namespace}`;
  if (nx !== ny) return devcontainersCliOrder(nx, ny);
  const shared = x.aliases.some((p) => y.aliases.includes(p));
  if (!shared) {
    const c = devcontainersCliOrder(x.ref.id, y.ref.id);
    if (c !== 0) return c;
  }
  if (x.ref.tag !== undefined && y.ref.tag !== undefined && x.ref.tag !== y.ref.tag) return devcontainersCliOrder(x.ref.tag, y.ref.tag);
  const o = compareOptions(a.options, b.options);
  if (o !== 0) return o;
  return x.digest !== y.digest ? devcontainersCliOrder(x.digest, y.digest) : 0;
}

const same = (a: FeatureNode, b: FeatureNode): boolean => (a.oci === undefined) === (b.oci === undefined) && compareNodes(a, b) === 0;

/** Whether installed feature `a` satisfies the soft reference `s` (the CLI's `satisfiesSoftDependency`). */
function satisfies(a: FeatureNode, s: SoftRef): boolean {
  if (!s.matches) return false;
  if (a.oci === undefined) return withoutVersion(a.userFeatureId) === withoutVersion(s.userFeatureId);
  return a.oci.ref.resource === s.ref.resource || s.aliases.some((p) => `${s.ref.registry}/${s.ref.namespace}/${p}` === a.oci!.ref.resource);
}

const aliasesOf = (m: FeatureMetadata, ref: CliFeatureRef): string[] => [m.currentId ?? m.id ?? ref.id, ...m.legacyIds];

function ociRef(userFeatureId: string, path: string): ImageRef | undefined {
  const n = normalizeFeatureId(userFeatureId);
  if (!n.ok) throw dependencyError(userFeatureId, `is not a feature id (${n.why})`);
  return n.kind === "oci" ? parseImageRef(n.id, path) : undefined;
}

/** Fetches one feature's artifact (at the lock's digest when it has one), naming the feature on failure. */
async function fetchFeature(userFeatureId: string, opts: ClosureOptions, pulledBy: string | undefined) {
  const ref = ociRef(userFeatureId, userFeatureId);
  if (ref === undefined) return undefined;
  const cli = cliFeatureRef(userFeatureId);
  const locked = opts.locked?.(userFeatureId);
  try {
    const digest = locked ?? (await opts.source.resolve(ref, userFeatureId));
    const art = await opts.source.read(ref, digest, userFeatureId);
    return { ref: cli, digest: art.digest, metadata: art.metadata, aliases: aliasesOf(art.metadata, cli) };
  } catch (e) {
    if (locked !== undefined && e instanceof CairnError && (e.code === "DIGEST_MISMATCH" || e.code === "REMOTE_REFUSED" || e.code === "SIZE_MISMATCH")) {
      throw new CairnError("MANIFEST_MISMATCH", `the locked digest of feature ${JSON.stringify(userFeatureId)} is not what its registry serves (${e.code})`, {
        path: userFeatureId,
        hint: "the lockfile and the registry disagree: re-pin with `cairn manifest pin --write`, or find out who changed the registry",
        cause: e,
      });
    }
    if (pulledBy === undefined || (e instanceof CairnError && e.code === "LIMIT_EXCEEDED")) throw e;
    const code = e instanceof CairnError ? ` (${e.code})` : "";
    throw dependencyError(pulledBy, `its dependency ${JSON.stringify(userFeatureId)} cannot be fetched${code}`, e);
  }
}

/**
 * A soft reference: fetched for its aliases. One that cannot be fetched
 * matches nothing (the CLI falls back to a GitHub-release lookup whose type
 * never equals an OCI feature's), so an `installsAfter` naming it is dropped.
 */
async function softRef(userFeatureId: string, opts: ClosureOptions, pulledBy: string): Promise<SoftRef> {
  try {
    const f = await fetchFeature(userFeatureId, opts, pulledBy);
    return { userFeatureId, ref: f?.ref ?? cliFeatureRef(userFeatureId), aliases: f?.aliases ?? [], matches: f !== undefined };
  } catch (e) {
    if (e instanceof CairnError && e.code === "LIMIT_EXCEEDED") throw e;
    return { userFeatureId, ref: cliFeatureRef(userFeatureId), aliases: [], matches: false };
  }
}

/** Resolves the closure of `declared` (id as written → options) and its install order; see the module comment. */
export async function resolveFeatureClosure(
  declared: readonly (readonly [string, FeatureOptionValues | undefined])[],
  opts: ClosureOptions,
): Promise<FeatureClosure> {
  const max = opts.maxClosure ?? MAX_FEATURE_CLOSURE;
  const maxFetches = opts.maxFetches ?? MAX_FEATURE_FETCHES;
  let fetches = 0;
  const inner = opts.source;
  opts = {
    ...opts,
    source: {
      resolve: (ref, feature) => inner.resolve(ref, feature),
      read: (ref, digest, feature) => {
        checkLimit("max_feature_fetches", ++fetches, maxFetches, feature, "count");
        return inner.read(ref, digest, feature);
      },
    },
  };
  type Pending = {
    kind: FeatureNode["kind"];
    userFeatureId: string;
    options: FeatureOptionValues | undefined;
    pulledBy: string | undefined;
    into: FeatureNode[] | undefined;
  };
  const queue: Pending[] = declared.map(([id, options]) => ({ kind: "declared", userFeatureId: id, options, pulledBy: undefined, into: undefined }));
  const worklist: FeatureNode[] = [];
  while (queue.length > 0) {
    const p = queue.shift()!;
    const oci = await fetchFeature(p.userFeatureId, opts, p.pulledBy);
    const node: FeatureNode = { kind: p.kind, userFeatureId: p.userFeatureId, options: p.options, oci, dependsOn: [], installsAfter: [], roundPriority: 0 };
    p.into?.push(node);
    if (worklist.some((w) => same(w, node))) continue;
    checkLimit("max_feature_closure", worklist.length + 1, max, p.pulledBy ?? p.userFeatureId, "count");
    if (oci !== undefined) {
      for (const [id, o] of oci.metadata.dependsOn)
        queue.push({ kind: "dependency", userFeatureId: id, options: o, pulledBy: p.userFeatureId, into: node.dependsOn });
      for (const id of oci.metadata.installsAfter) node.installsAfter.push(await softRef(id, opts, p.userFeatureId));
    }
    worklist.push(node);
  }

  const override = opts.overrideFeatureInstallOrder ?? [];
  for (let i = override.length - 1; i >= 0; i--) {
    const entry = override[i]!;
    const s = await softRef(entry, opts, entry);
    const priority = override.length - i;
    const named = worklist.filter((w) => satisfies(w, s));
    if (named.length === 0) throw dependencyError(entry, "is named in overrideFeatureInstallOrder but is not a feature of the resolved closure");
    for (const w of named) w.roundPriority = Math.max(w.roundPriority, priority);
  }

  for (const w of worklist) {
    for (let i = w.installsAfter.length - 1; i >= 0; i--) if (!worklist.some((x) => satisfies(x, w.installsAfter[i]!))) w.installsAfter.splice(i, 1);
  }
  const order: FeatureNode[] = [];
  let left = [...worklist];
  while (left.length > 0) {
    const ready = left.filter(
      (q) => q.dependsOn.every((d) => order.some((b) => same(b, d))) && q.installsAfter.every((s) => order.some((b) => satisfies(b, s))),
    );
    if (ready.length === 0) {
      const names = left.map((q) => JSON.stringify(q.userFeatureId)).join(", ");
      throw dependencyError(left[0]!.userFeatureId, `is in a dependency cycle (features left unordered: ${names})`);
    }
    const top = Math.max(...ready.map((q) => q.roundPriority));
    const round = ready.filter((q) => q.roundPriority === top);
    left = left.filter((q) => !round.some((r) => same(r, q)));
    round.sort(compareNodes);
    order.push(...round);
  }
  return { order };
}
