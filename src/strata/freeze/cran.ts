/**
 * CRAN packages from a repository's `REPO/src/contrib/PACKAGES` index (Debian
 * control format: stanzas of `Field: value`, continuation lines indented).
 * A package's archive is `src/contrib/NAME_VERSION.tar.gz`; its dependencies
 * are `Depends`, `Imports` and `LinkingTo` (a source package needs the headers
 * of LinkingTo to build), each `name (>= 1.2-3)`. Versions compare as R's
 * `numeric_version`: integers separated by `.` or `-`.
 *
 * `R` and R's base packages (base, utils, stats, methods, ...) are the
 * target's R, not the repository's: a dependency on them is checked against
 * the lock's R version and not pinned. The index's `MD5sum` is checked when
 * present (it is what CRAN publishes); the pin is the archive's sha256.
 */
import { createHash } from "node:crypto";
import { CairnError, sha256, type Sha256Digest } from "../../core/index.ts";
import type { IndexSource } from "./index-source.ts";
import type { Candidate, Constraint, Universe } from "./solve.ts";

export const R_BASE_PACKAGES = [
  "R",
  "base",
  "compiler",
  "datasets",
  "graphics",
  "grDevices",
  "grid",
  "methods",
  "parallel",
  "splines",
  "stats",
  "stats4",
  "tcltk",
  "tools",
  "utils",
] as const;

const R_VERSION = /^\d+([.-]\d+)*$/;
const R_NAME = /^[A-Za-z][A-Za-z0-9.]*$/;

/** R's numeric_version order. */
export function compareRVersions(a: string, b: string): number {
  const x = a.split(/[.-]/).map(BigInt);
  const y = b.split(/[.-]/).map(BigInt);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] === undefined || y[i] === undefined) return x[i] === undefined ? -1 : 1;
    if (x[i]! !== y[i]!) return x[i]! < y[i]! ? -1 : 1;
  }
  return 0;
}

export interface CranRecord {
  readonly name: string;
  readonly version: string;
  readonly depends: readonly string[];
  readonly md5?: string;
}

export interface CranCandidate extends Candidate {
  readonly record: CranRecord;
  readonly url: URL;
}

/** Parses a DCF file into stanzas of fields. */
export function parseDcf(text: string, path: string): Map<string, string>[] {
  const out: Map<string, string>[] = [];
  let cur: Map<string, string> | undefined;
  let last: string | undefined;
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === "") {
      cur = undefined;
      return;
    }
    if (/^[ \t]/.test(line)) {
      if (cur === undefined || last === undefined) throw new CairnError("REGISTRY_INVALID", `${path}:${i + 1}: a continuation line with no field`, { path });
      cur.set(last, `${cur.get(last)} ${line.trim()}`);
      return;
    }
    const m = /^([A-Za-z0-9][A-Za-z0-9/@._-]*):\s*(.*)$/.exec(line);
    if (m === null) throw new CairnError("REGISTRY_INVALID", `${path}:${i + 1}: not a "Field: value" line`, { path });
    if (cur === undefined) {
      cur = new Map();
      out.push(cur);
    }
    if (cur.has(m[1]!)) throw new CairnError("REGISTRY_INVALID", `${path}:${i + 1}: field ${m[1]} is repeated`, { path });
    cur.set(m[1]!, m[2]!.trim());
    last = m[1]!;
  });
  return out;
}

/** A CRAN requirement (`name` or `name (>= 1.2)`) as a solver constraint. */
export function cranConstraint(text: string, by: string, path: string): Constraint {
  const m = /^([A-Za-z][A-Za-z0-9.]*)\s*(?:\(\s*(>=|<=|==|!=|>|<)\s*([0-9][0-9.-]*)\s*\))?$/.exec(text.trim());
  if (m === null || (m[3] !== undefined && !R_VERSION.test(m[3]))) {
    throw new CairnError("MODEL_VALUE", `${JSON.stringify(text.slice(0, 120))} is not a CRAN requirement`, { path, hint: "write NAME or NAME (>= VERSION)" });
  }
  const op = m[2];
  const want = m[3];
  return {
    name: m[1]!,
    text: text.trim(),
    by,
    matches: (v) => {
      if (op === undefined) return true;
      if (!R_VERSION.test(v)) return false;
      const c = compareRVersions(v, want!);
      return op === ">=" ? c >= 0 : op === "<=" ? c <= 0 : op === "==" ? c === 0 : op === "!=" ? c !== 0 : op === ">" ? c > 0 : c < 0;
    },
    exact: op === "==",
    allowPre: true,
  };
}

