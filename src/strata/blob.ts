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
 *
 * A blob is built whole in memory (`buildLayerBlob`, small layers and tests)
 * or streamed to a file (`writeLayerBlob`, what `layer build` and `layer
 * fold` do): the tar is written a chunk at a time, each file read as it is
 * written, through one gzip stream into a private file, hashed as it flows,
 * so memory does not grow with the layer. Both give the same bytes for the
 * same entries (zlib's output does not depend on how its input is split when
 * nothing is flushed in between; tests/strata/blob-file.test.ts compares).
 */
import { closeSync, rmSync } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip, gzipSync, constants as zc, type ZlibOptions } from "node:zlib";
import { CairnError, compareBytes, createExclusive, ioError, sha256, Sha256Hasher, writeFully, type Sha256Digest } from "../core/index.ts";
import { normalizeMode, streamEntry, tarChunks, type TarEntry, type TarStreamEntry } from "../tree/index.ts";

/** What a manifest records of a built blob, however it was built. */
export interface LayerBlobFacts {
  readonly sha256: Sha256Digest;
  readonly size: number;
  readonly diff_id: Sha256Digest;
  readonly content_manifest: Map<string, Sha256Digest>;
  readonly symlinks: Map<string, string>;
  /** Absolute paths of the OCI whiteout markers (`.wh.<name>`, `.wh..wh..opq`) the blob holds, sorted; not content. */
  readonly whiteouts: string[];
}

/** A blob built in memory. */
export interface LayerBlob extends LayerBlobFacts {
  readonly blob: Buffer;
}

/** A blob streamed to a private file (`path`, 0600), which the caller publishes and removes. */
export interface LayerBlobFile extends LayerBlobFacts {
  readonly path: string;
}

const GZIP_OPTIONS: ZlibOptions = { level: 9, memLevel: 9, strategy: zc.Z_DEFAULT_STRATEGY };

/** The fixed gzip header bytes: MTIME (4..7) zero, OS (9) 255, "unknown" (no FHCRC flag is set, so no header checksum to fix); XFL (8) is left as zlib sets it. */
function fixHeader(chunk: Buffer, offset: number): void {
  for (const [at, value] of [
    [4, 0],
    [5, 0],
    [6, 0],
    [7, 0],
    [9, 0xff],
  ] as const) {
    if (at >= offset && at < offset + chunk.length) chunk[at - offset] = value;
  }
}

/** gzip with a fixed header: mtime 0, no name, XFL from the fixed level, OS byte 255. */
export function gzipReproducible(data: Uint8Array): Buffer {
  const gz = gzipSync(data, GZIP_OPTIONS);
  fixHeader(gz, 0);
  return gz;
}

function isWhiteout(path: string, size: number): boolean {
  // Only a frozen overlayfs upper directory yields markers (the directory reader refuses `.wh.*` names otherwise).
  return size === 0 && path.split("/").pop()!.startsWith(".wh.");
}

/** Either kind of writer entry, as a stream entry. */
function asStream(e: TarEntry | TarStreamEntry): TarStreamEntry {
  return e.type === "file" && "data" in e ? streamEntry(e) : (e as TarStreamEntry);
}

/** What a build records as the archive flows: each file's digest (filled as it is written), the symlinks, the whiteout markers. */
interface Prepared {
  readonly entries: TarStreamEntry[];
  readonly content_manifest: Map<string, Sha256Digest>;
  readonly symlinks: Map<string, string>;
  readonly whiteouts: string[];
}

/** Sorts by path bytes, normalizes modes, and wraps each file's content to hash it as it is written (read once, never twice). */
function prepare(entries: readonly (TarEntry | TarStreamEntry)[]): Prepared {
  const content_manifest = new Map<string, Sha256Digest>();
  const symlinks = new Map<string, string>();
  const whiteouts: string[] = [];
  const sorted = entries.map(asStream).sort((a, b) => compareBytes(a.path, b.path));
  const out = sorted.map((e): TarStreamEntry => {
    if (e.type === "symlink") {
      symlinks.set(`/${e.path}`, e.target);
      return e;
    }
    if (e.type === "dir") return { ...e, mode: normalizeMode("dir", e.mode) };
    const mode = normalizeMode("file", e.mode);
    if (isWhiteout(e.path, e.content.size)) {
      whiteouts.push(`/${e.path}`);
      return { ...e, mode };
    }
    const inner = e.content;
    const at = `/${e.path}`;
    content_manifest.set(at, "" as Sha256Digest); // holds the archive's (sorted) order; the digest comes as the bytes are written
    const content = {
      size: inner.size,
      *chunks() {
        const h = new Sha256Hasher();
        for (const c of inner.chunks()) {
          h.update(c);
          yield c;
        }
        content_manifest.set(at, h.digest());
      },
    };
    return { ...e, mode, content };
  });
  return { entries: out, content_manifest, symlinks, whiteouts };
}

/**
 * Streams the blob of `entries` (relative paths; sorted here) into a new
 * file at `out` (created exclusively, 0600; removed on failure). Each file's
 * content is read once, as it is written, and hashed on the way for the
 * content manifest; the tar is hashed for the diff_id and the gzip output for
 * the blob digest as they flow. The same bytes as `buildLayerBlob`.
 */
export async function writeLayerBlob(entries: readonly (TarEntry | TarStreamEntry)[], out: string): Promise<LayerBlobFile> {
  const p = prepare(entries);
  const tarHash = new Sha256Hasher();
  const blobHash = new Sha256Hasher();
  function* tar(): Generator<Buffer> {
    for (const chunk of tarChunks(p.entries)) {
      tarHash.update(chunk);
      yield chunk;
    }
  }
  let fd: number | undefined;
  try {
    fd = createExclusive(out, 0o600);
    const file = fd;
    let written = 0;
    await pipeline(Readable.from(tar(), { highWaterMark: 1 }), createGzip(GZIP_OPTIONS), async (gz: AsyncIterable<Buffer>) => {
      for await (const chunk of gz) {
        fixHeader(chunk, written);
        written += chunk.length;
        blobHash.update(chunk);
        writeFully(file, chunk);
      }
    });
    closeSync(fd);
    fd = undefined;
    return {
      path: out,
      sha256: blobHash.digest(),
      size: written,
      diff_id: tarHash.digest(),
      content_manifest: p.content_manifest,
      symlinks: p.symlinks,
      whiteouts: p.whiteouts,
    };
  } catch (cause) {
    if (fd !== undefined) closeSync(fd);
    rmSync(out, { force: true });
    if (cause instanceof CairnError) throw cause;
    throw ioError(out, cause, "write");
  }
}

/** Builds the blob in memory from entries whose paths are relative (`usr/bin/x`); sorts them itself. The same bytes as `writeLayerBlob`. */
export function buildLayerBlob(entries: readonly (TarEntry | TarStreamEntry)[]): LayerBlob {
  const p = prepare(entries);
  const tar = Buffer.concat([...tarChunks(p.entries)]);
  const blob = gzipReproducible(tar);
  return {
    blob,
    sha256: sha256(blob),
    size: blob.length,
    diff_id: sha256(tar),
    content_manifest: p.content_manifest,
    symlinks: p.symlinks,
    whiteouts: p.whiteouts,
  };
}
