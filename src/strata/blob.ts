/**
 * Reproducible layer blobs (OCI `tar+gzip`). Entries are sorted by their UTF-8
 * bytes (never `localeCompare`: the locale must not change the order), owned
 * by 0:0 with mtime 0, with modes normalized by the tree's one rule
 * (`normalizeMode`: directories 0755, files 0755 when any execute bit is set
 * and 0644 otherwise, symlinks 0777), so the umask and the creating user leave
 * no trace. The gzip header carries no mtime, no
 * file name and a fixed OS byte (255, "unknown") — Node writes the build
 * platform's code there, which would make the same tar differ across hosts.
 *
 * The deflate stream comes from the zlib Node links; two zlib builds could in
 * principle compress differently, so the manifest also records the diff_id
 * (the sha256 of the uncompressed tar), which depends on nothing but content.
 */
import { gzipSync, constants as zc } from "node:zlib";
import { compareBytes, sha256, type Sha256Digest } from "../core/index.ts";
import { normalizeMode, writeTar, type TarEntry } from "../tree/index.ts";

export interface LayerBlob {
  readonly blob: Buffer;
  readonly sha256: Sha256Digest;
  readonly size: number;
  readonly diff_id: Sha256Digest;
  readonly content_manifest: Map<string, Sha256Digest>;
  readonly symlinks: Map<string, string>;
  /** Absolute paths of the OCI whiteout markers (`.wh.<name>`, `.wh..wh..opq`) the blob holds, sorted; not content. */
  readonly whiteouts: string[];
}

/** gzip with a fixed header: mtime 0, no name, XFL from the fixed level, OS byte 255. */
export function gzipReproducible(data: Uint8Array): Buffer {
  const gz = gzipSync(data, { level: 9, memLevel: 9, strategy: zc.Z_DEFAULT_STRATEGY });
  gz.writeUInt32LE(0, 4); // MTIME
  gz[9] = 0xff; // OS: unknown (no FHCRC flag is set, so no header checksum to fix)
  return gz;
}

/** Builds the blob from entries whose paths are relative (`usr/bin/x`); sorts them itself. */
export function buildLayerBlob(entries: readonly TarEntry[]): LayerBlob {
  const sorted = [...entries].sort((a, b) => compareBytes(a.path, b.path));
  const normalized: TarEntry[] = sorted.map((e) => (e.type === "symlink" ? e : { ...e, mode: normalizeMode(e.type, e.mode) }));
  const tar = writeTar(normalized);
  const blob = gzipReproducible(tar);
  const content_manifest = new Map<string, Sha256Digest>();
  const symlinks = new Map<string, string>();
  const whiteouts: string[] = [];
  for (const e of normalized) {
    // Only a frozen overlayfs upper directory yields markers (the directory reader refuses `.wh.*` names otherwise).
    if (e.type === "file" && e.data.length === 0 && e.path.split("/").pop()!.startsWith(".wh.")) whiteouts.push(`/${e.path}`);
    else if (e.type === "file") content_manifest.set(`/${e.path}`, sha256(e.data));
    else if (e.type === "symlink") symlinks.set(`/${e.path}`, e.target);
  }
  return { blob, sha256: sha256(blob), size: blob.length, diff_id: sha256(tar), content_manifest, symlinks, whiteouts };
}
