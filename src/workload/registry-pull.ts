/**
 * Pulling from a registry into the content store, and from there into an
 * OCI layout: the glue between the registry client (oci) and the store,
 * which the oci floor may not import. Pulled blobs are raw objects named by
 * their digest, published by the store's own rules (staged in the writer's
 * private staging, verified, renamed), so a second pull of a digest finds
 * them and asks the registry for no blob, and a killed pull leaves only
 * staging, which the next writer cleans.
 */
import { randomBytes } from "node:crypto";
import { lstatSync } from "node:fs";
import { join } from "node:path";
import type { Sha256Digest } from "../core/index.ts";
import {
  registryClientFor,
  formatImageRef,
  importOciArchive,
  parseImageRef,
  pullImage,
  writeImageLayout,
  type BlobCache,
  type PulledImage,
  type RemoteOptions,
} from "../oci/index.ts";
import type { Store } from "../store/index.ts";

export type { RemoteOptions };

/** The store's raw objects as a registry blob cache. */
export function storeBlobCache(store: Store): BlobCache {
  return {
    has: (d, size) => store.has("objects", d, size),
    sizeOf: (d) => {
      try {
        const st = lstatSync(store.pathOf("objects", d));
        return st.isFile() ? st.size : undefined;
      } catch {
        return undefined;
      }
    },
    stagePath: () => join(store.stagingDir, `pull-${randomBytes(8).toString("hex")}`),
    adopt: (staged, d, size) => store.adopt("objects", staged, d, size),
    put: (bytes) => store.put("objects", bytes),
    read: (d, max) => store.read("objects", d, max, "manifestBytes"),
    pathOf: (d) => store.pathOf("objects", d),
  };
}

export interface PullResult {
  readonly image: PulledImage;
  /** `HOST/REPO@sha256:…` of the pulled manifest (or index). */
  readonly pinned: string;
}

/** Pulls `unsafeRef` into the store (content by digest). */
export async function pullToStore(unsafeRef: string, store: Store, opts: RemoteOptions, progress?: (line: string) => void): Promise<PullResult> {
  const ref = parseImageRef(unsafeRef, "ref");
  const client = registryClientFor(ref, opts);
  const image = await pullImage(client, ref, storeBlobCache(store), progress);
  return { image, pinned: formatImageRef(image.ref) };
}

/** Imports an `oci-archive` tarball into the store and writes its image as an OCI layout at `layoutDir` (atomically). */
export async function archiveToLayout(archivePath: string, layoutDir: string, store: Store): Promise<PulledImage> {
  const image = await importOciArchive(archivePath, storeBlobCache(store));
  await writeImageLayout(layoutDir, { manifest: image.manifest, config: image.config, layers: image.layers }, (d: Sha256Digest) => store.pathOf("objects", d));
  return image;
}

/** Pulls into the store, then writes an OCI layout at `layoutDir` (atomically) that cairn's workload rules accept. */
export async function pullToLayout(
  unsafeRef: string,
  layoutDir: string,
  store: Store,
  opts: RemoteOptions,
  progress?: (line: string) => void,
): Promise<PullResult> {
  const r = await pullToStore(unsafeRef, store, opts, progress);
  const ref = parseImageRef(unsafeRef, "ref");
  await writeImageLayout(
    layoutDir,
    { manifest: r.image.manifest, config: r.image.config, layers: r.image.layers, refName: ref.digest === undefined ? ref.tag : undefined },
    (d: Sha256Digest) => store.pathOf("objects", d),
    r.image.fetched,
  );
  return r;
}
