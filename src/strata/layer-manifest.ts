/**
 * The layer manifest: what a layer is (name, version, arch, ABI), what it
 * holds (blob digest and size, every file's digest, every symlink's target),
 * what it provides and requires, and how it was built. It is the payload of a
 * DSSE envelope in the registry; the envelope's signatures are the layer's
 * signatures.
 *
 * The id is machine-made (`name-version-abi-arch`) and checked against the
 * other fields, so a manifest cannot claim one id and describe another layer.
 */
import {
  sortByBytes,
  canonicalize,
  sortedRecord,
  Checker,
  childPath,
  isDigest,
  safeComponent,
  CairnError,
  type JsonModel,
  type JsonObject,
  type Sha256Digest,
} from "../core/index.ts";
import { capabilityString, parseCapability, parseRequirement, requirementString, type Capability, type Requirement } from "./capability.ts";
import { ARCHES, type Arch } from "./platform.ts";
import { REF_NAME } from "./ref.ts";
import { modulefilePath } from "./modulefile.ts";
import { isVersion } from "./version.ts";

export const LAYER_MANIFEST_TYPE = "application/vnd.cairn.layer-manifest+json";
export const INSTALL_LAYOUTS = ["rootfs", "prefix"] as const;
export type InstallLayout = (typeof INSTALL_LAYOUTS)[number];
/** ABIs: `none` (no native code: runs on any base), `gnu` (glibc), `musl`. */
export const ABIS = ["none", "gnu", "musl"] as const;
export type Abi = (typeof ABIS)[number];
/** `noarch` layers hold no machine code and match every base arch. */
export type LayerArch = Arch | "noarch";

export interface FoldedFrom {
  readonly id: string;
  readonly sha256: Sha256Digest;
}

/** Where a layer was built (Strata's BuildEnvironment): the build environment's lock id, or its base digest, or both. */
export interface BuildEnvironment {
  /** The EnvironmentID of the lockfile the build ran in. */
  readonly lock_id?: Sha256Digest;
  /** The digest of the base the build ran on. */
  readonly base_digest?: Sha256Digest;
}

/**
 * How a layer was built (Strata's RecordedBuild), signed with the layer since
 * it is part of the manifest. Every field but `builder` and `diff_id` is
 * optional and stated by whoever built it: the signature says who claims it,
 * not that cairn checked it. `built_at` is wall-clock provenance (a rebuild at
 * another time is the same layer content, a different manifest); `sources` is
 * sorted by bytes and de-duplicated, so its order carries no meaning.
 */
export interface BuildProvenance {
  readonly builder: string;
  /** sha256 of the uncompressed tar (the OCI diff_id): the content independent of compression. */
  readonly diff_id: Sha256Digest;
  readonly folded_from?: readonly FoldedFrom[];
  /** sha256 of the recipe (the build script or spec file) that produced the directory. */
  readonly recipe?: Sha256Digest;
  readonly environment?: BuildEnvironment;
  /** RFC 3339 UTC to the second (`2026-01-02T03:04:05Z`). */
  readonly built_at?: string;
  /** What the layer was built from (URLs, VCS refs, `dirty-lock:sha256:…`), sorted by bytes, unique. */
  readonly sources?: readonly string[];
  /** How `layer capture` made the layer from an existing install (absent for a built or folded layer). */
  readonly capture?: CaptureRecord;
}

/** Where `layer capture` found a tree (seed 002's CaptureSource; `fold` is written for a folded layer, never recorded here). */
export const CAPTURE_SOURCES = ["filesystem", "conda", "lmod"] as const;
export type CaptureSource = (typeof CAPTURE_SOURCES)[number];

/**
 * What a capture did to the tree (capture.ts defines the rule): where it was
 * installed, and which of the layer's paths had that install root rewritten
 * to where the layer mounts it. `normalized` is true exactly when
 * `rewritten` is not empty; `left` lists the binary files that still name
 * the install root (never rewritten: their bytes are kept as they were).
 */
export interface CaptureRecord {
  readonly source: CaptureSource;
  /** The absolute install root the tree was captured from. */
  readonly original_prefix: string;
  readonly normalized: boolean;
  /** Layer paths (files, symlinks, the modulefile) whose install root was rewritten, sorted by bytes. */
  readonly rewritten: readonly string[];
  /** Layer paths of binary files that still name the install root, sorted by bytes. */
  readonly left: readonly string[];
}

