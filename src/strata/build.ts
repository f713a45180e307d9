/**
 * Building layers, folding layers and building formations: the library side of
 * `cairn layer build`, `cairn layer fold` and `cairn formation build`. Nothing
 * here reads the clock or the host's identity, so the same directory and
 * options give the same blob and the same manifest everywhere.
 *
 * What the CLI runs streams (`writeLayerFromDirectory`, `foldLayers` with a
 * staging directory): each file is read as it is written into the tar, the
 * gzip output goes to a private staged file, a fold's source blobs are staged
 * copies and its file bytes are spilled to private files, so memory does not
 * grow with the layer. `buildLayerFromDirectory` and `foldLayers` without
 * staging give the same blob in memory (small layers, library callers, tests).
 */
import { mkdirSync, readFileSync } from "node:fs";
import { compareBytes, CairnError, type VerifyingKey } from "../core/index.ts";
import { readDirectoryStreamed, type DirLimits, type TarStreamEntry, DEFAULT_DIR_LIMITS } from "../tree/index.ts";
import { buildLayerBlob, writeLayerBlob, type LayerBlob, type LayerBlobFacts, type LayerBlobFile } from "./blob.ts";
import { BlobStaging } from "./blob-staging.ts";
import { capabilityString, requirementString, satisfies, type Capability, type Requirement } from "./capability.ts";
import { formationKey, providesUnion, type Formation } from "./formation-document.ts";
import {
  isBuiltAt,
  layerId,
  normalizeSources,
  MAX_BUILD_SOURCE_LENGTH,
  MAX_BUILD_SOURCES,
  type Abi,
  type BuildProvenance,
  type InstallLayout,
  type LayerArch,
  type LayerManifest,
  type FoldedFrom,
} from "./layer-manifest.ts";
import type { LayerRegistry } from "./registry.ts";
import { readLayerBlobs, treeToStreamEntries, type BlobInput } from "./blob-reader.ts";
import { parseVersion } from "./version.ts";
import { NAME_RULE, REF_NAME } from "./ref.ts";
import { generateModulefile, modulefilePath, withModulefile } from "./modulefile.ts";
import { attest } from "./trust.ts";

export interface LayerSpec {
  readonly name: string;
  readonly version: string;
  readonly arch: LayerArch;
  readonly abi: Abi;
  readonly install_layout: InstallLayout;
  readonly user_selectable: boolean;
  readonly provides: readonly Capability[];
  readonly requires: readonly Requirement[];
  readonly builder: string;
  /** Recorded-build provenance (recipe, environment, built_at, sources), stated by the builder and signed with the layer. */
  readonly recorded?: RecordedBuild;
  /** An Lmod modulefile to carry: given text, or generated from the layer's prefix, directories, provides and these variables. */
  readonly modulefile?: { readonly kind: "given"; readonly text: string } | { readonly kind: "generated"; readonly env: readonly [string, string][] };
}

export type RecordedBuild = Omit<BuildProvenance, "builder" | "diff_id" | "folded_from">;

/** Checks and normalizes recorded-build provenance (sources sorted and unique, built_at RFC 3339 UTC). */
function recordedOf(r: RecordedBuild | undefined): RecordedBuild {
  if (r === undefined) return {};
  if (r.built_at !== undefined && !isBuiltAt(r.built_at)) {
    throw new CairnError("USAGE", "--built-at must be an RFC 3339 UTC time to the second (2026-01-02T03:04:05Z) or now", { path: "--built-at" });
  }
  const sources = r.sources === undefined ? undefined : normalizeSources(r.sources);
  sources?.forEach((s, i) => {
    if (s.length === 0 || s.length > MAX_BUILD_SOURCE_LENGTH)
      throw new CairnError("USAGE", `a --source is 1 to ${MAX_BUILD_SOURCE_LENGTH} characters`, { path: `--source[${i}]` });
  });
  if (sources !== undefined && sources.length > MAX_BUILD_SOURCES)
    throw new CairnError("LIMIT_EXCEEDED", `limit build.max_sources exceeded (${sources.length} > ${MAX_BUILD_SOURCES})`, { path: "--source" });
  if (r.environment !== undefined && r.environment.lock_id === undefined && r.environment.base_digest === undefined) {
    throw new CairnError("USAGE", "a build environment names a lock id or a base digest", { path: "--build-lock-id" });
  }
  return {
    ...(r.recipe !== undefined ? { recipe: r.recipe } : {}),
    ...(r.environment !== undefined ? { environment: r.environment } : {}),
    ...(r.built_at !== undefined ? { built_at: r.built_at } : {}),
    ...(sources !== undefined && sources.length > 0 ? { sources } : {}),
    ...(r.capture !== undefined ? { capture: r.capture } : {}),
  };
}

/** Refuses a spec whose name or version is not valid (USAGE / MODEL_VALUE), before anything is read. */
export function checkSpec(s: LayerSpec): void {
  if (!REF_NAME.test(s.name)) throw new CairnError("USAGE", `layer name ${JSON.stringify(s.name).slice(0, 60)} is not valid`, { hint: NAME_RULE });
  parseVersion(s.version, "--version");
}

