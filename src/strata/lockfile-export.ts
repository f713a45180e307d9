/**
 * `lock export`: a resolved, verified environment lockfile becomes an OCI
 * image layout, written by the OCI area's deterministic writer. This is the
 * single definition of what an exported image holds:
 *
 *   layers   the base (a `rootfs:` directory packed as one reproducible layer,
 *            or an `oci:` image's own layers, byte for byte), then each strata
 *            layer's blob, byte for byte, in mount order;
 *   config   Env from the lockfile's `env` (sorted by name), User, WorkingDir
 *            and, when given, Cmd; no `created`, no history;
 *   annotations  the EnvironmentID, the lockfile's sha256, the base digest.
 *
 *   added    then, only when the lockfile has them, two layers of cairn's own
 *            (uncompressed tar, export-layer.ts): the pinned package archives
 *            and their installer (export-packages.ts), and the Lmod tree
 *            and login script (export-lmod.ts). Both follow from the
 *            lockfile alone, so the manifest digest stays a function of the
 *            lockfile (and base); a lockfile with no frozen package, no
 *            modulefile and no Lmod preload list exports exactly as before.
 *
 * A dirty lockfile (a mutable upper layer) is refused first, with LOCK_DIRTY
 * naming `/mutable_layer`: what a writable upper layer holds is covered by
 * nothing an image could carry (and such a lockfile is never signed, so the
 * signature check would otherwise hide the reason). Then the lockfile is
 * verified exactly as `lock verify` does (signature, Validate, freshness,
 * policy, every layer's manifest and blob in the registries) and the base is
 * re-probed and must have the lockfile's base digest: an unverified
 * lockfile never becomes an image.
 *
 * What the image's digest does not promise (said by `caveats`): a `rootfs:`
 * base is pinned by its probed facts, not by every byte, so the same
 * lockfile over another directory with the same facts exports another
 * image; pinned packages are placed with an installer, not installed;
 * unpinned package requests and on_ready commands are not acted upon.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { CairnError, Sha256Hasher, sortByBytes, type Sha256Digest } from "../core/index.ts";
import {
  checkRefName,
  OCI_LAYER_GZIP,
  OCI_LAYER_TAR,
  readOciSource,
  writeOciArchive,
  writeOciLayout,
  type LayoutImageInput,
  type LayoutLayerInput,
  type WrittenArchive,
  type WrittenLayout,
} from "../oci/index.ts";
import { directoryView } from "../tree/index.ts";
import { probedBase, type LockBase } from "./base.ts";
import { writeLayerBlob } from "./blob.ts";
import { DEFAULT_MAX_UNPACKED_BYTES } from "./blob-reader.ts";
import { BlobStaging, fileChunks } from "./blob-staging.ts";
import { readDirectoryStreamed } from "../tree/index.ts";
import { lockfileCaveats } from "./lockfile-caveats.ts";
import type { Lockfile } from "./lockfile.ts";
import { verifyLock, verifyLockContents, type VerifyOptions, type VerifyReport } from "./lockfile-verify.ts";
import { readLockfile } from "./lockfile-io.ts";
import { lmodExportLayer } from "./export-lmod.ts";
import { packagesExportLayer } from "./export-packages.ts";
import type { PackageManager } from "./profile-model.ts";
import { probeOciBase } from "./probe-oci.ts";
import { probeRoot } from "./probe.ts";

/** The image manifest annotations an export writes (the values are covered by the manifest digest). */
export const EXPORT_ANNOTATIONS = {
  environmentId: "dev.cairn.environment.id",
  lockfile: "dev.cairn.lockfile.sha256",
  base: "dev.cairn.base.digest",
} as const;

/** Where the base's bytes come from: a root directory or an OCI image (the same forms `--base` takes, minus `host`). */
export type ExportBase = { readonly kind: "rootfs"; readonly dir: string } | { readonly kind: "oci"; readonly layoutDir: string; readonly manifest: string };

