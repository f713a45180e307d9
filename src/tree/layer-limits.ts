/**
 * Named limits for reading OCI layouts and applying layers (workload assembly,
 * the base probe, strata blobs). Every bound on a hostile OCI layout or
 * tar stream is listed here with its default and unit, and exceeding one
 * raises LIMIT_EXCEEDED naming it (see core `checkLimit`).
 *
 * The byte defaults are sized for the store and a root disk, not for guest
 * RAM: every assembled tree lands in the content store on the host's disk,
 * and a tree of more than 64 MiB runs from a root disk by default (the
 * guest's RAM bound is `vm.image-bytes` of an initramfs root, checked by the
 * runs code). So the layers' sizes default to 16 GiB stored and 32 GiB
 * expanded: the images people run (CUDA and PyTorch images of 5–15 GB) fit;
 * a zip bomb still stops at a named bound. The memory of assembly is bounded
 * by `entries`, not by bytes (file contents are streamed, never held). A
 * spec may lower any limit or explicitly raise it;
 * unknown names are refused. Limits only decide whether an input is accepted;
 * they never change an accepted tree, so they are not part of any identity.
 */
import { Checker, checkLimit, childPath, type JsonModel } from "../core/index.ts";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export const LIMIT_DEFAULTS = Object.freeze({
  /** Bytes of each of `oci-layout`, `index.json`, a manifest and a config. */
  ociJsonBytes: 4 * MiB,
  /** Descriptors in `index.json`, and layers in the selected manifest (each counted separately). */
  descriptors: 256,
  /** Sum of the compressed (as stored) sizes of all layers. */
  compressedBytes: 16 * GiB,
  /** Sum of the uncompressed tar stream sizes of all layers (what gunzip produces; bounds zip bombs). */
  expandedBytes: 32 * GiB,
  /** Tar members across all layers (headers of every kind, extended headers included). */
  entries: 200_000,
  /** Bytes of one normalized member path or symlink target. */
  pathLength: 4096,
  /** Bytes of one path component. */
  componentLength: 255,
  /** Components in one normalized member path. */
  depth: 64,
  /** Bytes of one regular file. */
  fileSize: 256 * MiB,
  /** Bytes of one pax or GNU long-name extended header. */
  extendedHeaderBytes: 64 * 1024,
});

export type LimitName = keyof typeof LIMIT_DEFAULTS;
export type LayerLimits = { readonly [K in LimitName]: number };

export const LIMIT_NAMES: readonly LimitName[] = Object.freeze(Object.keys(LIMIT_DEFAULTS) as LimitName[]);

/** Units for messages: byte limits print as KiB/MiB. */
const BYTE_LIMITS: ReadonlySet<LimitName> = new Set<LimitName>([
  "ociJsonBytes",
  "compressedBytes",
  "expandedBytes",
  "pathLength",
  "componentLength",
  "fileSize",
  "extendedHeaderBytes",
]);

export const DEFAULT_LIMITS: LayerLimits = LIMIT_DEFAULTS;

/**
 * How far a spec may raise each limit. Limits on bytes that are held in one
 * buffer (a JSON document, one file, one extended header) stop below what
 * Node can allocate or decode, so raising them yields a typed refusal here
 * rather than a RangeError deep in a read; the others stop at the largest
 * integer a JSON model carries safely.
 */
export const LIMIT_CEILINGS: { readonly [K in LimitName]: number } = Object.freeze({
  ociJsonBytes: 256 * MiB,
  descriptors: Number.MAX_SAFE_INTEGER,
  compressedBytes: Number.MAX_SAFE_INTEGER,
  expandedBytes: Number.MAX_SAFE_INTEGER,
  entries: Number.MAX_SAFE_INTEGER,
  pathLength: 1 * MiB,
  componentLength: 1 * MiB,
  depth: 1_000_000,
  fileSize: 2048 * MiB,
  extendedHeaderBytes: 16 * MiB,
});

/**
 * Parses the spec's optional `limits` object: `{ <name>: <positive integer> }`
 * for known names only. Missing names keep their default.
 */
export function parseLimits(unsafeValue: JsonModel | undefined, path = "/limits"): LayerLimits {
  if (unsafeValue === undefined) return DEFAULT_LIMITS;
  const c = new Checker("WORKLOAD_SPEC_INVALID");
  const obj = c.object(unsafeValue, path, LIMIT_NAMES);
  const out: { [K in LimitName]: number } = { ...LIMIT_DEFAULTS };
  if (obj !== undefined) {
    for (const name of LIMIT_NAMES) {
      if (obj[name] === undefined) continue;
      const v = c.integer(obj[name], childPath(path, name), { min: 1, max: LIMIT_CEILINGS[name] });
      if (v !== undefined) out[name] = v;
    }
  }
  c.done("limits", `known limits: ${LIMIT_NAMES.join(", ")}`);
  return Object.freeze(out);
}

/** Throws LIMIT_EXCEEDED naming `name` when `value` is over the limit. */
export function enforceLimit(limits: LayerLimits, name: LimitName, value: number, path = ""): void {
  checkLimit(name, value, limits[name], path, BYTE_LIMITS.has(name) ? "bytes" : "count");
}

/** The plain model of the effective limits (for `workload show` and locks). */
export function limitsModel(limits: LayerLimits): Record<LimitName, number> {
  const out = {} as Record<LimitName, number>;
  for (const name of LIMIT_NAMES) out[name] = limits[name];
  return out;
}