export function manifestFor(spec: LayerSpec, blob: LayerBlobFacts, folded_from?: readonly FoldedFrom[]): LayerManifest {
  checkSpec(spec);
  return {
    id: layerId(spec.name, spec.version, spec.abi, spec.arch),
    name: spec.name,
    version: spec.version,
    arch: spec.arch,
    abi: spec.abi,
    install_layout: spec.install_layout,
    user_selectable: spec.user_selectable,
    sha256: blob.sha256,
    size: blob.size,
    content_manifest: blob.content_manifest,
    symlinks: blob.symlinks,
    provides: spec.provides,
    requires: spec.requires,
    build: { builder: spec.builder, diff_id: blob.diff_id, ...(folded_from ? { folded_from } : {}), ...recordedOf(spec.recorded) },
    ...(spec.modulefile !== undefined ? { modulefile: modulefilePath(spec.name, spec.version) } : {}),
    ...(blob.whiteouts.length > 0 ? { whiteouts: blob.whiteouts } : {}),
  };
}

/** `prefix` layout installs under opt/<name>/<version>; `rootfs` installs at the root. */
export function layoutPrefix(spec: LayerSpec): string {
  return spec.install_layout === "prefix" ? `opt/${spec.name}/${spec.version}` : "";
}

/** The layer's entries: the directory's (file bytes read when written), under the layout prefix, plus the modulefile when the spec has one. */
function layerEntries(dir: string, spec: LayerSpec, limits: DirLimits): TarStreamEntry[] {
  checkSpec(spec);
  let entries = readDirectoryStreamed(dir, layoutPrefix(spec), limits);
  const mf = spec.modulefile;
  if (mf !== undefined) {
    const dirs = new Set(entries.filter((e) => e.type === "dir").map((e) => e.path));
    const text =
      mf.kind === "given"
        ? mf.text
        : generateModulefile({ name: spec.name, version: spec.version, prefix: layoutPrefix(spec), provides: spec.provides, env: mf.env }, dirs);
    entries = withModulefile(entries, spec.name, spec.version, text);
  }
  return entries;
}

/** The layer of a directory, built in memory (the blob is held whole: small layers, library callers). */
export function buildLayerFromDirectory(dir: string, spec: LayerSpec, limits: DirLimits = DEFAULT_DIR_LIMITS): { blob: LayerBlob; manifest: LayerManifest } {
  const blob = buildLayerBlob(layerEntries(dir, spec, limits));
  return { blob, manifest: manifestFor(spec, blob) };
}

/**
 * The layer of a directory, streamed to the new private file `out` (what
 * `cairn layer build` runs): the same blob as buildLayerFromDirectory, with
 * memory bounded by a chunk, not by the directory's size.
 */
export async function writeLayerFromDirectory(
  dir: string,
  spec: LayerSpec,
  out: string,
  limits: DirLimits = DEFAULT_DIR_LIMITS,
): Promise<{ blob: LayerBlobFile; manifest: LayerManifest }> {
  const blob = await writeLayerBlob(layerEntries(dir, spec, limits), out);
  return { blob, manifest: manifestFor(spec, blob) };
}

/** Whose signatures a fold accepts on its source layers (closed by default, like resolve). */
export interface SourceTrust {
  readonly keys: readonly VerifyingKey[];
  /** Fold unsigned or untrusted sources knowingly (the user's key then signs what nobody vouched for). */
  readonly allowUnsignedOffline: boolean;
}

/**
 * Merges published layers into one, later layers over earlier ones (a later
 * file replaces an earlier one at the same path; a directory never replaces a
 * file or the reverse), and records `folded_from` with each source's id and
 * blob digest. Each source blob is verified against its manifest and read
 * through the strict tar gate (blob-reader.ts). Each source manifest's signature is
 * checked against `trust` before its blob is read: folding re-signs the
 * result with the user's key, so an unverified source would come out
 * looking vouched for.
 *
 * With `staging`, everything goes through files there: each source blob is
 * a staged copy checked as it is copied, file bytes are spilled to private
 * files, and the folded blob is streamed to a file in it (returned as
 * `path`; the caller publishes it and disposes of the staging). Without,
 * the same is done in a private staging of its own and the folded blob is
 * returned in memory.
 */
export async function foldLayers(
  reg: LayerRegistry,
  ids: readonly string[],
  spec: LayerSpec,
  trust: SourceTrust,
  inheritCapabilities?: boolean,
): Promise<{ blob: LayerBlob; manifest: LayerManifest }>;
export async function foldLayers(
  reg: LayerRegistry,
  ids: readonly string[],
  spec: LayerSpec,
  trust: SourceTrust,
  inheritCapabilities: boolean,
  staging: BlobStaging,
): Promise<{ blob: LayerBlobFile; manifest: LayerManifest }>;
export async function foldLayers(
  reg: LayerRegistry,
  ids: readonly string[],
  spec: LayerSpec,
  trust: SourceTrust,
  inheritCapabilities = false,
  staging?: BlobStaging,
): Promise<{ blob: LayerBlob | LayerBlobFile; manifest: LayerManifest }> {
  if (staging !== undefined) return foldToFile(reg, ids, spec, trust, inheritCapabilities, staging);
  const own = BlobStaging.create();
  try {
    const { blob, manifest } = await foldToFile(reg, ids, spec, trust, inheritCapabilities, own);
    const { path, ...facts } = blob;
    return { blob: { ...facts, blob: readFileSync(path) }, manifest };
  } finally {
    own.dispose();
  }
}