/** Bounds on the provenance a manifest may carry (LAYER_INVALID names the field). */
export const MAX_BUILD_SOURCES = 256;
export const MAX_BUILD_SOURCE_LENGTH = 1024;
const BUILT_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/** True when `s` is an RFC 3339 UTC time to the second that names a real instant. */
export function isBuiltAt(s: string): boolean {
  return BUILT_AT.test(s) && !Number.isNaN(Date.parse(s)) && new Date(Date.parse(s)).toISOString().replace(".000Z", "Z") === s;
}

/** The single normalization of build sources: sorted by UTF-8 bytes, duplicates dropped. */
export function normalizeSources(sources: readonly string[]): string[] {
  return [...new Set(sortByBytes([...sources], (s) => s))];
}

export interface LayerManifest {
  readonly id: string;
  readonly name: string;
  readonly version: string;
  readonly arch: LayerArch;
  readonly abi: Abi;
  readonly install_layout: InstallLayout;
  readonly user_selectable: boolean;
  readonly sha256: Sha256Digest;
  readonly size: number;
  /** Absolute path → sha256 of every regular file. */
  readonly content_manifest: ReadonlyMap<string, Sha256Digest>;
  /** Absolute path → target of every symlink. */
  readonly symlinks: ReadonlyMap<string, string>;
  readonly provides: readonly Capability[];
  readonly requires: readonly Requirement[];
  readonly build: BuildProvenance;
  /** Path of the layer's Lmod modulefile (`modulefilePath(name, version)`), a file of the blob; absent when the layer carries none. */
  readonly modulefile?: string;
  /** Absolute paths of the whiteout markers the blob holds (a frozen upper layer's deletions), sorted; absent when none. */
  readonly whiteouts?: readonly string[];
}

export const LAYER_MANIFEST_FIELDS = [
  "id",
  "name",
  "version",
  "arch",
  "abi",
  "install_layout",
  "user_selectable",
  "sha256",
  "size",
  "content_manifest",
  "symlinks",
  "provides",
  "requires",
  "build",
  "modulefile",
  "whiteouts",
] as const;

/** The single rule for a layer id. */
export function layerId(name: string, version: string, abi: string, arch: string): string {
  return safeComponent(`${name}-${version}-${abi}-${arch}`, "/id");
}

const ABS_PATH = /^(\/[^/\0]+)+$/;

export function isLayerPath(p: string): boolean {
  return ABS_PATH.test(p) && !p.split("/").some((s) => s === "." || s === "..");
}

function sha(c: Checker, v: JsonModel | undefined, p: string): Sha256Digest | undefined {
  if (typeof v !== "string" || !isDigest(v) || !v.startsWith("sha256:")) {
    c.add(p, "expected sha256:<64 lowercase hex>", "DIGEST_INVALID");
    return undefined;
  }
  return v as Sha256Digest;
}

function oneOf<T extends string>(c: Checker, v: JsonModel | undefined, p: string, allowed: readonly T[]): T | undefined {
  const s = c.string(v, p);
  if (s === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(s)) {
    c.add(p, `must be one of ${allowed.join(", ")}`, "MODEL_VALUE");
    return undefined;
  }
  return s as T;
}

function pathMap<V>(c: Checker, v: JsonModel | undefined, p: string, read: (x: JsonModel, xp: string) => V | undefined): Map<string, V> {
  const out = new Map<string, V>();
  const o = c.object(v, p);
  if (o === undefined) return out;
  for (const k of Object.keys(o)) {
    const kp = childPath(p, k);
    if (!isLayerPath(k)) {
      c.add(kp, "not an absolute normalized path", "PATH_UNSAFE");
      continue;
    }
    const val = read(o[k]!, kp);
    if (val !== undefined) out.set(k, val);
  }
  return out;
}

function strings<T>(c: Checker, v: JsonModel | undefined, p: string, parse: (s: string, sp: string) => T): T[] {
  const out: T[] = [];
  c.stringArray(v, p)?.forEach((s, i) => {
    try {
      out.push(parse(s, childPath(p, i)));
    } catch (e) {
      if (!(e instanceof CairnError)) throw e;
      c.add(childPath(p, i), e.message, e.code);
    }
  });
  return out;
}

