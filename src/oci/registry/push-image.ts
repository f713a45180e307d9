/**
 * Pushing one image from an OCI layout to a registry: every blob the
 * manifest names (config, then layers; each skipped when the registry has
 * it), then the manifest under the tag. Blobs are read from the layout with
 * the same verified reads as assembly (exact size, sha256 checked), so a
 * corrupt layout is refused instead of pushed. The manifest goes last: a
 * push interrupted at any point leaves at most unreferenced blobs in the
 * registry, never a tag naming an incomplete image.
 */
import { CairnError, isJsonObject, parseJsonBytes, parseSha256, type Progress, type Sha256Digest } from "../../core/index.ts";
import { checkDescriptor } from "../documents.ts";
import { openLayoutDir, readVerified } from "../layout-reader.ts";
import { MANIFEST_TYPES, requireMediaType } from "../media-types.ts";
import type { RegistryClient } from "./registry-client.ts";

export interface PushOptions {
  /** Use chunked uploads (PATCH…PUT) of this many bytes instead of one PUT per blob. */
  readonly chunkBytes?: number;
  /** Progress: phase "push" in bytes of the config and layers, as each blob is sent (or found present). */
  readonly progress?: Progress | undefined;
}

/** Pushes the image `manifestDigest` of the layout at `layoutDir` to `repo:tag`; returns the manifest digest. */
export async function pushLayoutImage(
  client: RegistryClient,
  layoutDir: string,
  unsafeManifestDigest: string,
  repo: string,
  tag: string,
  options: PushOptions = {},
): Promise<Sha256Digest> {
  const digest = parseSha256(unsafeManifestDigest, "manifest");
  const reader = await openLayoutDir(layoutDir);
  try {
    const mf = await reader.openBlob(digest, "/manifest");
    if (mf.size > client.manifestBytes) {
      await mf.handle.close();
      throw new CairnError("LIMIT_EXCEEDED", `limit manifestBytes exceeded by manifest ${digest}`, { path: "/manifest" });
    }
    const bytes = await readVerified(mf, mf.size, digest, "/manifest");
    const doc = parseJsonBytes(bytes, { source: `manifest ${digest}` });
    if (!isJsonObject(doc) || typeof doc.mediaType !== "string")
      throw new CairnError("OCI_INVALID", `manifest ${digest} names no media type`, { path: "/mediaType" });
    requireMediaType(doc.mediaType, MANIFEST_TYPES, "/mediaType");
    const blobs = [checkDescriptor(doc.config, "/config"), ...(Array.isArray(doc.layers) ? doc.layers : []).map((l, i) => checkDescriptor(l, `/layers/${i}`))];
    const total = blobs.reduce((n, d) => n + d.size, 0);
    let done = 0;
    options.progress?.({ phase: "push", done, total, unit: "bytes" });
    for (const [i, d] of blobs.entries()) {
      const path = i === 0 ? "/config" : `/layers/${i - 1}`;
      const blob = await readVerified(await reader.openBlob(d.digest, path), d.size, d.digest, path);
      await client.pushBlob(repo, d.digest, blob, { chunked: options.chunkBytes !== undefined, chunkBytes: options.chunkBytes });
      done += d.size;
      options.progress?.({ phase: "push", done, total, unit: "bytes" });
    }
    return await client.pushManifest(repo, tag, bytes, doc.mediaType);
  } finally {
    await reader.close();
  }
}
