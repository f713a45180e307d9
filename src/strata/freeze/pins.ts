/**
 * Frozen packages in an environment lockfile: a package set (`manager`,
 * `packages`) that `cairn freeze` resolved carries `frozen`, the exact archive
 * of every package it installs (requests and their dependencies), each by
 * filename, sha256 and size, for a named target (Python, platform, conda
 * subdir, R). A set without `frozen` is unpinned, and the lockfile's caveats
 * say so.
 *
 * The EnvironmentID covers `frozen` except where the index was
 * (`frozen/index`) and where each archive was fetched (`pins/N/url`): the
 * same archives pinned from a mirror are the same environment. Validate
 * (read here, called by lockfile.ts) holds pins to one rule set: sha256
 * digests well-formed, sizes safe integers, names unique within a set, pins
 * sorted by name, and kinds that belong to the set's manager.
 */
import { type Checker, childPath, compareBytes, isDigest, sortedRecord, type JsonModel, type Sha256Digest } from "../../core/index.ts";
import type { PackageManager, PackageSet } from "../profile-model.ts";

export const PIN_KINDS = { pip: ["wheel", "sdist"], conda: ["conda"], cran: ["cran"] } as const satisfies Record<PackageManager, readonly string[]>;
export type PinKind = (typeof PIN_KINDS)[PackageManager][number];

export interface PackagePin {
  readonly name: string;
  readonly version: string;
  readonly kind: PinKind;
  readonly filename: string;
  readonly sha256: Sha256Digest;
  readonly size: number;
  /** Where the archive was read (provenance, not in the EnvironmentID). */
  readonly url: string;
  /** The requirements that chose it: `request: numpy>=1` or `pandas 2.2.0: numpy>=1.26`. */
  readonly requested_by: readonly string[];
  /** `unknown` when the archive's dependencies cannot be known without building it (an sdist without static metadata). */
  readonly dependencies?: "unknown";
}

export interface FrozenPackages {
  /** The index, channel or repository (provenance, not in the EnvironmentID). */
  readonly index: string;
  /** What the pins were chosen for: python, platform, subdir, r. */
  readonly target: ReadonlyMap<string, string>;
  readonly pins: readonly PackagePin[];
}

/** A package set as the lockfile holds it: the profile's request, and its pins once frozen. */
export interface LockPackageSet extends PackageSet {
  readonly frozen?: FrozenPackages;
  /**
   * The pins as a lockfile without cairn's records gives them (a Strata
   * lockfile): name, version and, when known, sha256; no archive details, so
   * nothing can be fetched or placed from them.
   */
  readonly pinned?: readonly { readonly name: string; readonly version: string; readonly sha256?: string }[];
}

export const FROZEN_FIELDS = ["index", "target", "pins"] as const;
export const PIN_FIELDS = ["name", "version", "kind", "filename", "sha256", "size", "url", "requested_by", "dependencies"] as const;
/** The parts of `frozen` the EnvironmentID leaves out, as pointers below a package set. */
export const FROZEN_PROVENANCE = ["/frozen/index", "/frozen/pins/*/url"] as const;

const TARGET_KEYS = ["python", "platform", "subdir", "r"];
const FILENAME = /^[A-Za-z0-9][A-Za-z0-9._+!-]{0,254}$/;

export function frozenToModel(f: FrozenPackages): Record<string, unknown> {
  return {
    index: f.index,
    target: sortedRecord(f.target),
    pins: f.pins.map((p) => ({
      name: p.name,
      version: p.version,
      kind: p.kind,
      filename: p.filename,
      sha256: p.sha256,
      size: p.size,
      url: p.url,
      requested_by: [...p.requested_by],
      ...(p.dependencies !== undefined ? { dependencies: p.dependencies } : {}),
    })),
  };
}

/** Reads `frozen` of the package set at `p` (manager `manager`); issues go to `c`, rules between fields to `rules`. */
export function readFrozen(c: Checker, rules: Checker, v: JsonModel, p: string, manager: PackageManager | undefined): FrozenPackages | undefined {
  const o = c.object(v, p, FROZEN_FIELDS);
  if (o === undefined) return undefined;
  const index = c.string(c.required(o, "index", p), `${p}/index`, { nonEmpty: true, max: 4096 });
  const target = c.stringMap(c.required(o, "target", p), `${p}/target`) ?? new Map<string, string>();
  for (const k of target.keys())
    if (!TARGET_KEYS.includes(k)) c.add(childPath(`${p}/target`, k), `unknown target "${k}" (${TARGET_KEYS.join(", ")})`, "MODEL_UNKNOWN_FIELD");
  const pins: PackagePin[] = [];
  c.array(c.required(o, "pins", p), `${p}/pins`)?.forEach((x, i) => {
    const pp = `${p}/pins/${i}`;
    const po = c.object(x, pp, PIN_FIELDS);
    if (po === undefined) return;
    const name = c.string(c.required(po, "name", pp), `${pp}/name`, { nonEmpty: true, max: 200 });
    const version = c.string(c.required(po, "version", pp), `${pp}/version`, { nonEmpty: true, max: 128 });
    const kind = c.string(c.required(po, "kind", pp), `${pp}/kind`);
    if (kind !== undefined && manager !== undefined && !(PIN_KINDS[manager] as readonly string[]).includes(kind))
      c.add(`${pp}/kind`, `a ${manager} pin is ${PIN_KINDS[manager].join(" or ")}`, "MODEL_VALUE");
    const filename = c.string(c.required(po, "filename", pp), `${pp}/filename`, { pattern: FILENAME });
    const sha = c.required(po, "sha256", pp);
    if (sha !== undefined && (typeof sha !== "string" || !isDigest(sha) || !sha.startsWith("sha256:")))
      c.add(`${pp}/sha256`, "a pin's digest must be sha256:<64 lowercase hex>", "DIGEST_INVALID");
    const size = c.integer(c.required(po, "size", pp), `${pp}/size`, { min: 0 });
    const url = c.string(c.required(po, "url", pp), `${pp}/url`, { nonEmpty: true, max: 8192 });
    const requested_by = c.stringArray(c.required(po, "requested_by", pp), `${pp}/requested_by`) ?? [];
    const deps = Object.hasOwn(po, "dependencies") ? c.string(po.dependencies, `${pp}/dependencies`) : undefined;
    if (deps !== undefined && deps !== "unknown") c.add(`${pp}/dependencies`, 'dependencies is "unknown" or absent', "MODEL_VALUE");
    if (name === undefined || version === undefined || kind === undefined || filename === undefined || size === undefined || url === undefined) return;
    if (typeof sha !== "string" || !isDigest(sha)) return;
    pins.push({
      name,
      version,
      kind: kind as PinKind,
      filename,
      sha256: sha as Sha256Digest,
      size,
      url,
      requested_by,
      ...(deps === "unknown" ? { dependencies: deps } : {}),
    });
  });
  for (let i = 1; i < pins.length; i++) {
    // sorted and unique, so one set of pins has one spelling (and one EnvironmentID)
    if (compareBytes(pins[i - 1]!.name, pins[i]!.name) >= 0)
      rules.add(`${p}/pins/${i}/name`, "pins are sorted by name and each name is pinned once", "LOCK_INVALID");
  }
  if (index === undefined) return undefined;
  return { index, target, pins };
}