/** The optional recorded-build fields of `build`, strictly: sources must already be sorted and unique (a writer never produces anything else). */
function readRecordedBuild(c: Checker, bo: JsonObject): Omit<BuildProvenance, "builder" | "diff_id" | "folded_from"> {
  const out: { recipe?: Sha256Digest; environment?: BuildEnvironment; built_at?: string; sources?: string[]; capture?: CaptureRecord } = {};
  if (Object.hasOwn(bo, "capture")) {
    const capture = readCapture(c, bo.capture);
    if (capture !== undefined) out.capture = capture;
  }
  if (Object.hasOwn(bo, "recipe")) {
    const recipe = sha(c, bo.recipe, "/build/recipe");
    if (recipe !== undefined) out.recipe = recipe;
  }
  if (Object.hasOwn(bo, "environment")) {
    const eo = c.object(bo.environment, "/build/environment", ["lock_id", "base_digest"]);
    if (eo !== undefined) {
      const env: { lock_id?: Sha256Digest; base_digest?: Sha256Digest } = {};
      const lock_id = Object.hasOwn(eo, "lock_id") ? sha(c, eo.lock_id, "/build/environment/lock_id") : undefined;
      const base_digest = Object.hasOwn(eo, "base_digest") ? sha(c, eo.base_digest, "/build/environment/base_digest") : undefined;
      if (lock_id !== undefined) env.lock_id = lock_id;
      if (base_digest !== undefined) env.base_digest = base_digest;
      if (!Object.hasOwn(eo, "lock_id") && !Object.hasOwn(eo, "base_digest"))
        c.add("/build/environment", "names neither lock_id nor base_digest", "MODEL_VALUE");
      else if (Object.keys(env).length > 0) out.environment = env;
    }
  }
  if (Object.hasOwn(bo, "built_at")) {
    const t = c.string(bo.built_at, "/build/built_at");
    if (t !== undefined && !isBuiltAt(t)) c.add("/build/built_at", "not an RFC 3339 UTC time to the second (2026-01-02T03:04:05Z)", "MODEL_VALUE");
    else if (t !== undefined) out.built_at = t;
  }
  if (Object.hasOwn(bo, "sources")) {
    const list = c.stringArray(bo.sources, "/build/sources");
    if (list !== undefined) {
      if (list.length > MAX_BUILD_SOURCES) c.add("/build/sources", `more than ${MAX_BUILD_SOURCES} sources (limit build.max_sources)`, "LIMIT_EXCEEDED");
      list.forEach((s, i) => {
        if (s.length === 0 || s.length > MAX_BUILD_SOURCE_LENGTH)
          c.add(childPath("/build/sources", i), `a source is 1 to ${MAX_BUILD_SOURCE_LENGTH} characters`, "MODEL_VALUE");
      });
      if (canonicalize(list) !== canonicalize(normalizeSources(list))) c.add("/build/sources", "sources must be sorted by bytes and unique", "LAYER_INVALID");
      else out.sources = list;
    }
  }
  return out;
}

/** A capture record, strictly: lists sorted and unique, `normalized` exactly when something was rewritten. */
function readCapture(c: Checker, v: JsonModel | undefined): CaptureRecord | undefined {
  const p = "/build/capture";
  const o = c.object(v, p, ["source", "original_prefix", "normalized", "rewritten", "left"]);
  if (o === undefined) return undefined;
  const source = oneOf(c, c.required(o, "source", p), `${p}/source`, CAPTURE_SOURCES);
  const original_prefix = c.string(c.required(o, "original_prefix", p), `${p}/original_prefix`, { max: 4096 });
  if (original_prefix !== undefined && !isLayerPath(original_prefix)) c.add(`${p}/original_prefix`, "not an absolute normalized path", "PATH_UNSAFE");
  const normalized = c.boolean(c.required(o, "normalized", p), `${p}/normalized`);
  const list = (k: "rewritten" | "left"): string[] | undefined => {
    const l = c.stringArray(c.required(o, k, p), `${p}/${k}`);
    l?.forEach((x, i) => {
      if (!isLayerPath(x)) c.add(childPath(`${p}/${k}`, i), "not an absolute normalized path", "PATH_UNSAFE");
    });
    if (l !== undefined && canonicalize(l) !== canonicalize(normalizeSources(l)))
      c.add(`${p}/${k}`, `${k} must be sorted by bytes and unique`, "LAYER_INVALID");
    return l;
  };
  const rewritten = list("rewritten");
  const left = list("left");
  if (normalized !== undefined && rewritten !== undefined && normalized !== rewritten.length > 0)
    c.add(`${p}/normalized`, "normalized is true exactly when something was rewritten", "LAYER_INVALID");
  if (source === undefined || original_prefix === undefined || normalized === undefined || rewritten === undefined || left === undefined) return undefined;
  return { source, original_prefix, normalized, rewritten, left };
}

