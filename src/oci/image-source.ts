/**
 * The OCI source: from an image layout (or any reader of raw OCI objects) to
 * verified, privately staged raw objects and the parsed values assembly needs.
 *
 * Order matters and is the point of this module. For every object: its
 * descriptor is checked (media type, sha256, size within limits, no `urls`,
 * no `data`), then exactly `size` bytes are read and hashed, then the bytes
 * are copied into private staging, and only then are they parsed (JSON) or
 * handed on for decompression (layers, from the staged copy only). Nothing
 * is ever re-read from the source. A staged copy is named only once its
 * digest matched; it is not fsynced (staging is private and per run), the
 * store's adoption is what makes a copy durable.
 * One exception, for assembly and for verify reading the store's own copies
 * (`stageLayers: false`): a layer is opened and its size checked but not
 * read here; its one read, by the layer reader, hashes exactly the bytes it
 * decompresses (and, for assembly, writes the copy the store adopts), and
 * nothing derived from them stands unless the digest matched at the end.
 *
 * The staging directory is itself a minimal OCI layout holding the selected
 * closure (`oci-layout`, `index.json`, `blobs/sha256/<manifest|config|layers>`),
 * plus `descriptor.json`, the JCS bytes of the selected descriptor.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  CairnError,
  canonicalBytes,
  isJsonObject,
  mkdirPrivate,
  parseJsonBytes,
  parseSha256,
  sha256,
  toJsonValue,
  digestComponents,
  writeFileAtomic,
  type JsonModel,
  type JsonObject,
  type Sha256Digest,
} from "../core/index.ts";
import { DEFAULT_LIMITS, enforceLimit, type LayerCompression, type LayerLimits, type PlatformPolicy, type PolicyKey } from "../tree/index.ts";

import { checkConfig, checkDescriptor, checkPlatform, type Descriptor, type OciLaunchConfig } from "./documents.ts";
import { CONFIG_TYPES, INDEX_TYPES, MANIFEST_TYPES, OCI_INDEX, layerCompression, requireMediaType } from "./media-types.ts";
import { copyVerified, openLayoutDir, readVerified, type OciObjectReader, type OpenedFile } from "./layout-reader.ts";
import { validateOciDocument } from "./schemas.ts";

/** One raw object as staged: its verified bytes (JSON documents only), digest, size and private path. */
export interface StagedObject {
  readonly digest: Sha256Digest;
  readonly size: number;
  /** The private staged copy (0600). */
  readonly path: string;
  readonly bytes: Uint8Array;
}

/** One layer of the selected image, staged and ready for `applyLayers`. */
export interface OciLayer {
  /** Position in the manifest, base layer 0. */
  readonly index: number;
  readonly mediaType: string;
  readonly compression: LayerCompression;
  /** Digest and size of the blob as stored (compressed). */
  readonly digest: Sha256Digest;
  readonly size: number;
  /** sha256 of the uncompressed tar stream, from the config's `rootfs.diff_ids`. */
  readonly diffId: Sha256Digest;
  /**
   * The private staged copy of the blob (0600); the only copy used from here
   * on. With `stageLayers: false`, the reader's open file instead
   * (`/proc/self/fd/N`, valid until the source is closed), never read here:
   * its bytes must be re-hashed as they are read (applyLayers' `recheckStored`).
   */
  readonly path: string;
}

export interface OciSource {
  readonly stagingDir: string;
  readonly ociLayout: StagedObject;
  readonly index: StagedObject;
  /** The selected `index.json` descriptor as JCS bytes (`descriptor.json` in staging). */
  readonly descriptor: StagedObject;
  readonly manifest: StagedObject;
  readonly config: StagedObject;
  /** Always linux/amd64 (anything else is refused). */
  readonly platform: { readonly os: "linux"; readonly architecture: "amd64" };
  /** Entrypoint, Cmd, Env, WorkingDir, User (and the fields a launch refuses) as the config gives them. */
  readonly launch: OciLaunchConfig;
  readonly diffIds: readonly Sha256Digest[];
  readonly layers: readonly OciLayer[];
  /** Closes the layer files left open by `stageLayers: false` (nothing otherwise). Safe to call more than once. */
  close(): Promise<void>;
}

