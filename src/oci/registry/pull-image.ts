/**
 * Pulling one image from a registry into a blob cache: resolve the tag once
 * to a digest, fetch the manifest by that digest (an index selects
 * linux/amd64), then the config and every layer by the digests the manifest
 * names, each verified while it streams and adopted by the cache only when
 * complete. What is already cached (same digest, same size) is not
 * requested again, so a second pull of a digest makes no blob request.
 *
 * Nothing is fetched by tag after the first resolve: a tag that moves while
 * the pull runs cannot make it mix the old index with the new manifest.
 */
import { CairnError, isJsonObject, parseJsonBytes, type JsonObject, type Reporter, type Sha256Digest } from "../../core/index.ts";
import { checkDescriptor, checkPlatform, type Descriptor } from "../documents.ts";
import { CONFIG_TYPES, INDEX_TYPES, MANIFEST_TYPES, documentMediaType, layerCompression, requireMediaType } from "../media-types.ts";
import { validateOciDocument } from "../schemas.ts";
import { stageBlob, type BlobCache } from "./blob-cache.ts";
import { formatImageRef, type ImageRef } from "./image-ref.ts";
import type { RegistryClient } from "./registry-client.ts";

/** The platform cairn runs, and the one an index selects. */
export const PULL_PLATFORM = Object.freeze({ architecture: "amd64", os: "linux" });

export interface PulledImage {
  /** The reference pulled, with the manifest (or index) digest it resolved to. */
  readonly ref: ImageRef;
  /** The index (or Docker manifest list) digest when the reference named one. */
  readonly index: Descriptor | undefined;
  /** The selected image manifest, as served (its digest kept, OCI or Docker v2 schema 2). */
  readonly manifest: Descriptor;
  readonly config: Descriptor;
  readonly layers: readonly Descriptor[];
  /** Bytes requested from the registry for blobs (0 when everything was cached). */
  readonly blobBytesFetched: number;
  /** Layer digests streamed and verified by this pull (the rest came from the cache). */
  readonly fetched: ReadonlySet<Sha256Digest>;
}

function parseDocument(bytes: Uint8Array, what: string): JsonObject {
  const doc = parseJsonBytes(bytes, { source: what });
  if (!isJsonObject(doc)) throw new CairnError("OCI_INVALID", `${what} is not a JSON object`, { path: what });
  return doc;
}

/** The one linux/amd64 manifest of an index (no variant, no os.version); OCI_SELECTION when none or several. */
function selectPlatform(index: JsonObject, what: string): Descriptor {
  validateOciDocument("index", index, what);
  const manifests = Array.isArray(index.manifests) ? index.manifests : [];
  const hits: { d: Descriptor; i: number }[] = [];
  manifests.forEach((m, i) => {
    if (!isJsonObject(m) || !isJsonObject(m.platform)) return;
    const p = m.platform;
    if (p.os === "linux" && p.architecture === "amd64" && p.variant === undefined && p["os.version"] === undefined)
      hits.push({ d: checkDescriptor(m, `/manifests/${i}`), i });
  });
  if (hits.length !== 1) {
    throw new CairnError("OCI_SELECTION", `${what} lists ${hits.length === 0 ? "no" : hits.length} linux/amd64 image manifest${hits.length === 1 ? "" : "s"}`, {
      path: "/manifests",
      hint: hits.length === 0 ? "cairn runs linux/amd64 images; this image has none" : "name the wanted manifest by digest",
    });
  }
  const { d, i } = hits[0]!;
  requireMediaType(d.mediaType, MANIFEST_TYPES, `/manifests/${i}/mediaType`);
  return d;
}

/** Fetches a JSON document into the cache (or reads it from there), verified. */
async function jsonObject(
  client: RegistryClient,
  cache: BlobCache,
  repo: string,
  digest: Sha256Digest,
  size: number | undefined,
  kind: "manifest" | "blob",
): Promise<{ bytes: Buffer }> {
  const cachedSize = size ?? cache.sizeOf(digest);
  if (cachedSize !== undefined && cache.has(digest, cachedSize)) return { bytes: cache.read(digest, client.manifestBytes) };
  if (kind === "manifest") {
    const m = await client.fetchManifest(repo, digest, size);
    cache.put(m.bytes);
    return { bytes: m.bytes };
  }
  if (size! > client.manifestBytes) {
    throw new CairnError("LIMIT_EXCEEDED", `limit manifestBytes exceeded by config ${digest} (${size} > ${client.manifestBytes} bytes)`, { path: digest });
  }
  const parts: Uint8Array[] = [];
  await client.fetchBlob(repo, digest, size!, (c) => void parts.push(c));
  const bytes = Buffer.concat(parts);
  cache.put(bytes);
  return { bytes };
}