/** Reads a layer manifest model strictly; LAYER_INVALID lists every issue. */
export function parseLayerManifest(v: JsonModel, source = "layer manifest"): LayerManifest {
  const c = new Checker("LAYER_INVALID");
  const o = c.object(v, "", LAYER_MANIFEST_FIELDS) as JsonObject | undefined;
  c.done(source);
  const r = (k: string): JsonModel | undefined => c.required(o!, k, "");
  const id = c.string(r("id"), "/id");
  const name = c.string(r("name"), "/name", { pattern: REF_NAME });
  const version = c.string(r("version"), "/version");
  if (version !== undefined && !isVersion(version)) c.add("/version", "not a version", "MODEL_VALUE");
  const arch = oneOf<LayerArch>(c, r("arch"), "/arch", [...ARCHES, "noarch"]);
  const abi = oneOf(c, r("abi"), "/abi", ABIS);
  const install_layout = oneOf(c, r("install_layout"), "/install_layout", INSTALL_LAYOUTS);
  const user_selectable = c.boolean(r("user_selectable"), "/user_selectable");
  const sha256 = sha(c, r("sha256"), "/sha256");
  const size = c.integer(r("size"), "/size", { min: 0 });
  const content_manifest = pathMap(c, r("content_manifest"), "/content_manifest", (x, xp) => sha(c, x, xp));
  const symlinks = pathMap(c, r("symlinks"), "/symlinks", (x, xp) => c.string(x, xp, { nonEmpty: true, max: 4096 }));
  const provides = strings(c, r("provides"), "/provides", parseCapability);
  const requires = strings(c, r("requires"), "/requires", parseRequirement);
  const bo = c.object(r("build"), "/build", ["builder", "diff_id", "folded_from", "recipe", "environment", "built_at", "sources", "capture"]);
  let build: BuildProvenance | undefined;
  if (bo !== undefined) {
    const builder = c.string(c.required(bo, "builder", "/build"), "/build/builder", { nonEmpty: true, max: 256 });
    const diff_id = sha(c, c.required(bo, "diff_id", "/build"), "/build/diff_id");
    let folded_from: FoldedFrom[] | undefined;
    if (Object.hasOwn(bo, "folded_from")) {
      folded_from = [];
      c.array(bo.folded_from, "/build/folded_from")?.forEach((f, i) => {
        const fp = `/build/folded_from/${i}`;
        const fo = c.object(f, fp, ["id", "sha256"]);
        if (fo === undefined) return;
        const fid = c.string(c.required(fo, "id", fp), `${fp}/id`);
        const fsha = sha(c, c.required(fo, "sha256", fp), `${fp}/sha256`);
        if (fid !== undefined && fsha !== undefined) folded_from!.push({ id: fid, sha256: fsha });
      });
    }
    const recorded = readRecordedBuild(c, bo);
    if (builder !== undefined && diff_id !== undefined) build = { builder, diff_id, ...(folded_from ? { folded_from } : {}), ...recorded };
  }
  if (id !== undefined && name !== undefined && version !== undefined && abi !== undefined && arch !== undefined) {
    if (id !== `${name}-${version}-${abi}-${arch}`) c.add("/id", "id is not name-version-abi-arch of this manifest", "LAYER_INVALID");
    else {
      try {
        safeComponent(id, "/id");
      } catch {
        c.add("/id", "id is not a safe path component", "PATH_UNSAFE");
      }
    }
  }
  let modulefile: string | undefined;
  if (Object.hasOwn(o!, "modulefile")) {
    modulefile = c.string(o!.modulefile, "/modulefile");
    if (modulefile !== undefined && name !== undefined && version !== undefined) {
      if (modulefile !== modulefilePath(name, version)) c.add("/modulefile", `a layer's modulefile is ${modulefilePath(name, version)}`, "LAYER_INVALID");
      else if (!content_manifest.has(modulefile)) c.add("/modulefile", "names no file of the layer's content manifest", "LAYER_INVALID");
    }
  }
  let whiteouts: string[] | undefined;
  if (Object.hasOwn(o!, "whiteouts")) {
    whiteouts = c.stringArray(o!.whiteouts, "/whiteouts");
    whiteouts?.forEach((w, i) => {
      if (!isLayerPath(w) || !w.split("/").pop()!.startsWith(".wh.") || content_manifest.has(w) || symlinks.has(w))
        c.add(childPath("/whiteouts", i), "a whiteout is the absolute path of a .wh.* marker that is not content", "LAYER_INVALID");
    });
    if (whiteouts !== undefined && (whiteouts.length === 0 || canonicalize(whiteouts) !== canonicalize(normalizeSources(whiteouts))))
      c.add("/whiteouts", "whiteouts are non-empty, sorted by bytes and unique", "LAYER_INVALID");
  }
  for (const k of symlinks.keys()) if (content_manifest.has(k)) c.add(childPath("/symlinks", k), "path is both a file and a symlink", "LAYER_INVALID");
  const capture = build?.capture;
  if (capture !== undefined) {
    if (build?.folded_from !== undefined) c.add("/build/capture", "a layer is folded or captured, not both", "LAYER_INVALID");
    capture.rewritten.forEach((x, i) => {
      if (!content_manifest.has(x) && !symlinks.has(x))
        c.add(childPath("/build/capture/rewritten", i), "names no file or symlink of the layer", "LAYER_INVALID");
    });
    capture.left.forEach((x, i) => {
      if (!content_manifest.has(x)) c.add(childPath("/build/capture/left", i), "names no file of the layer", "LAYER_INVALID");
    });
  }
  c.done(source);
  return {
    id: id!,
    name: name!,
    version: version!,
    arch: arch!,
    abi: abi!,
    install_layout: install_layout!,
    user_selectable: user_selectable!,
    sha256: sha256!,
    size: size!,
    content_manifest,
    symlinks,
    provides,
    requires,
    build: build!,
    ...(modulefile !== undefined ? { modulefile } : {}),
    ...(whiteouts !== undefined ? { whiteouts } : {}),
  };
}

