/**
 * The one package solver `cairn freeze` uses for pip, conda and CRAN: each
 * ecosystem supplies a `Universe` (its candidates best first, already
 * filtered to what the target can install, their dependencies, and the names
 * the target itself provides, such as `python` or `R`), and this file decides.
 *
 * The rule, and its limit, stated plainly: the solver picks for every
 * required name the best candidate that every current requirement on that
 * name admits, reads the picks' dependencies, and repeats until the picks no
 * longer change. It does not backtrack: when no candidate satisfies the
 * requirements on a name, it refuses (RESOLVE_CONFLICT naming the two
 * requirements that cannot both hold, with who asked for each) rather than
 * trying older releases of the packages that asked. A refusal is honest; a
 * silent different answer than pip's is not. A pre-release is admitted only
 * when a requirement on its name asks for one (or the caller passes
 * `prereleases`); a yanked release only when a requirement pins exactly it
 * (PEP 592).
 */
import { CairnError, compareBytes } from "../../core/index.ts";

export interface Candidate {
  /** Normalized name. */
  readonly name: string;
  readonly version: string;
  readonly prerelease: boolean;
  readonly yanked: boolean;
  /** The build string, for ecosystems that have one (conda). */
  readonly build?: string;
}

export interface Constraint {
  readonly name: string;
  /** The requirement as written (`urllib3<3,>=1.21.1`). */
  readonly text: string;
  /** Who asked: `request` (the lock's package list) or `NAME VERSION`. */
  readonly by: string;
  /** Does this version (and build, for a candidate that has one) satisfy the requirement? */
  readonly matches: (version: string, build?: string) => boolean;
  /** Pins one exact version: may choose a yanked release. */
  readonly exact: boolean;
  /** Names a pre-release: may choose pre-releases. */
  readonly allowPre: boolean;
}

export interface Universe<C extends Candidate> {
  /** Every candidate the target can install for `name`, best first. */
  candidates(name: string): Promise<readonly C[]>;
  dependencies(c: C): Promise<readonly Constraint[]>;
  /** The version the target provides for `name` (python, R, a virtual package), or undefined when it is an ordinary package. */
  provided(name: string): string | undefined;
  /** Why nothing is there for `name` (for the error), e.g. "not on the index" or "4 files, none for cp312". */
  whyNone(name: string): string;
  /**
   * Whether the target can install `c` at all, judged from what the target
   * provides (a conda build for another Python): such a candidate is skipped
   * like a wheel for another platform, not picked and then refused.
   */
  installable?(c: C): Promise<boolean>;
}

export interface Solved<C extends Candidate> {
  readonly picks: readonly { readonly candidate: C; readonly requestedBy: readonly string[] }[];
}

const MAX_ROUNDS = 64;
const MAX_PACKAGES = 4096;

function describe(c: Constraint): string {
  return `${c.by === "request" ? "the request" : c.by} requires ${c.text}`;
}

function admits<C extends Candidate>(cs: readonly Constraint[], c: C, prereleases: boolean): boolean {
  if (c.prerelease && !prereleases && !cs.some((x) => x.allowPre)) return false;
  if (c.yanked && !cs.some((x) => x.exact && x.matches(c.version, c.build))) return false;
  return cs.every((x) => x.matches(c.version, c.build));
}

