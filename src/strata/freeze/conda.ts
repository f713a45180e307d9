/**
 * conda packages from a channel: `CHANNEL/SUBDIR/repodata.json` for the
 * base's platform (`linux-64`, `linux-aarch64`) and `CHANNEL/noarch/repodata.json`,
 * each record's `depends` read as conda match specs (`name`, `name VERSION`,
 * `name VERSION BUILD`; VERSION with `,` for and, `|` for or, the operators
 * `==`, `!=`, `<`, `<=`, `>`, `>=`, `~=`, `=V` and `V*` for a prefix, and a
 * bare version for that exact version), ordered by conda's version order
 * (`dev` < letters < numbers < `post`; `1.1` equals `1.1.0`), then by
 * build number. Files in `removed` are never candidates.
 *
 * `python` and the virtual packages `__glibc`, `__linux`, `__unix` are the
 * target's, not the channel's: a dependency on them is checked against the
 * lock's Python and the base's glibc and is not pinned (the environment's
 * Python comes from its layers). A build whose dependencies on them fail is
 * for another target and is skipped (a channel holds numpy builds for
 * several Pythons). Any other `__name` the target does not provide is
 * refused by name.
 */
import { CairnError, compareBytes, parseJsonBytes, sha256, isJsonObject, type JsonModel, type Sha256Digest } from "../../core/index.ts";
import type { IndexSource } from "./index-source.ts";
import type { Candidate, Constraint, Universe } from "./solve.ts";

export interface CondaRecord {
  readonly filename: string;
  readonly subdir: string;
  readonly name: string;
  readonly version: string;
  readonly build: string;
  readonly build_number: number;
  readonly depends: readonly string[];
  readonly sha256?: Sha256Digest;
  readonly size?: number;
}

export interface CondaCandidate extends Candidate {
  readonly record: CondaRecord;
  readonly url: URL;
}

type Token = bigint | string;

/** conda's VersionOrder as a comparable value: epoch, then components of tokens. */
function versionKey(v: string): { epoch: bigint; parts: Token[][]; local: Token[][] } {
  const s = v.toLowerCase();
  const bang = s.indexOf("!");
  const epoch = bang >= 0 ? BigInt(/^\d+$/.test(s.slice(0, bang)) ? s.slice(0, bang) : "0") : 0n;
  const rest = bang >= 0 ? s.slice(bang + 1) : s;
  const [main, local = ""] = rest.split("+", 2) as [string, string?];
  const comps = (t: string): Token[][] =>
    t === ""
      ? []
      : t.split(/[._]/).map((c) => {
          const toks: Token[] = (c.match(/\d+|[^\d]+/g) ?? ["0"]).map((x) => (/^\d+$/.test(x) ? BigInt(x) : x));
          if (typeof toks[0] === "string") toks.unshift(0n);
          return toks;
        });
  return { epoch, parts: comps(main), local: comps(local) };
}

function tokenRank(t: Token): [number, bigint | string] {
  if (typeof t === "bigint") return [2, t];
  if (t === "dev") return [0, ""];
  if (t === "post") return [3, ""];
  return [1, t];
}

function compareTokens(a: Token, b: Token): number {
  const [ra, va] = tokenRank(a);
  const [rb, vb] = tokenRank(b);
  if (ra !== rb) return ra - rb;
  return va < vb ? -1 : va > vb ? 1 : 0;
}

function compareComps(a: Token[][], b: Token[][]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? [0n];
    const y = b[i] ?? [0n];
    for (let j = 0; j < Math.max(x.length, y.length); j++) {
      const c = compareTokens(x[j] ?? 0n, y[j] ?? 0n);
      if (c !== 0) return c;
    }
  }
  return 0;
}

/** THE conda version order. */
export function compareCondaVersions(a: string, b: string): number {
  const ka = versionKey(a);
  const kb = versionKey(b);
  return (ka.epoch < kb.epoch ? -1 : ka.epoch > kb.epoch ? 1 : 0) || compareComps(ka.parts, kb.parts) || compareComps(ka.local, kb.local);
}

