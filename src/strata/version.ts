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
 *   `+` or `-`, at least one character. These are exactly the characters a
 *   layer id may hold (core safeComponent), so every valid version can be
 *   built: `~` (Debian's pre-release mark) is refused with a hint, because a
 *   version that validates but cannot become a layer id let `1.0~rc1` pass the
 *   profile and fail `layer build` with PATH_UNSAFE.
 * - A segment that starts with a digit compares by its leading number first
 *   (`03` equals `3`, `10` > `9`), then by what follows: a pre-release tail
 *   (`rc1`, `a1`, `b2`, `alpha`, `beta`, `pre`, `dev`, `-beta`, `-rc.1`) sorts
 *   below no tail, and no tail below any other tail (`+local`, `-9`), so
 *   `3.12.0rc1` < `3.12.0` < `3.12.0+local` and `1.0.0-beta` < `1.0.0`. Two
 *   tails of the same kind compare naturally (digit runs as numbers,
 *   `rc2` < `rc10`), then by bytes.
 * - A segment that starts with a digit sorts before one that does not
 *   (`1.0` < `1.rc`); two segments that do not start with a digit compare by
 *   their bytes (ASCII order).
 * - When one version runs out of segments first and all shared segments are
 *   equal, the shorter one is lower (`3.12` < `3.12.0`).
 * - Versions that are still equal (`2026.03` vs `2026.3`) are ordered by their
 *   raw bytes, so the order is total and the same on every host.
 */
import { compareBytes, CairnError } from "../core/index.ts";

export const VERSION_PATTERN = /^[A-Za-z0-9_+-]+(\.[A-Za-z0-9_+-]+)*$/;
const MAX_VERSION = 64;

export function isVersion(s: string): boolean {
  return s.length <= MAX_VERSION && VERSION_PATTERN.test(s);
}

/** Validates `unsafeVersion`; throws MODEL_VALUE naming `path`. */
export function parseVersion(unsafeVersion: unknown, path = ""): string {
  if (typeof unsafeVersion !== "string" || !isVersion(unsafeVersion)) {
    throw new CairnError("MODEL_VALUE", `${JSON.stringify(String(unsafeVersion)).slice(0, 80)} is not a version`, {
      path,
      hint: versionHint(unsafeVersion),
    });
  }
  return unsafeVersion;
}

/** The hint for a refused version: YAML numbers and `~` get their own advice. */
export function versionHint(unsafeVersion: unknown): string {
  if (typeof unsafeVersion === "number") {
    return `YAML read this version as the number ${unsafeVersion} (so 12.10 becomes 12.1): write it in quotes, e.g. version: "12.10"`;
  }
  if (typeof unsafeVersion === "string" && unsafeVersion.includes("~")) {
    return `'~' cannot be part of a layer id: write the pre-release as ${JSON.stringify(unsafeVersion.replaceAll("~", "-")).slice(0, 70)} (it sorts before the release)`;
  }
  return "a version is dotted segments of letters, digits, '_', '+', '-' (e.g. 3.12.1), at most 64 characters";
}

const DIGITS = /^[0-9]+$/;
const LEADING_NUMBER = /^([0-9]+)(.*)$/;
/** A tail that marks a pre-release: PEP 440 (`rc1`, `a1`, `b1`, `dev0`, `.post` is not one), SemVer (`-beta`, `-rc.1`). */
const PRE_RELEASE_TAIL = /^[-_]?(a|b|c|rc|alpha|beta|pre|preview|dev)([0-9]|[-_+]|$)/i;

function numberCompare(a: string, b: string): number {
  const x = a.replace(/^0+(?=.)/, "");
  const y = b.replace(/^0+(?=.)/, "");
  if (x.length !== y.length) return x.length < y.length ? -1 : 1; // no precision limit on long numbers
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Digit runs compare as numbers, other runs by bytes: `rc2` < `rc10`. */
function naturalCompare(a: string, b: string): number {
  const as = a.match(/[0-9]+|[^0-9]+/g) ?? [];
  const bs = b.match(/[0-9]+|[^0-9]+/g) ?? [];
  for (let i = 0; i < Math.min(as.length, bs.length); i++) {
    const x = as[i]!;
    const y = bs[i]!;
    const c = DIGITS.test(x) && DIGITS.test(y) ? numberCompare(x, y) : compareBytes(x, y);
    if (c !== 0) return c < 0 ? -1 : 1;
  }
  return as.length === bs.length ? 0 : as.length < bs.length ? -1 : 1;
}

/** 0: pre-release tail, 1: no tail, 2: any other tail. */
function tailRank(tail: string): number {
  return tail === "" ? 1 : PRE_RELEASE_TAIL.test(tail) ? 0 : 2;
}

function compareSegment(a: string, b: string): number {
  const am = LEADING_NUMBER.exec(a);
  const bm = LEADING_NUMBER.exec(b);
  if (am !== null && bm !== null) {
    const n = numberCompare(am[1]!, bm[1]!);
    if (n !== 0) return n;
    const ra = tailRank(am[2]!);
    const rb = tailRank(bm[2]!);
    if (ra !== rb) return ra < rb ? -1 : 1;
    return naturalCompare(am[2]!, bm[2]!);
  }
  if ((am === null) !== (bm === null)) return am !== null ? -1 : 1;
  const c = compareBytes(a, b);
  return c < 0 ? -1 : c > 0 ? 1 : 0;
}

/** True when some segment carries a pre-release tail (`3.12.0rc1`, `1.0.0-beta`): an unversioned ref does not pick it while a release fits. */
export function isPrerelease(version: string): boolean {
  return version.split(".").some((seg) => {
    const m = LEADING_NUMBER.exec(seg);
    return m !== null && tailRank(m[2]!) === 0;
  });
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