export interface ExportLaunch {
  /** The image's Cmd (absolute program path first); absent: an image with no command. */
  readonly argv?: readonly string[];
  /** Numeric `uid:gid` (cairn runs nothing as root). */
  readonly user: string;
  readonly workdir: string;
}

/** What `lock export` writes: an OCI image layout, or an oci-archive (the tar of one), as skopeo names the two transports. */
export type ExportFormat = "oci" | "oci-archive";

export const EXPORT_FORMATS: readonly ExportFormat[] = ["oci", "oci-archive"];

export interface ExportLockOptions {
  readonly lockPath: string;
  /** As `verifyLock` takes them; `registries` must not be empty (the layer bytes come from them), `probedBase` is made here. */
  readonly verify: Omit<VerifyOptions, "probedBase">;
  readonly base: ExportBase;
  /** Also unpack every layer and check it against its manifest's file list (`lock verify --contents`). */
  readonly contents?: boolean;
  readonly launch: ExportLaunch;
  /** The layout directory to create, or with `format: "oci-archive"` the archive file; it must not exist. */
  readonly outDir: string;
  /** `oci` (default): an image layout directory; `oci-archive`: one deterministic tar of that layout (oci/archive-writer.ts). */
  readonly format?: ExportFormat;
  /** The image's name in the layout (`org.opencontainers.image.ref.name` on its index.json entry, `--tag`); not part of the manifest digest. */
  readonly refName?: string;
  /** Private staging for an OCI base (a fresh directory inside, removed afterwards); default the OS temp dir. */
  readonly tmpDir?: string;
  /** Mirrors to read pinned package archives from instead of the index each frozen set recorded (export-packages.ts). */
  readonly packageIndexes?: Partial<Record<PackageManager, string>>;
  /** Relative package mirror paths resolve against this directory (default the process's). */
  readonly cwd?: string;
}

/** A layer the export added above the lockfile's own. */
export interface AddedExportLayer {
  readonly kind: "packages" | "lmod";
  readonly digest: Sha256Digest;
  readonly size: number;
}

export interface ExportResult {
  /** The image written (with `format: "oci-archive"`, `dir` is the archive file). */
  readonly layout: WrittenLayout;
  /** The archive's size and sha256, with `format: "oci-archive"`. */
  readonly archive?: WrittenArchive["archive"];
  readonly environmentId: Sha256Digest;
  readonly lockfileSha256: Sha256Digest;
  readonly report: VerifyReport;
  /** The export's own layers, in image order (none for a lockfile without frozen packages, modulefiles or Lmod defaults). */
  readonly added: readonly AddedExportLayer[];
  readonly caveats: readonly string[];
}

export const DEFAULT_EXPORT_LAUNCH: ExportLaunch = { user: "1000:1000", workdir: "/" };

function refuse(message: string, path: string, hint: string): never {
  throw new CairnError("EXPORT_REFUSED", message, { path, hint });
}

async function probeExportBase(base: ExportBase, now: Date): Promise<LockBase> {
  if (base.kind === "rootfs") return probedBase(await probeRoot(directoryView(base.dir), base.dir), `rootfs:${base.dir}`, now);
  return probeOciBase({ layoutDir: base.layoutDir, manifestDigest: base.manifest, now });
}

/**
 * sha256 of the uncompressed tar: the config's diff_id, computed, never
 * copied from a manifest. The staged (verified) blob is gunzipped as a
 * stream and hashed as it flows, bounded by layer.max_unpacked_bytes.
 */
async function diffIdOf(path: string, where: string): Promise<Sha256Digest> {
  const h = new Sha256Hasher();
  try {
    await pipeline(Readable.from(fileChunks(path), { highWaterMark: 1 }), createGunzip(), async (tar: AsyncIterable<Buffer>) => {
      for await (const chunk of tar) {
        h.update(chunk);
        if (h.size > DEFAULT_MAX_UNPACKED_BYTES) throw new Error("layer.max_unpacked_bytes");
      }
    });
  } catch (cause) {
    throw new CairnError("TAR_INVALID", `${where}: the layer blob is not a gzip stream within layer.max_unpacked_bytes`, { path: where, cause });
  }
  return h.digest();
}

