/**
 * `cairn freeze`: pins every package request of a lockfile to exact archives.
 * For each package set whose manager has an index (pip: a PEP 503 simple
 * index; conda: a channel; cran: a repository) the requests and all their
 * dependencies are solved (solve.ts) for the lock's target and every chosen
 * archive is downloaded, checked against the index's hash and pinned by
 * sha256 and size. A set whose manager has no index is left as it was
 * (unpinned, unless an earlier freeze pinned it) and `lockfileCaveats` says so.
 *
 * The target comes from the lockfile, not from the host running cairn: the
 * Python version from `--python`, else a base capability `python@V`, else a
 * layer named `python`; the platform from the base's arch and C library
 * (`glibc@V` of a probed base; a declared base admits only pure wheels); R
 * likewise from `--r`, `r@V` or a layer named `r`. A request's bare version
 * (`version: "1.26.4"`) means exactly that version; a version that starts
 * with an operator (`>=1.26,<2`) is used as written, in the manager's syntax.
 */
import { CairnError, compareBytes, type Progress, type RemoteLimits, type Sha256Digest } from "../../core/index.ts";
import { type Lockfile, viewLock } from "../lockfile.ts";
import { pinnedSets } from "../lockfile-records.ts";
import type { PackageManager, PackageRef } from "../profile-model.ts";
import { CondaUniverse, condaConstraint } from "./conda.ts";
import { CranUniverse, cranConstraint } from "./cran.ts";
import { DEFAULT_FREEZE_LIMITS, IndexSource, type FreezeLimits } from "./index-source.ts";
import { linuxMarkerEnvironment, parseRequirementText } from "./pep508.ts";
import type { FrozenPackages, LockPackageSet, PackagePin } from "./pins.ts";
import { PipUniverse, pipConstraint } from "./pypi.ts";
import { solve, type Candidate, type Constraint } from "./solve.ts";
import { linuxPlatforms } from "./wheel-tags.ts";

export interface FreezeOptions {
  /** Index per manager: a directory, file: URL or https (or loopback http) URL. */
  readonly indexes: Partial<Record<PackageManager, string>>;
  /** Overrides the Python version taken from the lockfile. */
  readonly python?: string;
  /** Overrides the R version taken from the lockfile. */
  readonly r?: string;
  /** Admit pre-releases everywhere (pip), as `pip --pre` does. */
  readonly prereleases?: boolean;
  /** Relative index paths resolve against this directory. */
  readonly cwd: string;
  readonly limits?: FreezeLimits;
  /** cairn's time and count bounds on a URL index (core/limits.ts; each at its default when not given). */
  readonly remote?: Partial<RemoteLimits>;
  /** Progress: phase "freeze pip" (conda, cran) in packages pinned (each pin fetches and hashes its archive). */
  readonly progress?: Progress | undefined;
}

export interface FreezeResult {
  readonly lock: Lockfile;
  /** Managers whose sets were frozen by this call. */
  readonly frozen: readonly PackageManager[];
  /** Managers whose sets stay unpinned (no index given and not frozen before). */
  readonly unpinned: readonly PackageManager[];
}

const SUBDIRS: Readonly<Record<string, string>> = {
  x86_64: "linux-64",
  aarch64: "linux-aarch64",
  ppc64le: "linux-ppc64le",
  s390x: "linux-s390x",
  riscv64: "linux-riscv64",
};
const OPERATOR = /^(===|==|!=|<=|>=|~=|<|>)/;
const RUNTIME_VERSION = /^\d+\.\d+(\.\d+)?$/;

/** The version of `runtime` the lockfile provides: a base capability, else a layer of that name. */
function lockRuntime(lock: Lockfile, names: readonly string[]): string | undefined {
  const cap = lock.base.capabilities.find((c) => names.includes(c.name));
  if (cap !== undefined) return cap.version;
  return lock.layers.find((l) => names.includes(l.name))?.version;
}

function runtimeVersion(lock: Lockfile, flag: string | undefined, names: readonly string[], what: string, option: string): string {
  const v = flag ?? lockRuntime(lock, names);
  if (v === undefined) {
    throw new CairnError("RESOLVE_FAILED", `the lockfile names no ${what} version (no base capability ${names[0]}@V, no layer named ${names[0]})`, {
      path: "/packages",
      hint: `pass ${option} X.Y to freeze for that ${what}`,
    });
  }
  const m = /^(\d+\.\d+(?:\.\d+)?)/.exec(v);
  if (m === null || (flag !== undefined && !RUNTIME_VERSION.test(flag))) {
    throw new CairnError("MODEL_VALUE", `${JSON.stringify(v.slice(0, 40))} is not a ${what} version X.Y or X.Y.Z`, {
      path: flag !== undefined ? option : "/layers",
    });
  }
  return m[1]!;
}