function refuseNone<C extends Candidate>(
  name: string,
  cs: readonly Constraint[],
  all: readonly C[],
  skipped: readonly C[],
  u: Universe<C>,
  prereleases: boolean,
): never {
  const alone = cs.filter((c) => !all.some((x) => admits([c], x, prereleases)));
  if (alone.length > 0 || all.length === 0) {
    const first = alone[0] ?? cs[0]!;
    const yanked = all.filter((x) => x.yanked && first.matches(x.version)).map((x) => x.version);
    const pre = all.filter((x) => x.prerelease && first.matches(x.version)).map((x) => x.version);
    const notes = [
      all.length === 0
        ? u.whyNone(name)
        : `available: ${all
            .map((x) => x.version)
            .slice(0, 8)
            .join(", ")}`,
      yanked.length ? `yanked, so only an exact == pin chooses them: ${yanked.join(", ")}` : "",
      pre.length ? `pre-releases, chosen only when a requirement names one: ${pre.join(", ")}` : "",
      all.length > 0 && skipped.length ? `not installable on the target: ${[...new Set(skipped.map((x) => x.version))].slice(0, 8).join(", ")}` : "",
    ].filter((x) => x !== "");
    throw new CairnError("RESOLVE_FAILED", `no release of ${name} satisfies ${first.text} (${describe(first)}; ${notes.join("; ")})`, {
      path: `/packages/${name}`,
      hint: "loosen the requirement, or freeze against an index that has a matching release",
    });
  }
  for (let i = 0; i < cs.length; i++)
    for (let j = i + 1; j < cs.length; j++) {
      if (!all.some((x) => admits([cs[i]!, cs[j]!], x, prereleases))) {
        throw new CairnError("RESOLVE_CONFLICT", `${name}: ${describe(cs[i]!)} and ${describe(cs[j]!)}; no release satisfies both`, {
          path: `/packages/${name}`,
          hint: "change one of the two requirements (cairn does not backtrack to older releases of the packages that asked)",
        });
      }
    }
  throw new CairnError("RESOLVE_CONFLICT", `${name}: no release satisfies all of ${cs.map(describe).join("; ")}`, { path: `/packages/${name}` });
}

function checkProvided(name: string, version: string, cs: readonly Constraint[]): void {
  for (const c of cs) {
    if (!c.matches(version)) {
      throw new CairnError("RESOLVE_CONFLICT", `${name}: ${describe(c)}, but the target provides ${name} ${version}`, {
        path: `/packages/${name}`,
        hint: `freeze for another ${name} (the target is taken from the lock's base and layers, or the command's flags)`,
      });
    }
  }
}

export async function solve<C extends Candidate>(roots: readonly Constraint[], u: Universe<C>, prereleases = false): Promise<Solved<C>> {
  let picks = new Map<string, C>();
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const byName = new Map<string, Constraint[]>();
    const add = (c: Constraint): void => {
      const list = byName.get(c.name) ?? [];
      list.push(c);
      byName.set(c.name, list);
    };
    roots.forEach(add);
    for (const p of picks.values()) (await u.dependencies(p)).forEach(add);
    if (byName.size > MAX_PACKAGES)
      throw new CairnError("LIMIT_EXCEEDED", `limit freeze.max_packages exceeded (${byName.size} > ${MAX_PACKAGES})`, { path: "/packages" });
    const next = new Map<string, C>();
    const requestedBy = new Map<string, string[]>();
    for (const [name, cs] of [...byName].sort(([a], [b]) => compareBytes(a, b))) {
      const provided = u.provided(name);
      if (provided !== undefined) {
        checkProvided(name, provided, cs);
        continue;
      }
      const all: C[] = [];
      const skipped: C[] = [];
      for (const x of await u.candidates(name)) (u.installable === undefined || (await u.installable(x)) ? all : skipped).push(x);
      const pick = all.find((x) => admits(cs, x, prereleases));
      if (pick === undefined) refuseNone(name, cs, all, skipped, u, prereleases);
      next.set(name, pick);
      requestedBy.set(name, [...new Set(cs.map((c) => (c.by === "request" ? `request: ${c.text}` : `${c.by}: ${c.text}`)))].sort(compareBytes));
    }
    const same = next.size === picks.size && [...next].every(([n, c]) => picks.get(n) === c);
    picks = next;
    if (same) return { picks: [...next.values()].map((candidate) => ({ candidate, requestedBy: requestedBy.get(candidate.name)! })) };
  }
  throw new CairnError("RESOLVE_FAILED", `the package requirements did not settle in ${MAX_ROUNDS} rounds`, {
    path: "/packages",
    hint: "pin the packages whose versions keep changing with exact versions",
  });
}
