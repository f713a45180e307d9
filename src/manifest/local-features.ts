/**
 * Local features pinned by their bytes (`--features-dir DIR`). A local
 * feature (`"./my-feature": {}`) names a directory beside devcontainer.json,
 * so its id says nothing about what is in it: without DIR it is accepted and
 * labelled unpinned. With DIR, each local feature's directory is read by the
 * tree floor's one directory reader and its `cairn.fs/1` digest (owner 0:0,
 * mtime 0, modes normalized as git keeps them, so the same checkout gives the
 * same digest on every host) becomes its pin.
 *
 * The pins live in cairn's extension object (`local_features`: id → digest),
 * never in the standard's core: the standard's address of a file stays the one
 * every conforming implementation computes, and the extension address moves
 * when any byte of a local feature does, so a resume check names the feature.
 *
 * Attacks refused, each naming the path: an id that climbs out of DIR (`../x`,
 * `./a/../../x`; PATH_UNSAFE), a symlink on the way to the feature or as the
 * feature itself (it would let the digest cover some other directory;
 * PATH_UNSAFE), a symlink inside the feature leaving it (PATH_UNSAFE), a
 * socket, FIFO or device (SOURCE_NOT_REGULAR), a tree over a named limit
 * (`features_dir.*`, LIMIT_EXCEEDED), a missing directory (IO_ERROR), a
 * directory without `devcontainer-feature.json` (MANIFEST_REFUSED).
 */
import { lstatSync } from "node:fs";
import { join, posix } from "node:path";
import { CairnError, childPath, compareBytes, ioError, type Sha256Digest } from "../core/index.ts";
import { entriesTree, fsIdentity, readDirectory, type DirLimits } from "../tree/index.ts";
import type { FeatureEntry } from "./features.ts";
import { normalizeFeatureId } from "./reference.ts";

/** Per feature directory; each error names the limit (`features_dir.max_entries`, …). */
export const FEATURE_DIR_LIMITS: DirLimits = {
  maxEntries: 10_000,
  maxFileBytes: 64 * 1024 * 1024,
  maxTotalBytes: 256 * 1024 * 1024,
  names: { entries: "features_dir.max_entries", fileBytes: "features_dir.max_file_bytes", totalBytes: "features_dir.max_total_bytes" },
};

/** The file every feature directory holds (the feature spec's metadata). */
const FEATURE_METADATA = "devcontainer-feature.json";

export type LocalFeaturePins = { [id: string]: Sha256Digest };

/**
 * The directory of local feature `unsafeId` under `featuresDir`, checked
 * without following anything: the id stays inside DIR once normalized, and no
 * component from DIR down to the feature is a symlink.
 */
export function localFeatureDir(featuresDir: string, unsafeId: string, pointer: string): string {
  const rel = posix.normalize(unsafeId);
  // `../x` or `./a/../../x` climbs out of DIR: the digest would cover a directory the user did not name.
  if (rel === "." || rel === ".." || rel.startsWith("../") || rel.startsWith("/")) {
    throw new CairnError("PATH_UNSAFE", `local feature ${JSON.stringify(unsafeId)} is not a directory inside --features-dir (it resolves to ${rel})`, {
      path: pointer,
      hint: "a local feature is a subdirectory of the features directory (the devcontainers CLI requires it under .devcontainer/); move it there",
    });
  }
  let abs = featuresDir;
  for (const part of rel.split("/").filter((p) => p !== "")) {
    abs = join(abs, part);
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(abs);
    } catch (cause) {
      throw ioError(abs, cause);
    }
    if (st.isSymbolicLink()) {
      throw new CairnError("PATH_UNSAFE", `${abs} is a symlink on the way to local feature ${JSON.stringify(unsafeId)}; it is not followed`, {
        path: abs,
        hint: "name the real directory: a link would let the digest cover a directory outside --features-dir",
      });
    }
  }
  return abs;
}

/** The `cairn.fs/1` digest of one local feature directory, read within `limits`. */
export function localFeatureDigest(dir: string, limits: DirLimits = FEATURE_DIR_LIMITS): Sha256Digest {
  const entries = readDirectory(dir, "", limits, { symlinks: "inside" });
  if (!entries.some((e) => e.type === "file" && e.path === FEATURE_METADATA)) {
    throw new CairnError("MANIFEST_REFUSED", `${dir} holds no ${FEATURE_METADATA}: it is not a devcontainer feature`, {
      path: join(dir, FEATURE_METADATA),
      hint: "point --features-dir at the folder holding devcontainer.json (the local feature ids are relative to it)",
    });
  }
  return fsIdentity(entriesTree(entries));
}

/** Pins every local feature of `features` (ids `./…`, `../…`) by its directory under `featuresDir`. */
export function pinLocalFeatures(features: readonly FeatureEntry[], featuresDir: string, limits: DirLimits = FEATURE_DIR_LIMITS): LocalFeaturePins {
  const pins: LocalFeaturePins = {};
  for (const f of [...features].sort((a, b) => compareBytes(a.id, b.id))) {
    const kind = normalizeFeatureId(f.id);
    if (!kind.ok || kind.kind !== "local") continue;
    pins[f.id] = localFeatureDigest(localFeatureDir(featuresDir, f.id, childPath("/features", f.id)), limits);
  }
  return pins;
}

/** Ids of the local features of a core, sorted. */
export function localFeatureIds(features: readonly FeatureEntry[]): string[] {
  return features
    .filter((f) => {
      const r = normalizeFeatureId(f.id);
      return r.ok && r.kind === "local";
    })
    .map((f) => f.id)
    .sort(compareBytes);
}