/** The lockfile's layers in mount order (a frozen, verified lockfile has every mount_order, all distinct). */
function inMountOrder(lock: Lockfile): { i: number; l: Lockfile["layers"][number] }[] {
  return lock.layers.map((l, i) => ({ i, l })).sort((a, b) => a.l.mount_order! - b.l.mount_order!);
}

function envList(lock: Lockfile): string[] {
  return sortByBytes([...lock.env.entries()], ([k]) => k).map(([k, v]) => `${k}=${v}`);
}

function checkLaunch(l: ExportLaunch): void {
  if (!/^[1-9][0-9]{0,9}:[1-9][0-9]{0,9}$/.test(l.user))
    refuse(`user ${JSON.stringify(l.user)} is not a nonzero numeric uid:gid`, "/launch/user", "give --user 1000:1000 (cairn runs nothing as root)");
  if (!l.workdir.startsWith("/")) refuse("the working directory must be absolute", "/launch/workdir", "give --workdir /");
  if (l.argv !== undefined && (l.argv.length === 0 || !l.argv[0]!.startsWith("/")))
    refuse("the command's program must be an absolute path (there is no shell and no PATH search)", "/launch/argv/0", "give --cmd /usr/bin/prog ARG...");
}

/**
 * Refuses a dirty lockfile (LOCK_DIRTY at /mutable_layer) before its
 * signature is checked: such a lockfile is never signed, so the signature
 * check would report SIGNATURE_MISSING and hide the reason. Reading the
 * unverified file here only ever leads to a refusal; a file that does not
 * parse is left to verifyLock, which reports why.
 */
function refuseDirty(path: string, verified?: Lockfile): void {
  let lock = verified;
  if (lock === undefined) {
    try {
      lock = readLockfile(path).lock;
    } catch {
      return;
    }
  }
  if (lock.mutable_layer === undefined) return;
  throw new CairnError("LOCK_DIRTY", "the lockfile enables a mutable upper layer (dirty): what it holds cannot be part of an image", {
    path: "/mutable_layer",
    hint: "freeze the upper layer into a layer (`cairn layer freeze UPPER_DIR --lock LOCK …`) and export the lockfile that resolves without mutable_layer",
  });
}

