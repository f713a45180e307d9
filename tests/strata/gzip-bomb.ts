/**
 * Hand-made strata blobs whose tar stream is mostly zeros, built without
 * ever holding the inflated stream: a gzip file may be several members one
 * after another (RFC 1952, 2.2), and gunzip reads them as one stream, so the
 * blob is gzip(header) followed by one 64 MiB member of zeros repeated (each
 * about 65 KB, deflate's ratio of about 1,000). The reproduction was
 * a 3.7 MB blob that inflates to 3.8 GiB; `zeroFilesBlob(2, 30 * 64 MiB)` is
 * that shape (two files of 1.9 GiB, under layer.max_file_bytes).
 */
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import type { Sha256Digest } from "../../src/core/index.ts";
import type { LayerBlob } from "../../src/strata/index.ts";
import { writeTar } from "../workload/fixtures/tar-writer.ts";

export const CHUNK = 64 * 1024 * 1024;

const tagged = (h: ReturnType<typeof createHash>): Sha256Digest => `sha256:${h.digest("hex")}` as Sha256Digest;

/**
 * `files` regular files `/zero-<i>` of `fileBytes` zero bytes each (a
 * multiple of 512), as a strata blob. With `truthful` (default) its manifest
 * lists each file's real digest and the tar's diff_id; without, they are
 * zeros (hashing gigabytes to describe a bomb that is refused anyway would
 * only slow the test).
 */
export function zeroFilesBlob(files: number, fileBytes: number, truthful = true): LayerBlob {
  if (fileBytes % 512 !== 0) throw new Error("fileBytes must be a multiple of 512");
  const whole = Math.floor(fileBytes / CHUNK);
  const rest = fileBytes - whole * CHUNK;
  const zeros = gzipSync(Buffer.alloc(CHUNK), { level: 9 });
  const parts: Buffer[] = [];
  const tar = truthful ? createHash("sha256") : undefined;
  const content_manifest = new Map<string, Sha256Digest>();
  const chunk = Buffer.alloc(CHUNK);
  const placeholder = `sha256:${"0".repeat(64)}` as Sha256Digest;
  let fileDigest = placeholder;
  if (truthful) {
    const file = createHash("sha256");
    for (let i = 0; i < whole; i++) file.update(chunk);
    file.update(Buffer.alloc(rest));
    fileDigest = tagged(file);
  }
  for (let f = 0; f < files; f++) {
    const header = writeTar([{ name: `zero-${f}`, type: "file", mode: 0o644, size: fileBytes, data: "" }], { eof: false }).subarray(0, 512);
    parts.push(gzipSync(header));
    tar?.update(header);
    for (let i = 0; i < whole; i++) {
      parts.push(zeros);
      tar?.update(chunk);
    }
    if (rest > 0) {
      parts.push(gzipSync(Buffer.alloc(rest)));
      tar?.update(Buffer.alloc(rest));
    }
    content_manifest.set(`/zero-${f}`, fileDigest);
  }
  parts.push(gzipSync(Buffer.alloc(1024)));
  tar?.update(Buffer.alloc(1024));
  const blob = Buffer.concat(parts);
  return {
    blob,
    sha256: `sha256:${createHash("sha256").update(blob).digest("hex")}` as Sha256Digest,
    size: blob.length,
    diff_id: tar === undefined ? placeholder : tagged(tar),
    content_manifest,
    symlinks: new Map(),
    whiteouts: [],
  };
}