function globMatch(glob: string, s: string): boolean {
  const re = new RegExp(
    `^${glob
      .split("*")
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
  );
  return re.test(s);
}

function prefixMatch(version: string, prefix: string): boolean {
  const p = prefix.replace(/\.$/, "");
  const pc = versionKey(p).parts;
  const vc = versionKey(version).parts;
  // 1.2* matches 1.2, 1.2.3 (not 1.20): compare the prefix's components, the last one by its tokens
  for (let i = 0; i < pc.length; i++) {
    const x = pc[i]!;
    const y = vc[i] ?? [0n];
    for (let j = 0; j < x.length; j++) if (compareTokens(x[j]!, y[j] ?? 0n) !== 0) return false;
    if (i < pc.length - 1 && y.length !== x.length) return false;
  }
  return true;
}

function termMatches(term: string, v: string, path: string): boolean {
  const m = /^(==|!=|<=|>=|~=|<|>|=)?\s*([A-Za-z0-9_.!+*-]+)$/.exec(term.trim());
  if (m === null) throw new CairnError("MODEL_VALUE", `${JSON.stringify(term.slice(0, 80))} is not a conda version spec`, { path });
  const op = m[1] ?? "";
  const ver = m[2]!;
  if (ver === "*") return op === "" || op === "=" || op === "==";
  if (ver.endsWith("*") || op === "=") {
    const hit = prefixMatch(v, ver.replace(/\.?\*$/, ""));
    return op === "!=" ? !hit : hit;
  }
  const c = compareCondaVersions(v, ver);
  switch (op) {
    case "":
    case "==":
      return c === 0;
    case "!=":
      return c !== 0;
    case "<":
      return c < 0;
    case "<=":
      return c <= 0;
    case ">":
      return c > 0;
    case ">=":
      return c >= 0;
    default: {
      // ~=1.2.3 is >=1.2.3 and 1.2.*
      const parts = ver.split(".");
      return c >= 0 && prefixMatch(v, parts.slice(0, -1).join("."));
    }
  }
}

/** Does version `v` satisfy the conda version spec (`>=1.2,<2|3.*`)? */
export function condaVersionMatches(spec: string, v: string, path = ""): boolean {
  return spec.split("|").some((alt) => alt.split(",").every((t) => termMatches(t, v, path)));
}

/** A conda match spec as a solver constraint (`by` says who asked). */
export function condaConstraint(text: string, by: string, path: string): Constraint {
  const parts = text.trim().split(/\s+/);
  let [name, version, build] = parts as [string, string?, string?];
  if (parts.length > 3 || !/^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/.test(name.replace(/[=<>!~].*$/, ""))) {
    throw new CairnError("MODEL_VALUE", `${JSON.stringify(text.slice(0, 120))} is not a conda match spec`, {
      path,
      hint: "write NAME, NAME VERSION or NAME VERSION BUILD",
    });
  }
  const attached = /^([^=<>!~]+)([=<>!~].*)$/.exec(name); // name>=1.2, name=1.2
  if (attached !== null && version === undefined) {
    name = attached[1]!;
    version = attached[2]!.startsWith("=") && !attached[2]!.startsWith("==") ? `${attached[2]!.slice(1)}*` : attached[2]!;
  }
  if (version !== undefined) condaVersionMatches(version, "0", path); // refuse a malformed spec now, not on first use
  return {
    name: name.toLowerCase(),
    text: text.trim(),
    by,
    matches: (v, b) => (version === undefined || condaVersionMatches(version, v, path)) && (build === undefined || b === undefined || globMatch(build, b)),
    exact: false,
    allowPre: true,
  };
}

function readRecord(filename: string, v: JsonModel, subdir: string, path: string): CondaRecord {
  const bad = (why: string): never => {
    throw new CairnError("REGISTRY_INVALID", `${path}: ${why}`, { path, hint: "the channel's repodata.json is malformed" });
  };
  if (!isJsonObject(v)) return bad("a package record is not an object");
  const str = (k: string): string => (typeof v[k] === "string" && (v[k] as string).length > 0 ? (v[k] as string) : bad(`${k} is not a string`));
  const depends =
    v.depends === undefined
      ? []
      : Array.isArray(v.depends) && v.depends.every((d) => typeof d === "string")
        ? (v.depends as string[])
        : bad("depends is not a list of strings");
  const bn = v.build_number ?? 0;
  if (typeof bn !== "number" || !Number.isSafeInteger(bn) || bn < 0) bad("build_number is not a non-negative integer");
  let sha: Sha256Digest | undefined;
  if (v.sha256 !== undefined) {
    if (typeof v.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(v.sha256)) bad("sha256 is not 64 lowercase hex");
    sha = `sha256:${v.sha256}` as Sha256Digest;
  }
  if (v.size !== undefined && (typeof v.size !== "number" || !Number.isSafeInteger(v.size) || v.size < 0)) bad("size is not a non-negative integer");
  if (!/^[A-Za-z0-9][A-Za-z0-9._+!-]*\.(conda|tar\.bz2)$/.test(filename)) bad("the file name is not a conda package name");
  return {
    filename,
    subdir,
    name: str("name").toLowerCase(),
    version: str("version"),
    build: str("build"),
    build_number: bn as number,
    depends,
    ...(sha !== undefined ? { sha256: sha } : {}),
    ...(typeof v.size === "number" ? { size: v.size } : {}),
  };
}

export interface CondaUniverseOptions {
  readonly source: IndexSource;
  /** linux-64, linux-aarch64, ... */
  readonly subdir: string;
  /** What the target provides: python, __glibc, __linux, __unix (name → version). */
  readonly provided: ReadonlyMap<string, string>;
}

export const CONDA_VIRTUAL = ["python", "__glibc", "__linux", "__unix"] as const;

export class CondaUniverse implements Universe<CondaCandidate> {
  #byName: Map<string, CondaCandidate[]> | undefined;

  constructor(readonly opts: CondaUniverseOptions) {}

  /** Reads the subdir's and noarch's repodata.json (at least one must exist). */
  async load(): Promise<void> {
    const byName = new Map<string, CondaCandidate[]>();
    let found = 0;
    for (const subdir of [this.opts.subdir, "noarch"]) {
      const base = this.opts.source.resolve(`${subdir}/`, this.opts.source.root, "/packages");
      const url = this.opts.source.resolve("repodata.json", base, base.href);
      const bytes = await this.opts.source.read(url, "repodata");
      if (bytes === undefined) continue;
      found++;
      const doc = parseJsonBytes(bytes, { source: url.href });
      if (!isJsonObject(doc)) throw new CairnError("REGISTRY_INVALID", `${url.href} is not a repodata object`, { path: url.href });
      const removed = new Set(Array.isArray(doc.removed) ? doc.removed.filter((x): x is string => typeof x === "string") : []);
      for (const key of ["packages", "packages.conda"]) {
        const recs = doc[key];
        if (recs === undefined) continue;
        if (!isJsonObject(recs)) throw new CairnError("REGISTRY_INVALID", `${url.href}: ${key} is not an object`, { path: url.href });
        for (const [filename, rec] of Object.entries(recs)) {
          if (removed.has(filename)) continue;
          const r = readRecord(filename, rec, subdir, `${url.href}#/${key}/${filename}`);
          const list = byName.get(r.name) ?? [];
          list.push({
            name: r.name,
            version: r.version,
            build: r.build,
            prerelease: false,
            yanked: false,
            record: r,
            url: this.opts.source.resolve(filename, base, url.href),
          });
          byName.set(r.name, list);
        }
      }
    }
    if (found === 0) {
      throw new CairnError("REGISTRY_INVALID", `${this.opts.source.location} has no ${this.opts.subdir}/repodata.json or noarch/repodata.json`, {
        path: this.opts.source.location,
        hint: "pass a conda channel directory or URL",
      });
    }
    for (const list of byName.values()) {
      list.sort(
        (a, b) =>
          compareCondaVersions(b.version, a.version) ||
          b.record.build_number - a.record.build_number ||
          Number(b.record.filename.endsWith(".conda")) - Number(a.record.filename.endsWith(".conda")) ||
          compareBytes(a.record.filename, b.record.filename),
      );
    }
    this.#byName = byName;
  }

  provided(name: string): string | undefined {
    if (this.opts.provided.has(name)) return this.opts.provided.get(name);
    if (name.startsWith("__")) throw new CairnError("RESOLVE_FAILED", `the target does not provide the virtual package ${name}`, { path: `/packages/${name}` });
    return undefined;
  }

  whyNone(name: string): string {
    const n = this.#byName!.get(name)?.length;
    const target = [...this.opts.provided].map(([k, v]) => `${k} ${v}`).join(", ");
    return n !== undefined
      ? `${n} record(s) in the channel, none installable on the target (${target})`
      : `${name} is not in the channel (${this.opts.subdir} or noarch)`;
  }

  /** A build whose dependencies on what the target provides (python, __glibc) fail is for another target. */
  async installable(c: CondaCandidate): Promise<boolean> {
    for (const d of await this.dependencies(c)) {
      const v = this.opts.provided.get(d.name);
      if (v !== undefined && !d.matches(v)) return false;
    }
    return true;
  }

  async candidates(name: string): Promise<readonly CondaCandidate[]> {
    return this.#byName!.get(name) ?? [];
  }

  async dependencies(c: CondaCandidate): Promise<readonly Constraint[]> {
    return c.record.depends.map((d, i) => condaConstraint(d, `${c.name} ${c.version} ${c.record.build}`, `${c.url.href}#/depends/${i}`));
  }

  async archive(c: CondaCandidate): Promise<{ sha256: Sha256Digest; size: number }> {
    const bytes = await this.opts.source.read(c.url, "archive");
    if (bytes === undefined) throw new CairnError("REGISTRY_INVALID", `the channel lists ${c.record.filename} but it is not there`, { path: c.url.href });
    const found = sha256(bytes);
    if (c.record.sha256 !== undefined && found !== c.record.sha256) {
      throw new CairnError("DIGEST_MISMATCH", `${c.record.filename}: repodata says ${c.record.sha256}, the archive is ${found}`, { path: c.url.href });
    }
    if (c.record.size !== undefined && bytes.length !== c.record.size) {
      throw new CairnError("SIZE_MISMATCH", `${c.record.filename}: repodata says ${c.record.size} bytes, the archive has ${bytes.length}`, {
        path: c.url.href,
      });
    }
    return { sha256: found, size: bytes.length };
  }
}