/** Streams one layer blob into the cache's staging, verified, then has the cache adopt it; `onBytes` hears each chunk staged. */
async function pullBlob(client: RegistryClient, cache: BlobCache, repo: string, d: Descriptor, onBytes: (n: number) => void): Promise<void> {
  const staged = await stageBlob(cache, (write) =>
    client.fetchBlob(repo, d.digest, d.size, async (chunk) => {
      await write(chunk);
      onBytes(chunk.length);
    }),
  );
  cache.adopt(staged, d.digest, d.size);
}

/**
 * Pulls `ref` (tag or digest) through `client` into `cache`; see the module
 * comment. `report.log` hears what a tag resolved to; `report.progress`
 * hears phase "pull" in bytes of the layers not yet cached, on each chunk.
 */
export async function pullImage(client: RegistryClient, ref: ImageRef, cache: BlobCache, report: Reporter = {}): Promise<PulledImage> {
  const repo = ref.repository;
  let top: { digest: Sha256Digest; size: number | undefined };
  if (ref.digest !== undefined) top = { digest: ref.digest, size: undefined };
  else {
    top = await client.resolve(repo, ref.tag ?? "latest");
    report.log?.(`${formatImageRef(ref)} is ${top.digest}`);
  }
  const first = await jsonObject(client, cache, repo, top.digest, top.size, "manifest");
  const firstDoc = parseDocument(first.bytes, `manifest ${top.digest}`);
  // from the verified bytes alone (not the registry's Content-Type), so a pull from the store reads the same type
  const firstType = documentMediaType(firstDoc, "/mediaType");
  let index: Descriptor | undefined;
  let manifest: Descriptor;
  let manifestDoc: JsonObject;
  if (INDEX_TYPES.includes(firstType)) {
    index = { mediaType: firstType, digest: top.digest, size: first.bytes.length };
    manifest = selectPlatform(firstDoc, `index ${top.digest}`);
    const m = await jsonObject(client, cache, repo, manifest.digest, manifest.size, "manifest");
    manifestDoc = parseDocument(m.bytes, `manifest ${manifest.digest}`);
  } else {
    requireMediaType(firstType, MANIFEST_TYPES, "/mediaType");
    manifest = { mediaType: firstType, digest: top.digest, size: first.bytes.length };
    manifestDoc = firstDoc;
  }
  validateOciDocument("manifest", manifestDoc, `manifest ${manifest.digest}`);
  if (typeof manifestDoc.mediaType === "string") requireMediaType(manifestDoc.mediaType, manifest.mediaType, "/mediaType");
  const config = checkDescriptor(manifestDoc.config, "/config");
  requireMediaType(config.mediaType, CONFIG_TYPES, "/config/mediaType");
  const unsafeLayers = Array.isArray(manifestDoc.layers) ? manifestDoc.layers : [];
  const layers = unsafeLayers.map((l, i) => {
    const d = checkDescriptor(l, `/layers/${i}`);
    layerCompression(d.mediaType, `/layers/${i}/mediaType`); // refuse an unreadable layer before fetching anything large
    return d;
  });
  // the layout's descriptor will say linux/amd64: the config must say so first
  const configDoc = parseDocument((await jsonObject(client, cache, repo, config.digest, config.size, "blob")).bytes, `config ${config.digest}`);
  validateOciDocument("config", configDoc, `config ${config.digest}`);
  checkPlatform(configDoc, "/config");
  let bytes = 0;
  const fetched = new Set<Sha256Digest>();
  const progress = report.progress;
  // the bytes to fetch: each layer digest not cached, once (an image may name one layer twice)
  const missing = new Map(layers.filter((l) => !cache.has(l.digest, l.size)).map((l) => [l.digest, l.size]));
  const total = [...missing.values()].reduce((a, b) => a + b, 0);
  let done = 0;
  if (missing.size > 0) progress?.({ phase: "pull", done, total, unit: "bytes" });
  for (const l of layers) {
    if (cache.has(l.digest, l.size)) continue;
    const before = done;
    await pullBlob(client, cache, repo, l, (n) => {
      done = Math.min(before + l.size, done + n); // a retried request's bytes are not counted twice
      progress?.({ phase: "pull", done, total, unit: "bytes" });
    });
    done = before + l.size;
    bytes += l.size;
    fetched.add(l.digest);
  }
  return Object.freeze({
    ref: { ...ref, digest: index?.digest ?? manifest.digest },
    index,
    manifest,
    config,
    layers: Object.freeze(layers),
    blobBytesFetched: bytes,
    fetched,
  });
}
