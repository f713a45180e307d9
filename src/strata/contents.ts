/**
 * Deep check of a layer: its blob, read through the strict tar gate (see
 * blob-reader.ts: bounded, path-checked, no member through a symlink, every
 * parent present), holds
 * exactly the regular files and symlinks its manifest lists in
 * `content_manifest` and `symlinks`. Conflict detection relies on those lists,
 * so a manifest that under-reports a file could hide a conflict; this check
 * (run by `lock verify --contents`) makes the lists a verified fact rather
 * than the signer's claim.
 */
import { CairnError } from "../core/index.ts";
import type { LayerManifest } from "./layer-manifest.ts";
import { readLayerBlobs } from "./blob-reader.ts";

/** `blob` is the bytes or a staged copy's path; either is checked against the manifest's size and digest before it is unpacked. */
export async function checkLayerContents(blob: Uint8Array | { readonly path: string }, m: LayerManifest, where: string): Promise<void> {
  const input = blob instanceof Uint8Array ? { blob } : { path: blob.path };
  const { tree } = await readLayerBlobs([{ ...input, expected: m, where }], { keepContent: false });
  const files = new Map<string, string>();
  const links = new Map<string, string>();
  for (const e of tree.values()) {
    if (e.type === "file") files.set(e.path, e.sha256);
    else if (e.type === "symlink") links.set(e.path, e.target);
  }
  const mismatch = (what: string, path: string): never => {
    throw new CairnError("DIGEST_MISMATCH", `${m.id}: ${what} ${path}`, {
      path: where,
      hint: "the layer manifest does not describe its blob; rebuild the layer with cairn layer build",
    });
  };
  for (const [p, d] of m.content_manifest)
    if (files.get(p) !== d) mismatch(files.has(p) ? "content differs from the manifest at" : "the blob lacks the listed file", p);
  for (const p of files.keys()) if (!m.content_manifest.has(p)) mismatch("the manifest does not list the file", p);
  for (const [p, t] of m.symlinks) if (links.get(p) !== t) mismatch("symlink differs from the manifest at", p);
  for (const p of links.keys()) if (!m.symlinks.has(p)) mismatch("the manifest does not list the symlink", p);
}