function libcOf(lock: Lockfile): { kind: "glibc" | "musl"; version: string } | undefined {
  const kind = lock.base.abi === "gnu" ? "glibc" : lock.base.abi === "musl" ? "musl" : undefined;
  const v = kind && lock.base.capabilities.find((c) => c.name === kind)?.version;
  return kind !== undefined && v !== undefined ? { kind, version: v } : undefined;
}

function requestText(manager: PackageManager, p: PackageRef): string {
  const v = p.version;
  if (v === undefined) return p.name;
  if (manager === "pip") return OPERATOR.test(v) ? `${p.name}${v}` : `${p.name}==${v}`;
  if (manager === "conda") return `${p.name} ${v}`;
  const m = OPERATOR.exec(v);
  return m !== null ? `${p.name} (${m[1]} ${v.slice(m[1]!.length).trim()})` : `${p.name} (== ${v})`;
}

/** How one ecosystem names, locates and fetches a picked candidate. */
interface Pinner<C extends Candidate> {
  readonly kind: (c: C) => PackagePin["kind"];
  readonly filename: (c: C) => string;
  readonly url: (c: C) => URL;
  readonly archive: (c: C) => Promise<{ sha256: Sha256Digest; size: number }>;
  readonly dependenciesUnknown: (c: C) => Promise<boolean>;
}

async function pinsOf<C extends Candidate>(
  picks: readonly { candidate: C; requestedBy: readonly string[] }[],
  p: Pinner<C>,
  progress: ((done: number, total: number) => void) | undefined,
): Promise<PackagePin[]> {
  const pins: PackagePin[] = [];
  progress?.(0, picks.length);
  for (const { candidate: c, requestedBy } of picks) {
    const a = await p.archive(c);
    progress?.(pins.length + 1, picks.length);
    pins.push({
      name: c.name,
      version: c.version,
      kind: p.kind(c),
      filename: p.filename(c),
      sha256: a.sha256,
      size: a.size,
      url: p.url(c).href,
      requested_by: requestedBy,
      ...((await p.dependenciesUnknown(c)) ? { dependencies: "unknown" as const } : {}),
    });
  }
  return pins.sort((a, b) => compareBytes(a.name, b.name));
}

/** The pin loop's reports as progress events of phase "freeze MANAGER". */
function pinProgress(o: FreezeOptions, manager: string): ((done: number, total: number) => void) | undefined {
  const progress = o.progress;
  return progress && ((done, total) => progress({ phase: `freeze ${manager}`, done, total, unit: "packages" }));
}

