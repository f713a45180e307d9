/**
 * File contents for the guest images, a bounded piece at a time: an image
 * is written from the content source's `stream` (a MiB at a time, verified
 * as it passes) so no file is ever held whole, whatever its size. The rule
 * it enforces: exactly the tree's size goes into the image, or the build
 * fails (SIZE_MISMATCH) before one byte more is written; a source that
 * refuses after its chunks were written (wrong bytes) fails the build too,
 * and the builder's caller publishes nothing.
 */
import { CairnError, type Sha256Digest } from "../core/index.ts";
import type { ContentSource, FileEntry } from "../tree/index.ts";

/** What a source without `stream` hands on at a time, from the bytes `get` returned. */
export const CONTENT_PIECE = 1 << 20;

/** The bytes of `sha256` in order: the source's `stream` when it has one, else `get` cut in pieces; returns their count. */
export async function streamFrom(source: ContentSource, sha256: Sha256Digest, chunk: (bytes: Uint8Array) => void): Promise<number> {
  if (source.stream !== undefined) return source.stream(sha256, chunk);
  const data = await source.get(sha256); // the source verifies the digest
  for (let at = 0; at < data.length; at += CONTENT_PIECE) chunk(data.subarray(at, Math.min(data.length, at + CONTENT_PIECE)));
  return data.length;
}

/** Hands the file's content to `chunk`, refusing (SIZE_MISMATCH, naming the path) as soon as the bytes pass the tree's size or end short of it. */
export async function streamFile(source: ContentSource, e: FileEntry, chunk: (bytes: Uint8Array) => void): Promise<void> {
  let seen = 0;
  const wrong = (n: string): CairnError => new CairnError("SIZE_MISMATCH", `content for ${e.path} has ${n} bytes, the tree says ${e.size}`, { path: e.path });
  const total = await streamFrom(source, e.sha256, (bytes) => {
    if (seen + bytes.length > e.size) throw wrong(`at least ${seen + bytes.length}`);
    seen += bytes.length;
    chunk(bytes);
  });
  if (seen !== e.size || total !== e.size) throw wrong(String(Math.max(seen, total)));
}