export interface CranUniverseOptions {
  readonly source: IndexSource;
  /** The target's R version (R and its base packages are provided by it). */
  readonly r: string;
}

export class CranUniverse implements Universe<CranCandidate> {
  #byName = new Map<string, CranCandidate[]>();

  constructor(readonly opts: CranUniverseOptions) {}

  async load(): Promise<void> {
    const contrib = this.opts.source.resolve("src/contrib/", this.opts.source.root, "/packages");
    const url = this.opts.source.resolve("PACKAGES", contrib, contrib.href);
    const bytes = await this.opts.source.read(url, "page");
    if (bytes === undefined) {
      throw new CairnError("REGISTRY_INVALID", `${this.opts.source.location} has no src/contrib/PACKAGES`, {
        path: url.href,
        hint: "pass a CRAN repository directory or URL",
      });
    }
    for (const [i, st] of parseDcf(bytes.toString("utf8"), url.href).entries()) {
      const name = st.get("Package");
      const version = st.get("Version");
      const where = `${url.href} stanza ${i}`;
      if (name === undefined || !R_NAME.test(name) || version === undefined || !R_VERSION.test(version)) {
        throw new CairnError("REGISTRY_INVALID", `${where}: Package or Version is missing or malformed`, { path: url.href });
      }
      const md5 = st.get("MD5sum");
      if (md5 !== undefined && !/^[0-9a-f]{32}$/.test(md5))
        throw new CairnError("REGISTRY_INVALID", `${where}: MD5sum is not 32 lowercase hex`, { path: url.href });
      const depends = ["Depends", "Imports", "LinkingTo"].flatMap((f) =>
        (st.get(f) ?? "")
          .split(",")
          .map((d) => d.trim())
          .filter((d) => d !== ""),
      );
      const record: CranRecord = { name, version, depends, ...(md5 !== undefined ? { md5 } : {}) };
      const list = this.#byName.get(name) ?? [];
      list.push({ name, version, prerelease: false, yanked: false, record, url: this.opts.source.resolve(`${name}_${version}.tar.gz`, contrib, where) });
      this.#byName.set(name, list);
    }
    for (const list of this.#byName.values()) list.sort((a, b) => compareRVersions(b.version, a.version));
  }

  provided(name: string): string | undefined {
    return (R_BASE_PACKAGES as readonly string[]).includes(name) ? this.opts.r : undefined;
  }

  whyNone(name: string): string {
    return `${name} is not in the repository's PACKAGES`;
  }

  async candidates(name: string): Promise<readonly CranCandidate[]> {
    return this.#byName.get(name) ?? [];
  }

  async dependencies(c: CranCandidate): Promise<readonly Constraint[]> {
    return c.record.depends.map((d, i) => cranConstraint(d, `${c.name} ${c.version}`, `${c.url.href} depends ${i}`));
  }

  async archive(c: CranCandidate): Promise<{ sha256: Sha256Digest; size: number }> {
    const bytes = await this.opts.source.read(c.url, "archive");
    if (bytes === undefined)
      throw new CairnError("REGISTRY_INVALID", `PACKAGES lists ${c.name} ${c.version} but ${c.url.href} is not there`, { path: c.url.href });
    if (c.record.md5 !== undefined) {
      const found = createHash("md5").update(bytes).digest("hex");
      if (found !== c.record.md5)
        throw new CairnError("DIGEST_MISMATCH", `${c.name}_${c.version}.tar.gz: PACKAGES says MD5 ${c.record.md5}, the archive is ${found}`, {
          path: c.url.href,
        });
    }
    return { sha256: sha256(bytes), size: bytes.length };
  }
}