async function foldToFile(
  reg: LayerRegistry,
  ids: readonly string[],
  spec: LayerSpec,
  trust: SourceTrust,
  inheritCapabilities: boolean,
  staging: BlobStaging,
): Promise<{ blob: LayerBlobFile; manifest: LayerManifest }> {
  if (ids.length < 2) throw new CairnError("USAGE", "layer fold needs at least two layers");
  const folded: FoldedFrom[] = [];
  const sources: LayerManifest[] = [];
  const blobs: BlobInput[] = [];
  for (const id of ids) {
    const doc = reg.readLayer(id);
    attest(doc, trust.keys, trust.allowUnsignedOffline, `layer ${id}`);
    const m = doc.value;
    sources.push(m);
    blobs.push({ path: await reg.stageBlob(m.sha256, m.size, staging), expected: m, where: reg.blobWhere(m.sha256) });
    folded.push({ id: m.id, sha256: m.sha256 });
  }
  // The sources are applied in order on one tree, as the layers would be
  // mounted: a later file replaces an earlier one, and a later member beneath
  // an earlier source's symlink is refused (TAR_THROUGH_SYMLINK).
  const spillDir = staging.path("contents");
  mkdirSync(spillDir, { mode: 0o700 });
  const merged = await readLayerBlobs(blobs, {
    spillDir,
    onReplace(old, next, where) {
      if ((old.type === "dir") !== (next.type === "dir")) {
        throw new CairnError("RESOLVE_CONFLICT", `${next.path} is a directory in one layer and not in another`, {
          path: where,
          hint: "a fold never replaces a directory by a file or symlink, or the reverse",
        });
      }
    },
  });
  const blob = await writeLayerBlob(treeToStreamEntries(merged), staging.path("folded.tar.gz"));
  const finalSpec = inheritCapabilities ? { ...spec, ...inheritedCapabilities(sources) } : spec;
  return { blob, manifest: manifestFor(finalSpec, blob, folded) };
}

/**
 * What a folded layer provides and requires when the user does not say: the
 * union of what its sources provide, and every source requirement that no
 * source satisfies (a requirement met inside the fold is no longer external).
 */
export function inheritedCapabilities(sources: readonly LayerManifest[]): { provides: Capability[]; requires: Requirement[] } {
  const provides = new Map<string, Capability>();
  for (const m of sources) for (const c of m.provides) provides.set(capabilityString(c), c);
  const requires = new Map<string, Requirement>();
  for (const m of sources) {
    for (const r of m.requires) {
      if (![...provides.values()].some((c) => satisfies(c, r))) requires.set(requirementString(r), r);
    }
  }
  const byKey = <T>(m: Map<string, T>): T[] => [...m.keys()].sort(compareBytes).map((k) => m.get(k)!);
  return { provides: byKey(provides), requires: byKey(requires) };
}

/** A formation over published layers, in the given order (which fixes their mount order among themselves). */
export function formationOf(reg: LayerRegistry, name: string, version: string, ids: readonly string[], description?: string): Formation {
  if (!REF_NAME.test(name)) throw new CairnError("USAGE", `formation name ${JSON.stringify(name).slice(0, 60)} is not valid`, { hint: NAME_RULE });
  parseVersion(version, "--version");
  formationKey(name, version);
  if (ids.length === 0) throw new CairnError("USAGE", "a formation needs at least one --layer");
  // Checked before anything is published, as resolve would: the same layer twice, or two versions of one name, is refused.
  const issues: { code: "RESOLVE_CONFLICT"; path: string; message: string }[] = [];
  const byName = new Map<string, string>();
  const manifests = ids.map((id) => reg.readLayer(id).value);
  manifests.forEach((m, i) => {
    const other = byName.get(m.name);
    if (other === m.id) issues.push({ code: "RESOLVE_CONFLICT", path: `--layer ${i + 1}`, message: `layer ${m.id} is listed twice` });
    else if (other !== undefined)
      issues.push({ code: "RESOLVE_CONFLICT", path: `--layer ${i + 1}`, message: `${other} and ${m.id} are two versions of ${m.name}` });
    else byName.set(m.name, m.id);
  });
  if (issues.length > 0) {
    throw new CairnError("RESOLVE_CONFLICT", `formation ${name}@${version} conflicts:\n${issues.map((x) => `  ${x.message}`).join("\n")}`, {
      path: issues[0]!.path,
      issues,
      hint: "list each layer once, and one version of each name",
    });
  }
  const layers = manifests.map((m) => ({ id: m.id, name: m.name, version: m.version, sha256: m.sha256 }));
  return { name, version, ...(description !== undefined ? { description } : {}), layers, provides: providesUnion(manifests) };
}
