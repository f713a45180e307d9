/**
 * pip packages from a PEP 503 simple index: a project's page is
 * `ROOT/NAME/` (NAME normalized), each archive an `<a href="FILE#sha256=HEX">`
 * with optional `data-requires-python` (PEP 503), `data-yanked` (PEP 592)
 * and `data-core-metadata` / `data-dist-info-metadata` (PEP 658/714).
 *
 * For each version the archive is the best wheel the target accepts
 * (wheel-tags.ts), else the sdist; a version with neither is not a candidate.
 * A picked archive is downloaded and its sha256 checked against the index's
 * (DIGEST_MISMATCH names the file, the expected and the found digest); its
 * dependencies come from the wheel's own METADATA. An sdist's dependencies
 * come from its PEP 658 metadata when that is static (Metadata-Version 2.2+,
 * Requires-Dist not Dynamic); otherwise the pin says `dependencies: unknown`
 * rather than build the sdist (which would run its code).
 *
 * A request `name[extra]` is solved as its own name whose candidates depend
 * on `name==VERSION` plus the extra's requirements (as pip's resolver does), so
 * the extra's dependencies are pinned and the package itself once.
 */
import { CairnError, checkLimit, compareBytes, sha256, type Sha256Digest } from "../../core/index.ts";
import type { IndexSource } from "./index-source.ts";
import {
  comparePep440,
  isExactPin,
  isPep440Prerelease,
  parsePep440,
  parseSpecifier,
  specifierAsksForPrereleases,
  specifierMatches,
  type Pep440Version,
} from "./pep440.ts";
import { evaluateMarker, normalizeName, parseRequirementText, type MarkerEnvironment, type PipRequirement } from "./pep508.ts";
import type { Candidate, Constraint, Universe } from "./solve.ts";
import { compatibleTags, parseSdistName, parseWheelName, wheelRank, type WheelTarget } from "./wheel-tags.ts";
import { parseCoreMetadata, wheelMetadata, type CoreMetadata } from "./wheel-metadata.ts";

/** Links on one project page: freeze.page_max_links. */
const MAX_LINKS = 100_000;

export interface IndexFile {
  readonly filename: string;
  readonly url: URL;
  readonly sha256?: Sha256Digest;
  readonly requiresPython?: string;
  readonly yanked: boolean;
  /** PEP 658: true, or the sha256 of the metadata file. */
  readonly metadata?: true | Sha256Digest;
}

export interface PipCandidate extends Candidate {
  readonly parsed: Pep440Version;
  readonly file: IndexFile;
  readonly kind: "wheel" | "sdist";
  /** For `name[extra]`: the base project and the extras. */
  readonly extras?: { readonly base: string; readonly names: readonly string[] };
}

/** What is kept of a downloaded archive: its digest and size, and a wheel's METADATA (the bytes are dropped, so one archive is in memory at a time). */
export interface FetchedArchive {
  readonly sha256: Sha256Digest;
  readonly size: number;
  readonly metadata?: CoreMetadata;
}

function decodeEntities(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|#39|#x27);/g, (_, e: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", "#x27": "'" })[e]!);
}

function attrs(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/([A-Za-z][A-Za-z0-9_-]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/g)) {
    out.set(m[1]!.toLowerCase(), decodeEntities(m[2] ?? m[3] ?? m[4] ?? ""));
  }
  return out;
}

function hashOf(value: string, path: string): Sha256Digest | undefined {
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(value);
  if (m !== null) return `sha256:${m[1]!.toLowerCase()}` as Sha256Digest;
  if (/^sha256=/.test(value)) throw new CairnError("DIGEST_INVALID", `${path}: ${JSON.stringify(value.slice(0, 80))} is not a sha256 hash`, { path });
  return undefined;
}

/** Parses a PEP 503 project page into its files (links resolved and checked by the index source). */
export function parseProjectPage(html: string, pageUrl: URL, source: IndexSource): IndexFile[] {
  const out: IndexFile[] = [];
  for (const m of html.matchAll(/<a\s([^>]*)>([^<]*)<\/a\s*>/gi)) {
    checkLimit("freeze.page_max_links", out.length + 1, MAX_LINKS, pageUrl.href);
    const a = attrs(m[1]!);
    const href = a.get("href");
    if (href === undefined) continue;
    const url = source.resolve(href, pageUrl, pageUrl.href);
    const unsafeName = url.pathname.slice(url.pathname.lastIndexOf("/") + 1);
    let filename: string;
    try {
      filename = decodeURIComponent(unsafeName);
    } catch {
      filename = "";
    }
    // The file name becomes part of the lockfile and names the archive: an encoded separator or NUL would make it a path.
    if (!/^[A-Za-z0-9][A-Za-z0-9._+!-]*$/.test(filename)) {
      throw new CairnError("PATH_UNSAFE", `link ${JSON.stringify(href.slice(0, 200))} does not end in a plain archive file name`, {
        path: pageUrl.href,
        hint: "an index links to archive files by name (name-version-….whl, name-version.tar.gz)",
      });
    }
    const hash = hashOf(href.includes("#") ? href.slice(href.indexOf("#") + 1) : "", `${pageUrl.href} ${filename}`);
    const meta = a.get("data-core-metadata") ?? a.get("data-dist-info-metadata");
    const metaHash = meta !== undefined && meta !== "true" ? hashOf(meta, `${pageUrl.href} ${filename}`) : undefined;
    out.push({
      filename,
      url,
      yanked: a.has("data-yanked"),
      ...(hash !== undefined ? { sha256: hash } : {}),
      ...(a.has("data-requires-python") ? { requiresPython: a.get("data-requires-python")! } : {}),
      ...(meta !== undefined ? { metadata: metaHash ?? true } : {}),
    });
  }
  return out;
}