/** The manifest as a plain model (the signed payload is its JCS bytes). */
export function layerManifestToModel(m: LayerManifest): Record<string, unknown> {
  return {
    id: m.id,
    name: m.name,
    version: m.version,
    arch: m.arch,
    abi: m.abi,
    install_layout: m.install_layout,
    user_selectable: m.user_selectable,
    sha256: m.sha256,
    size: m.size,
    content_manifest: sortedRecord(m.content_manifest),
    symlinks: sortedRecord(m.symlinks),
    provides: m.provides.map(capabilityString),
    requires: m.requires.map(requirementString),
    build: {
      builder: m.build.builder,
      diff_id: m.build.diff_id,
      ...(m.build.folded_from ? { folded_from: m.build.folded_from.map((f) => ({ ...f })) } : {}),
      ...(m.build.recipe ? { recipe: m.build.recipe } : {}),
      ...(m.build.environment ? { environment: { ...m.build.environment } } : {}),
      ...(m.build.built_at ? { built_at: m.build.built_at } : {}),
      ...(m.build.sources ? { sources: [...m.build.sources] } : {}),
      ...(m.build.capture ? { capture: { ...m.build.capture, rewritten: [...m.build.capture.rewritten], left: [...m.build.capture.left] } } : {}),
    },
    ...(m.modulefile !== undefined ? { modulefile: m.modulefile } : {}),
    ...(m.whiteouts !== undefined ? { whiteouts: [...m.whiteouts] } : {}),
  };
}
