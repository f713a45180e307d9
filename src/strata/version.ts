/**
 * The single definition of version comparison in cairn's layered
 * environments. Every place that orders versions (picking the highest
 * satisfying layer, checking a requirement's bounds, a version prefix) calls
 * `compareVersions` or `versionHasPrefix`; nothing compares version strings
 * directly, because "3.10" < "3.9" as strings and a second definition would let
 * the resolver and the requirement checker disagree.
 *
 * The rule:
 * - A version is dot-separated segments; a segment is letters, digits, `_`,
 *   `+`, `~` or `-`, at least one character.
 * - Two segments that are both all digits compare as numbers (`03` equals `3`
 *   numerically); a numeric segment sorts before a non-numeric one (`1.0` <
 *   `1.rc`); two non-numeric segments compare by their bytes (ASCII order).
 * - When one version runs out of segments first and all shared segments are
 *   equal, the shorter one is lower (`3.12` < `3.12.0`).
 * - Versions that are still equal (`2026.03` vs `2026.3`) are ordered by their
 *   raw bytes, so the order is total and the same on every host.
 */
import { compareBytes, CairnError } from "../core/index.ts";

export const VERSION_PATTERN = /^[A-Za-z0-9_+~-]+(\.[A-Za-z0-9_+~-]+)*$/;
const MAX_VERSION = 64;

export function isVersion(s: string): boolean {
  return s.length <= MAX_VERSION && VERSION_PATTERN.test(s);
}

/** Validates `unsafeVersion`; throws MODEL_VALUE naming `path`. */
export function parseVersion(unsafeVersion: unknown, path = ""): string {
  if (typeof unsafeVersion !== "string" || !isVersion(unsafeVersion)) {
    throw new CairnError("MODEL_VALUE", `${JSON.stringify(String(unsafeVersion)).slice(0, 80)} is not a version`, {
      path,
      hint: "a version is dotted segments of letters, digits, '_', '+', '~', '-' (e.g. 3.12.1), at most 64 characters",
    });
  }
  return unsafeVersion;
}

const DIGITS = /^[0-9]+$/;

function compareSegment(a: string, b: string): number {
  const an = DIGITS.test(a);
  const bn = DIGITS.test(b);
  if (an && bn) {
    const x = a.replace(/^0+(?=.)/, "");
    const y = b.replace(/^0+(?=.)/, "");
    if (x.length !== y.length) return x.length < y.length ? -1 : 1; // no precision limit on long numbers
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (an !== bn) return an ? -1 : 1;
  return compareBytes(a, b);
}

/** Segment-wise order only (no byte tie-break): 0 when the versions are numerically equal. */
export function compareVersionValues(a: string, b: string): number {
  const as = a.split(".");
  const bs = b.split(".");
  const n = Math.min(as.length, bs.length);
  for (let i = 0; i < n; i++) {
    const c = compareSegment(as[i]!, bs[i]!);
    if (c !== 0) return c;
  }
  return as.length === bs.length ? 0 : as.length < bs.length ? -1 : 1;
}

/** The total order on versions: segment-wise, then raw bytes. Returns -1, 0 or 1. */
export function compareVersions(a: string, b: string): number {
  const c = compareVersionValues(a, b);
  if (c !== 0) return c;
  const raw = compareBytes(a, b);
  return raw < 0 ? -1 : raw > 0 ? 1 : 0;
}

/**
 * True when `version` starts with the segments of `prefix` (segment-wise, so
 * `3.1` is not a prefix of `3.12`). An empty prefix matches every version.
 */
export function versionHasPrefix(version: string, prefix: string): boolean {
  if (prefix === "") return true;
  const vs = version.split(".");
  const ps = prefix.split(".");
  if (ps.length > vs.length) return false;
  return ps.every((p, i) => compareSegment(p, vs[i]!) === 0);
}