/** Verifies the lockfile and its base, then writes the image layout at `outDir` (atomically; it must not exist). */
export async function exportLock(opts: ExportLockOptions): Promise<ExportResult> {
  checkLaunch(opts.launch);
  if (opts.format !== undefined && !EXPORT_FORMATS.includes(opts.format))
    refuse(
      `format ${JSON.stringify(opts.format)} is not one of ${EXPORT_FORMATS.join(", ")}`,
      "/format",
      "give oci (a layout directory) or oci-archive (one tar file)",
    );
  if (opts.refName !== undefined) checkRefName(opts.refName, "/refName"); // before the (long) verification
  if (opts.verify.registries.length === 0) {
    refuse(
      "export needs the registries that hold the lockfile's layers",
      "/layers",
      "give --registry (the layer blobs are copied from it, after verification)",
    );
  }
  refuseDirty(opts.lockPath);
  const probed = await probeExportBase(opts.base, opts.verify.now);
  const report = await verifyLock(opts.lockPath, { ...opts.verify, probedBase: probed });
  const lock = report.lock;
  if (lock.mutable_layer !== undefined) refuseDirty(opts.lockPath, lock); // a signed dirty lockfile (signed before cairn refused to): same refusal
  if (opts.contents) await verifyLockContents(lock, opts.verify.registries);
  const layers: LayoutLayerInput[] = [];
  const staging = mkdtempSync(join(opts.tmpDir ?? tmpdir(), "cairn-export-"));
  // Layer blobs go through private staged files (streamed, checked as copied), never memory.
  const blobStaging = BlobStaging.create(staging);
  try {
    if (opts.base.kind === "rootfs") {
      const b = await writeLayerBlob(readDirectoryStreamed(opts.base.dir), blobStaging.path("base.tar.gz"));
      layers.push({ mediaType: OCI_LAYER_GZIP, digest: b.sha256, size: b.size, diffId: b.diff_id, blob: { path: b.path } });
    } else {
      const src = await readOciSource({ layoutDir: opts.base.layoutDir, manifestDigest: opts.base.manifest, stagingDir: join(staging, "oci") });
      for (const l of src.layers) {
        if (l.compression !== "gzip" && l.compression !== "none") {
          refuse(
            `base layer ${l.index} is ${l.mediaType}; an export writes gzip or uncompressed layers`,
            `/base/layers/${l.index}`,
            "use a base image with gzip layers",
          );
        }
        layers.push({
          mediaType: l.compression === "gzip" ? OCI_LAYER_GZIP : OCI_LAYER_TAR,
          digest: l.digest,
          size: l.size,
          diffId: l.diffId,
          blob: { path: l.path },
        });
      }
    }
    const blobs = new Map<number, string>();
    const strata = inMountOrder(lock);
    let staged = 0;
    opts.verify.progress?.({ phase: "stage layers", done: staged, total: strata.length, unit: "layers" });
    for (const { i, l } of strata) {
      const reg = opts.verify.registries.find((r) => r.hasBlob(l.sha256!))!; // verifyLock found and checked it
      const path = await reg.stageBlob(l.sha256!, l.size!, blobStaging);
      blobs.set(i, path);
      layers.push({ mediaType: OCI_LAYER_GZIP, digest: l.sha256!, size: l.size!, diffId: await diffIdOf(path, `/layers/${i}`), blob: { path } });
      opts.verify.progress?.({ phase: "stage layers", done: ++staged, total: strata.length, unit: "layers" });
    }
    const added: AddedExportLayer[] = [];
    const addedCaveats: string[] = [];
    const packages = await packagesExportLayer(lock, {
      ...(opts.packageIndexes ? { indexes: opts.packageIndexes } : {}),
      cwd: opts.cwd ?? process.cwd(),
      staging: blobStaging,
    });
    const lmod = await lmodExportLayer(
      lock,
      (i) => ({ path: blobs.get(i)! }),
      inMountOrder(lock).map(({ i }) => i),
    );
    for (const [kind, a] of [
      ["packages", packages],
      ["lmod", lmod],
    ] as const) {
      if (a === undefined) continue;
      layers.push(a.layer);
      added.push({ kind, digest: a.layer.digest, size: a.layer.size });
      addedCaveats.push(...a.caveats);
    }
    const image: LayoutImageInput = {
      config: {
        User: opts.launch.user,
        Env: envList(lock),
        WorkingDir: opts.launch.workdir,
        ...(opts.launch.argv !== undefined ? { Cmd: opts.launch.argv } : {}),
      },
      layers,
      annotations: {
        [EXPORT_ANNOTATIONS.environmentId]: report.environmentId,
        [EXPORT_ANNOTATIONS.lockfile]: report.lockfileSha256,
        [EXPORT_ANNOTATIONS.base]: lock.base.digest!,
      },
      access: "private",
      ...(opts.refName !== undefined ? { refName: opts.refName } : {}),
    };
    let archive: WrittenArchive["archive"] | undefined;
    let layout: WrittenLayout;
    if (opts.format === "oci-archive") ({ archive, ...layout } = writeOciArchive(opts.outDir, image));
    else layout = writeOciLayout(opts.outDir, image);
    const caveats = [...lockfileCaveats(lock), ...addedCaveats];
    if (opts.base.kind === "rootfs")
      caveats.push("the rootfs base is pinned by its probed facts, not by every byte: another directory with the same facts exports another image");
    return {
      layout,
      ...(archive !== undefined ? { archive } : {}),
      environmentId: report.environmentId,
      lockfileSha256: report.lockfileSha256,
      report,
      added,
      caveats,
    };
  } finally {
    blobStaging.dispose();
    rmSync(staging, { recursive: true, force: true });
  }
}