export interface ReadOciSourceOptions {
  /** An OCI image layout directory. Give this or `reader`. */
  readonly layoutDir?: string;
  /** Any reader of raw OCI objects (e.g. the content store's copies). */
  readonly reader?: OciObjectReader;
  /** The image manifest to select from `index.json` (selects content; verified, never trusted). */
  readonly manifestDigest: string;
  /**
   * A new or empty directory; created 0700. The caller owns it: on a refusal
   * it may hold verified copies made before the refusal (never an unverified
   * one: copies are renamed into place only after their digest matched).
   */
  readonly stagingDir: string;
  readonly limits?: LayerLimits;
  /**
   * Off (assembly; verify, reading the store's own copies): each layer blob is opened
   * through the reader and its size checked, but neither read nor copied;
   * the caller reads it once, re-hashing the bytes it decompresses against
   * the digest (applyLayers' `recheckStored`), so what is applied is still
   * exactly what was hashed, without a second pass (assembly has the same
   * read write the copy it adopts: tree's `copyFd`). The open files are named through /proc/self/fd: without
   * it this mode is refused (PREREQUISITE_MISSING), as reading a layout is
   * (layout-reader), and cairn's store cannot be opened there either. On
   * (default): staged private copies, as above.
   */
  readonly stageLayers?: boolean;
  /**
   * The policy's `platform` (tree/layer-policy.ts). `refuse` (default): the
   * selected descriptor must declare linux/amd64. `config`: a descriptor
   * without `platform` is accepted and the config's os/architecture decide
   * (they are checked either way); a declared platform is checked as ever.
   */
  readonly platform?: PlatformPolicy;
  /**
   * Check mode (`cairn workload check`): a refusal that leaves the rest of
   * the image readable (a descriptor without platform) goes here, with the
   * policy that would admit it, instead of being thrown.
   */
  readonly report?: (error: CairnError, policy: PolicyKey | undefined) => void;
}

function parseDoc(bytes: Uint8Array, source: string, kind: "layout" | "index" | "manifest" | "config"): JsonObject {
  const doc = parseJsonBytes(bytes, { source });
  validateOciDocument(kind, doc, source);
  if (!isJsonObject(doc)) throw new CairnError("OCI_INVALID", `${source} is not a JSON object`, { path: "" });
  return doc;
}

/** Finds the one direct image-manifest descriptor with `wanted` in `index.json`. */
function selectDescriptor(index: JsonObject, wanted: Sha256Digest, options: ReadOciSourceOptions): { model: JsonModel; descriptor: Descriptor; path: string } {
  const manifests = Array.isArray(index.manifests) ? index.manifests : [];
  const hits = manifests.map((m, i) => ({ m, i })).filter(({ m }) => isJsonObject(m) && m.digest === wanted);
  if (hits.length === 0) {
    throw new CairnError("OCI_SELECTION", `index.json has no descriptor for ${wanted}`, {
      path: "/manifests",
      hint: "check the manifest digest in the spec against the layout's index.json",
    });
  }
  if (hits.length > 1) {
    throw new CairnError("OCI_SELECTION", `index.json lists ${wanted} ${hits.length} times`, {
      path: `/manifests/${hits[1]?.i}`,
      hint: "an ambiguous selection is refused; keep one descriptor per manifest",
    });
  }
  const { m, i } = hits[0]!;
  const path = `/manifests/${i}`;
  const descriptor = checkDescriptor(m, path);
  if (INDEX_TYPES.includes(descriptor.mediaType)) {
    throw new CairnError("OCI_SELECTION", "the selected descriptor is a nested index, not an image manifest", {
      path: `${path}/mediaType`,
      hint: "select the linux/amd64 image manifest's digest directly",
    });
  }
  requireMediaType(descriptor.mediaType, MANIFEST_TYPES, `${path}/mediaType`);
  const platform = isJsonObject(m) ? m.platform : undefined;
  if (platform === undefined && options.platform === "config") return { model: m!, descriptor, path };
  if (!isJsonObject(platform)) {
    const e = new CairnError("OCI_PLATFORM", "the selected descriptor declares no platform", {
      path: `${path}/platform`,
      hint: 'cairn needs "platform": {"os": "linux", "architecture": "amd64"} on the selected descriptor; name the policy "platform: config" to let the image config\'s linux/amd64 decide (umoci and skopeo write no platform)',
    });
    if (platform !== undefined || options.report === undefined) throw e;
    options.report(e, "platform");
    return { model: m!, descriptor, path };
  }
  checkPlatform(platform, `${path}/platform`);
  return { model: m!, descriptor, path };
}

/**
 * An opened, unread layer blob as a path to its open file: the size must be
 * the descriptor's (SIZE_MISMATCH otherwise); the digest is checked by the
 * one read that follows. Kept in `opened` until the source is closed.
 */
function openedPath(file: OpenedFile, size: number, path: string, opened: OpenedFile[]): string {
  opened.push(file);
  if (file.size !== size) {
    throw new CairnError("SIZE_MISMATCH", `${file.locator} has ${file.size} bytes, its descriptor says ${size}`, {
      path,
      hint: "the layout is corrupt or was modified",
    });
  }
  return `/proc/self/fd/${file.handle.fd}`;
}

async function closeAll(opened: OpenedFile[]): Promise<void> {
  await Promise.all(opened.splice(0).map((f) => f.handle.close().catch(() => undefined)));
}

