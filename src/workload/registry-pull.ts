/**
 * Pulling from a registry into the content store, and from there into an
 * OCI layout: the glue between the registry client (oci) and the store,
 * which the oci floor may not import. Pulled blobs are raw objects named by
 * their digest, published by the store's own rules (staged in the writer's
 * private staging, verified, renamed), so a second pull of a digest finds
 * them and asks the registry for no blob, and a killed pull leaves only
 * staging, which the next writer cleans.
 *
 * The layout's blobs are hard links of the store's objects where the file
 * system allows (oci/layout-writer.ts, `linkImageLayout`): each pulled blob
 * is written once. An object found not to match its digest while the layout
 * is written (changed in place through an earlier layout's link, or damaged)
 * is fetched again, replacing it, and the layout written anew.
 */
import { randomBytes } from "node:crypto";
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { CairnError, parseSha256, type Reporter, type Sha256Digest } from "../core/index.ts";
import {
  linkImageLayout,
  registryClientFor,
  formatImageRef,
  importOciArchive,
  parseImageRef,
  pullImage,
  type BlobCache,
  type PulledImage,
  type RemoteOptions,
} from "../oci/index.ts";
import type { Store } from "../store/index.ts";

export type { RemoteOptions };

/**
 * The store's raw objects as a registry blob cache. Objects named in
 * `distrust` (found corrupt) count as absent: they are fetched again and
 * replace what is stored.
 */
export function storeBlobCache(store: Store, distrust: ReadonlySet<Sha256Digest> = new Set()): BlobCache {
  return {
    has: (d, size) => !distrust.has(d) && store.has("objects", d, size),
    sizeOf: (d) => {
      if (distrust.has(d)) return undefined;
      try {
        const st = lstatSync(store.pathOf("objects", d));
        return st.isFile() ? st.size : undefined;
      } catch {
        return undefined;
      }
    },
    stagePath: () => join(store.stagingDir, `pull-${randomBytes(8).toString("hex")}`),
    adopt: (staged, d, size) => store.adopt("objects", staged, d, size, { replace: distrust.has(d) }),
    put: (bytes) => store.put("objects", bytes, { checkExisting: distrust.size > 0 }),
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
export async function pullToStore(unsafeRef: string, store: Store, opts: RemoteOptions, report: Reporter = {}): Promise<PullResult> {
  return pullInto(unsafeRef, store, opts, report, new Set());
}

async function pullInto(unsafeRef: string, store: Store, opts: RemoteOptions, report: Reporter, distrust: ReadonlySet<Sha256Digest>): Promise<PullResult> {
  const ref = parseImageRef(unsafeRef, "ref");
  const client = registryClientFor(ref, opts);
  const image = await pullImage(client, ref, storeBlobCache(store, distrust), report);
  return { image, pinned: formatImageRef(image.ref) };
}

/** The digest a STORE_CORRUPT refusal names, when `e` is one (the store and the layout writer name the object by its digest). */
function corruptObject(e: unknown): Sha256Digest | undefined {
  if (!(e instanceof CairnError) || e.code !== "STORE_CORRUPT" || e.path === undefined) return undefined;
  try {
    return parseSha256(e.path);
  } catch {
    return undefined;
  }
}

/** Imports an `oci-archive` tarball into the store and writes its image as an OCI layout at `layoutDir` (atomically). */
export async function archiveToLayout(archivePath: string, layoutDir: string, store: Store): Promise<PulledImage> {
  const image = await importOciArchive(archivePath, storeBlobCache(store));
  await linkImageLayout(layoutDir, { manifest: image.manifest, config: image.config, layers: image.layers }, (d: Sha256Digest) => store.pathOf("objects", d));
  return image;
}

/**
 * Pulls into the store, then writes an OCI layout at `layoutDir` (atomically)
 * that cairn's workload rules accept, its blobs linked to the store's objects
 * where the file system allows. A stored object that does not match its
 * digest is fetched again (each such object once) and the layout written anew.
 */
export async function pullToLayout(unsafeRef: string, layoutDir: string, store: Store, opts: RemoteOptions, report: Reporter = {}): Promise<PullResult> {
  const ref = parseImageRef(unsafeRef, "ref");
  const distrust = new Set<Sha256Digest>();
  for (;;) {
    try {
      const r = await pullInto(unsafeRef, store, opts, report, distrust);
      await linkImageLayout(
        layoutDir,
        { manifest: r.image.manifest, config: r.image.config, layers: r.image.layers, refName: ref.digest === undefined ? ref.tag : undefined },
        (d: Sha256Digest) => store.pathOf("objects", d),
        r.image.fetched,
      );
      return r;
    } catch (e) {
      const bad = corruptObject(e);
      if (bad === undefined || distrust.has(bad)) throw e;
      report.log?.(`stored ${bad} does not match its digest: fetching it again`);
      distrust.add(bad);
    }
  }
}