async function freezeSet(lock: Lockfile, set: LockPackageSet, index: string, o: FreezeOptions, i: number): Promise<FrozenPackages> {
  const source = IndexSource.open(index, o.cwd, o.limits ?? DEFAULT_FREEZE_LIMITS, o.remote);
  const at = (j: number): string => `/packages/${i}/packages/${j}`;
  if (set.manager === "pip") {
    const python = runtimeVersion(lock, o.python, ["python"], "Python", "--python");
    const platforms = linuxPlatforms(lock.base.arch, libcOf(lock));
    const u = new PipUniverse({ source, target: { python, platforms }, markers: linuxMarkerEnvironment(python, lock.base.arch) });
    const roots = set.packages.map((p, j) => pipConstraint(parseRequirementText(requestText("pip", p), at(j)), "request"));
    const solved = await solve(roots, u, o.prereleases === true);
    const picks = solved.picks.filter((p) => p.candidate.extras === undefined);
    const pins = await pinsOf(
      picks,
      {
        kind: (c) => c.kind,
        filename: (c) => c.file.filename,
        url: (c) => c.file.url,
        archive: (c) => u.archive(c),
        dependenciesUnknown: (c) => u.dependenciesUnknown(c),
      },
      pinProgress(o, set.manager),
    );
    return {
      index: source.location,
      target: new Map([
        ["python", python],
        ["platform", platforms[0] ?? "any"],
      ]),
      pins,
    };
  }
  if (set.manager === "conda") {
    const subdir = SUBDIRS[lock.base.arch];
    if (subdir === undefined) throw new CairnError("RESOLVE_FAILED", `no conda subdir for ${lock.base.arch}`, { path: "/base/arch" });
    const python = runtimeVersion(lock, o.python, ["python"], "Python", "--python");
    const libc = libcOf(lock);
    const provided = new Map([
      ["python", python],
      ["__unix", "0"],
      ["__linux", "0"],
      ...(libc?.kind === "glibc" ? [["__glibc", libc.version] as [string, string]] : []),
    ]);
    const u = new CondaUniverse({ source, subdir, provided });
    await u.load();
    const roots = set.packages.map((p, j) => condaConstraint(requestText("conda", p), "request", at(j)));
    const solved = await solve(roots, u);
    const pins = await pinsOf(
      solved.picks,
      {
        kind: () => "conda",
        filename: (c) => c.record.filename,
        url: (c) => c.url,
        archive: (c) => u.archive(c),
        dependenciesUnknown: async () => false,
      },
      pinProgress(o, set.manager),
    );
    return {
      index: source.location,
      target: new Map([
        ["python", python],
        ["subdir", subdir],
      ]),
      pins,
    };
  }
  const r = runtimeVersion(lock, o.r, ["r", "R"], "R", "--r");
  const u = new CranUniverse({ source, r });
  await u.load();
  const roots: Constraint[] = set.packages.map((p, j) => cranConstraint(requestText("cran", p), "request", at(j)));
  const solved = await solve(roots, u);
  const pins = await pinsOf(
    solved.picks,
    {
      kind: () => "cran",
      filename: (c) => `${c.name}_${c.version}.tar.gz`,
      url: (c) => c.url,
      archive: (c) => u.archive(c),
      dependenciesUnknown: async () => false,
    },
    pinProgress(o, set.manager),
  );
  return { index: source.location, target: new Map([["r", r]]), pins };
}

/**
 * A set the lockfile already pinned (a Strata lockfile: name, version and
 * sha256, no archive records) keeps its pins: freezing finds their archives
 * and may add their dependencies, but an archive whose bytes are not the
 * pinned sha256 is refused, naming the package.
 */
function checkKeepsPins(set: LockPackageSet, frozen: FrozenPackages, i: number): void {
  for (const p of set.pinned ?? []) {
    const got = frozen.pins.find((x) => x.name === p.name);
    if (got === undefined || got.version !== p.version) {
      throw new CairnError(
        "RESOLVE_FAILED",
        `${set.manager} ${p.name} ${p.version}: the lockfile pins it, the index resolves ${got ? got.version : "nothing"}`,
        {
          path: `/packages/${i}`,
        },
      );
    }
    if (p.sha256 !== undefined && got.sha256 !== `sha256:${p.sha256}`) {
      throw new CairnError(
        "DIGEST_MISMATCH",
        `${set.manager} ${p.name} ${p.version}: the index's archive is ${got.sha256}, the lockfile pins sha256:${p.sha256}`,
        {
          path: `/packages/${i}`,
          hint: "the index serves other bytes than the ones the lockfile was frozen with",
        },
      );
    }
  }
}

/** Freezes the package sets of `lock` that have an index in `o.indexes`. */
export async function freezeLock(lock: Lockfile, o: FreezeOptions): Promise<FreezeResult> {
  const given = (Object.keys(o.indexes) as PackageManager[]).filter((m) => o.indexes[m] !== undefined);
  for (const m of given) {
    if (!lock.packages.some((s) => s.manager === m)) {
      throw new CairnError("USAGE", `an index was given for ${m}, but the lockfile has no ${m} packages`, {
        path: "/packages",
        hint: "drop that index option",
      });
    }
  }
  if (given.length === 0) throw new CairnError("USAGE", "no index given: pass --index (pip), --conda-channel or --cran-repo", {});
  const packages: LockPackageSet[] = [];
  for (const [i, set] of lock.packages.entries()) {
    const index = o.indexes[set.manager];
    if (index === undefined) {
      packages.push(set);
      continue;
    }
    const frozen = await freezeSet(lock, set, index, o, i);
    checkKeepsPins(set, frozen, i);
    const { pinned: _pinned, ...request } = set;
    packages.push({ ...request, frozen });
  }
  const unpinned = [...new Set(packages.filter((s) => s.frozen === undefined && s.pinned === undefined).map((s) => s.manager))];
  // The wire carries the pinned sets (name, version, sha256); cairn's records carry the requests and every pin's archive.
  const spec = { ...lock.spec, packages: pinnedSets(packages) };
  return { lock: viewLock(spec, { ...lock.records, packages }), frozen: given, unpinned };
}