/** Reads, verifies, stages and selects; see the module comment for the order of checks. */
export async function readOciSource(options: ReadOciSourceOptions): Promise<OciSource> {
  const limits = options.limits ?? DEFAULT_LIMITS;
  const wanted = parseSha256(options.manifestDigest, "/source/oci/manifest");
  if ((options.layoutDir === undefined) === (options.reader === undefined)) {
    throw new CairnError("USAGE", "readOciSource needs exactly one of layoutDir or reader");
  }
  const staging = options.stagingDir;
  mkdirPrivate(staging);
  mkdirPrivate(join(staging, "blobs", "sha256"));
  const reader = options.reader ?? (await openLayoutDir(options.layoutDir!));
  const blobDest = (d: Sha256Digest): string => join(staging, "blobs", ...digestComponents(d));
  const stageBytes = (name: string, bytes: Uint8Array): StagedObject => {
    const path = join(staging, name);
    writeFileAtomic(path, bytes, { mode: 0o600, durable: false }); // private staging, read back and dropped or re-put by the store
    return { digest: sha256(bytes), size: bytes.length, path, bytes };
  };
  const opened: OpenedFile[] = [];
  const unstaged = options.stageLayers === false;
  if (unstaged && !existsSync("/proc/self/fd")) {
    throw new CairnError("PREREQUISITE_MISSING", "reading layers unstaged needs Linux /proc (open files named through /proc/self/fd)", {
      path: "stageLayers",
      hint: "run cairn on Linux with /proc mounted",
    });
  }
  try {
    const top = async (name: "oci-layout" | "index.json"): Promise<StagedObject> => {
      const f = await reader.openTop(name);
      enforceLimit(limits, "ociJsonBytes", f.size, name);
      return stageBytes(name, await readVerified(f, f.size, undefined, name));
    };
    const ociLayout = await top("oci-layout");
    parseDoc(ociLayout.bytes, "oci-layout", "layout");
    const indexObj = await top("index.json");
    const index = parseDoc(indexObj.bytes, "index.json", "index");
    if (typeof index.mediaType === "string") requireMediaType(index.mediaType, OCI_INDEX, "/mediaType");
    enforceLimit(limits, "descriptors", Array.isArray(index.manifests) ? index.manifests.length : 0, "/manifests");

    const selected = selectDescriptor(index, wanted, options);
    const descriptor = stageBytes("descriptor.json", canonicalBytes(toJsonValue(selected.model)));

    const jsonBlob = async (d: Descriptor, path: string): Promise<StagedObject> => {
      enforceLimit(limits, "ociJsonBytes", d.size, `${path}/size`);
      const bytes = await readVerified(await reader.openBlob(d.digest, path), d.size, d.digest, path);
      const dest = blobDest(d.digest);
      writeFileAtomic(dest, bytes, { mode: 0o600, durable: false });
      return { digest: d.digest, size: d.size, path: dest, bytes };
    };
    const manifest = await jsonBlob(selected.descriptor, selected.path);
    const m = parseDoc(manifest.bytes, `manifest ${wanted}`, "manifest");
    if (typeof m.mediaType === "string") requireMediaType(m.mediaType, MANIFEST_TYPES, "/mediaType");
    // the document's own type agrees with the descriptor that selected it (an OCI descriptor cannot select a Docker manifest)
    if (typeof m.mediaType === "string" && m.mediaType !== selected.descriptor.mediaType)
      requireMediaType(m.mediaType, selected.descriptor.mediaType, "/mediaType");
    const configDesc = checkDescriptor(m.config, "/config");
    requireMediaType(configDesc.mediaType, CONFIG_TYPES, "/config/mediaType");
    const unsafeLayers = Array.isArray(m.layers) ? m.layers : [];
    enforceLimit(limits, "descriptors", unsafeLayers.length, "/layers");
    const layerDescs = unsafeLayers.map((l, i) => {
      const d = checkDescriptor(l, `/layers/${i}`);
      return { d, compression: layerCompression(d.mediaType, `/layers/${i}/mediaType`) };
    });
    enforceLimit(
      limits,
      "compressedBytes",
      layerDescs.reduce((n, l) => n + l.d.size, 0),
      "/layers",
    );

    const config = await jsonBlob(configDesc, "/config");
    const checked = checkConfig(parseDoc(config.bytes, `config ${configDesc.digest}`, "config"), layerDescs.length);

    const layers: OciLayer[] = [];
    for (const [i, { d, compression }] of layerDescs.entries()) {
      const path = `/layers/${i}`;
      let dest = layers.find((l) => l.digest === d.digest)?.path;
      if (dest === undefined && unstaged) dest = openedPath(await reader.openBlob(d.digest, path), d.size, path, opened);
      else if (dest === undefined) {
        dest = blobDest(d.digest);
        await copyVerified(await reader.openBlob(d.digest, path), d.size, d.digest, dest, path);
      }
      layers.push(Object.freeze({ index: i, mediaType: d.mediaType, compression, digest: d.digest, size: d.size, diffId: checked.diffIds[i]!, path: dest }));
    }
    return Object.freeze({
      stagingDir: staging,
      ociLayout,
      index: indexObj,
      descriptor,
      manifest,
      config,
      platform: Object.freeze({ os: "linux", architecture: "amd64" }),
      launch: checked.launch,
      diffIds: checked.diffIds,
      layers: Object.freeze(layers),
      close: () => closeAll(opened),
    });
  } catch (e) {
    await closeAll(opened);
    throw e;
  } finally {
    if (options.reader === undefined) await reader.close();
  }
}