export interface PipUniverseOptions {
  readonly source: IndexSource;
  readonly target: WheelTarget;
  readonly markers: MarkerEnvironment;
}

/** A constraint from a PEP 508 requirement (its name carries the extras: `requests[socks]`). */
export function pipConstraint(r: PipRequirement, by: string): Constraint {
  return {
    name: r.extras.length ? `${r.name}[${[...r.extras].sort(compareBytes).join(",")}]` : r.name,
    text: r.text,
    by,
    matches: (v) => {
      const pv = parsePep440(v);
      return pv !== undefined && specifierMatches(r.specifier, pv, true);
    },
    exact: isExactPin(r.specifier),
    allowPre: specifierAsksForPrereleases(r.specifier),
  };
}

export class PipUniverse implements Universe<PipCandidate> {
  readonly #files = new Map<string, IndexFile[] | undefined>();
  readonly #candidates = new Map<string, PipCandidate[]>();
  readonly #archives = new Map<string, FetchedArchive>();
  readonly #deps = new Map<PipCandidate, { constraints: Constraint[]; unknown: boolean }>();
  readonly #ranks: Map<string, number>;
  readonly #python: Pep440Version;

  constructor(readonly opts: PipUniverseOptions) {
    this.#ranks = new Map(compatibleTags(opts.target).map((t, i) => [t, i]));
    this.#python = parsePep440(opts.target.python)!;
  }

  provided(name: string): string | undefined {
    return name === "python" ? this.opts.target.python : undefined;
  }

  whyNone(name: string): string {
    const files = this.#files.get(name.replace(/\[.*$/, ""));
    if (files === undefined) return "the project is not on the index";
    return `${files.length} file(s) on the index, none installable on cp${this.#python.release.slice(0, 2).join("")} ${this.opts.target.platforms[0] ?? "(pure wheels only)"}`;
  }

  async #projectFiles(project: string): Promise<IndexFile[] | undefined> {
    if (this.#files.has(project)) return this.#files.get(project);
    const url = this.opts.source.resolve(`${project}/`, this.opts.source.root, `/packages/${project}`);
    const page = await this.opts.source.read(url, "page");
    const files = page === undefined ? undefined : parseProjectPage(page.toString("utf8"), url, this.opts.source);
    this.#files.set(project, files);
    return files;
  }

  #pythonOk(requires: string | undefined, where: string): boolean {
    if (requires === undefined || requires.trim() === "") return true;
    return specifierMatches(parseSpecifier(requires, where), this.#python, true);
  }

