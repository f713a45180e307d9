/**
 * Which archives a target Python can install: wheel filenames (PEP 427,
 * compressed tag sets of PEP 425), the tags a CPython X.Y on a Linux platform
 * accepts in pip's order of preference (packaging.tags: `cpXY-cpXY-PLAT`
 * first, `py3-none-any` last), and the platform tags a base's C library
 * admits (manylinux PEP 600 with the legacy aliases of PEPs 513/571/599,
 * musllinux PEP 656). A base whose C library is unknown (declared, not
 * probed) admits only pure `any` wheels: cairn does not guess a glibc.
 */
import { normalizeName } from "./pep508.ts";
import { parsePep440, type Pep440Version } from "./pep440.ts";

export interface WheelName {
  readonly project: string;
  readonly version: Pep440Version;
  readonly build?: string;
  /** `python-abi-platform` triples, expanded from the compressed sets. */
  readonly tags: readonly string[];
}

export interface SdistName {
  readonly project: string;
  readonly version: Pep440Version;
}

/** Parses `dist-version(-build)?-py-abi-plat.whl`; undefined when it is not a wheel name. */
export function parseWheelName(filename: string): WheelName | undefined {
  if (!filename.endsWith(".whl")) return undefined;
  const parts = filename.slice(0, -4).split("-");
  if (parts.length !== 5 && parts.length !== 6) return undefined;
  const version = parsePep440(parts[1]!);
  if (version === undefined) return undefined;
  const [py, abi, plat] = parts.slice(-3) as [string, string, string];
  const tags: string[] = [];
  for (const p of py.split(".")) for (const a of abi.split(".")) for (const x of plat.split(".")) tags.push(`${p}-${a}-${x}`);
  return { project: normalizeName(parts[0]!), version, ...(parts.length === 6 ? { build: parts[2]! } : {}), tags };
}

const SDIST_SUFFIXES = [".tar.gz", ".zip"] as const;

/** Parses `name-version.tar.gz` (or `.zip`) for a known project; undefined when the name is not that project's sdist. */
export function parseSdistName(filename: string, project: string): SdistName | undefined {
  const suffix = SDIST_SUFFIXES.find((s) => filename.endsWith(s));
  if (suffix === undefined) return undefined;
  const stem = filename.slice(0, -suffix.length);
  const dash = stem.lastIndexOf("-");
  if (dash <= 0 || normalizeName(stem.slice(0, dash)) !== project) return undefined;
  const version = parsePep440(stem.slice(dash + 1));
  return version === undefined ? undefined : { project, version };
}

export interface WheelTarget {
  /** CPython `X.Y` or `X.Y.Z`. */
  readonly python: string;
  /** Linux platform tags, most specific first (empty: only `any`). */
  readonly platforms: readonly string[];
}

/** The platform tags of a glibc `2.M` / musl `1.M` Linux on `arch`, most specific first; none for an unknown libc. */
export function linuxPlatforms(arch: string, libc: { kind: "glibc" | "musl"; version: string } | undefined): string[] {
  if (libc === undefined) return [];
  const [major, minor] = libc.version.split(".").map((x) => Number.parseInt(x, 10));
  if (major === undefined || minor === undefined || Number.isNaN(major) || Number.isNaN(minor)) return [];
  const out: string[] = [];
  if (libc.kind === "musl") {
    if (major !== 1) return [];
    for (let m = minor; m >= 0; m--) out.push(`musllinux_1_${m}_${arch}`);
  } else {
    if (major !== 2) return [];
    const floor = arch === "x86_64" || arch === "i686" ? 5 : 17;
    const legacy: Record<number, string> = { 17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1" };
    for (let m = minor; m >= floor; m--) {
      out.push(`manylinux_2_${m}_${arch}`);
      if (legacy[m] !== undefined) out.push(`${legacy[m]}_${arch}`);
    }
  }
  out.push(`linux_${arch}`);
  return out;
}

/** Every tag the target accepts, best first (packaging.tags.sys_tags for CPython). */
export function compatibleTags(t: WheelTarget): string[] {
  const [maj, min] = t.python.split(".").map((x) => Number.parseInt(x, 10)) as [number, number];
  const cp = `cp${maj}${min}`;
  const out: string[] = [];
  for (const p of t.platforms) out.push(`${cp}-${cp}-${p}`);
  for (const p of t.platforms) out.push(`${cp}-abi3-${p}`);
  for (const p of t.platforms) out.push(`${cp}-none-${p}`);
  for (let m = min - 1; m >= 2; m--) for (const p of t.platforms) out.push(`cp${maj}${m}-abi3-${p}`);
  const pys = [`py${maj}${min}`, `py${maj}`, ...Array.from({ length: min }, (_, i) => `py${maj}${min - 1 - i}`)];
  for (const py of pys) for (const p of t.platforms) out.push(`${py}-none-${p}`);
  out.push(`${cp}-none-any`);
  for (const py of pys) out.push(`${py}-none-any`);
  return out;
}

/** The wheel's best rank for the target (lower is better), or undefined when the target cannot install it. */
export function wheelRank(w: WheelName, ranks: ReadonlyMap<string, number>): number | undefined {
  let best: number | undefined;
  for (const tag of w.tags) {
    const r = ranks.get(tag);
    if (r !== undefined && (best === undefined || r < best)) best = r;
  }
  return best;
}