  async candidates(name: string): Promise<readonly PipCandidate[]> {
    const cached = this.#candidates.get(name);
    if (cached !== undefined) return cached;
    const extra = /^([^[]+)\[(.*)\]$/.exec(name);
    const project = extra ? extra[1]! : name;
    const files = (await this.#projectFiles(project)) ?? [];
    const byVersion = new Map<string, { v: Pep440Version; wheel?: { f: IndexFile; rank: number }; sdist?: IndexFile }>();
    for (const f of files) {
      const wheel = parseWheelName(f.filename);
      const sdist = wheel === undefined ? parseSdistName(f.filename, project) : undefined;
      const v = wheel?.version ?? sdist?.version;
      if (v === undefined || (wheel !== undefined && wheel.project !== project)) continue;
      if (!this.#pythonOk(f.requiresPython, `${f.url.href} data-requires-python`)) continue;
      const key = `${v.epoch}!${v.release.join(".")}|${v.pre?.join("") ?? ""}|${v.post ?? ""}|${v.dev ?? ""}|${v.local?.join(".") ?? ""}`;
      const slot = byVersion.get(key) ?? { v };
      if (wheel !== undefined) {
        const rank = wheelRank(wheel, this.#ranks);
        if (rank !== undefined && (slot.wheel === undefined || rank < slot.wheel.rank)) slot.wheel = { f, rank };
      } else if (slot.sdist === undefined || f.filename.endsWith(".tar.gz")) slot.sdist = f;
      byVersion.set(key, slot);
    }
    const out: PipCandidate[] = [];
    for (const slot of byVersion.values()) {
      const file = slot.wheel?.f ?? slot.sdist;
      if (file === undefined) continue;
      out.push({
        name,
        version: slot.v.text,
        parsed: slot.v,
        prerelease: isPep440Prerelease(slot.v),
        yanked: file.yanked,
        file,
        kind: slot.wheel !== undefined ? "wheel" : "sdist",
        ...(extra ? { extras: { base: project, names: extra[2]!.split(",") } } : {}),
      });
    }
    out.sort((a, b) => comparePep440(b.parsed, a.parsed));
    this.#candidates.set(name, out);
    return out;
  }

  /** Downloads a candidate's archive once, checked against the index's sha256 and bounded by freeze.archive_max_bytes. */
  async archive(c: PipCandidate): Promise<FetchedArchive> {
    const key = c.file.url.href;
    const cached = this.#archives.get(key);
    if (cached !== undefined) return cached;
    const bytes = await this.opts.source.read(c.file.url, "archive");
    if (bytes === undefined) throw new CairnError("REGISTRY_INVALID", `the index lists ${c.file.filename} but it is not there`, { path: key });
    const found = sha256(bytes);
    if (c.file.sha256 !== undefined && found !== c.file.sha256) {
      throw new CairnError("DIGEST_MISMATCH", `${c.file.filename}: the index says ${c.file.sha256}, the archive is ${found}`, {
        path: key,
        hint: "the index or the archive was changed; do not pin it",
      });
    }
    const project = c.extras?.base ?? c.name;
    const a: FetchedArchive = {
      sha256: found,
      size: bytes.length,
      ...(c.kind === "wheel" ? { metadata: wheelMetadata(bytes, project, this.opts.source.limits.metadata, key) } : {}),
    };
    this.#archives.set(key, a);
    return a;
  }

  async #metadata(c: PipCandidate): Promise<CoreMetadata | undefined> {
    const fetched = await this.archive(c); // an sdist is pinned by its bytes too
    if (c.kind === "wheel") return fetched.metadata;
    if (c.file.metadata === undefined) return undefined;
    const url = new URL(`${c.file.url.href}.metadata`);
    const bytes = await this.opts.source.read(url, "metadata");
    if (bytes === undefined) return undefined;
    if (c.file.metadata !== true && sha256(bytes) !== c.file.metadata) {
      throw new CairnError("DIGEST_MISMATCH", `${c.file.filename}.metadata: the index says ${c.file.metadata}, the file is ${sha256(bytes)}`, {
        path: url.href,
      });
    }
    const meta = parseCoreMetadata(bytes.toString("utf8"), url.href);
    const [major, minor] = meta.metadataVersion.split(".").map(Number);
    const isStatic = (major! > 2 || (major === 2 && minor! >= 2)) && !meta.dynamic.includes("requires-dist");
    return isStatic ? meta : undefined;
  }

  /** Whether the candidate's dependencies could not be known (an sdist without static metadata). */
  async dependenciesUnknown(c: PipCandidate): Promise<boolean> {
    await this.dependencies(c);
    return this.#deps.get(c)!.unknown;
  }

  async dependencies(c: PipCandidate): Promise<readonly Constraint[]> {
    const cached = this.#deps.get(c);
    if (cached !== undefined) return cached.constraints;
    const by = `${c.name} ${c.version}`;
    const constraints: Constraint[] = [];
    if (c.extras !== undefined) {
      const self = parseRequirementText(`${c.extras.base}==${c.version}`);
      constraints.push(pipConstraint(self, by));
    }
    const base = c.extras ? ((await this.candidates(c.extras.base)).find((x) => x.version === c.version) ?? c) : c;
    const meta = await this.#metadata(base);
    if (meta !== undefined) {
      if (normalizeName(meta.name) !== (c.extras?.base ?? c.name) || comparePep440(parsePep440(meta.version) ?? c.parsed, c.parsed) !== 0) {
        throw new CairnError("REGISTRY_INVALID", `${c.file.filename}: its METADATA names ${meta.name} ${meta.version}`, { path: c.file.url.href });
      }
      if (meta.requiresPython !== undefined)
        constraints.push({ ...pipConstraint(parseRequirementText(`python${meta.requiresPython}`), by), text: `Requires-Python ${meta.requiresPython}` });
      const extras = c.extras?.names ?? [];
      meta.requiresDist.forEach((text, i) => {
        const r = parseRequirementText(text, `${c.file.url.href} Requires-Dist ${i}`);
        const wanted = (x: string): boolean => r.marker === undefined || evaluateMarker(r.marker, { ...this.opts.markers, extra: x });
        // without extras only the unconditional requirements apply; with extras, only those the extras add
        const applies = c.extras === undefined ? wanted("") : extras.some((x) => wanted(x)) && !wanted("");
        if (applies) constraints.push(pipConstraint(r, by));
      });
    }
    this.#deps.set(c, { constraints, unknown: meta === undefined });
    return constraints;
  }
}
