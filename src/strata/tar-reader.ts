/**
 * Reads a layer blob back into entries (for `layer fold`). The blob is hostile
 * until checked: its digest and size are verified against the manifest before
 * it is decompressed, decompression is bounded (layer.max_unpacked_bytes), and
 * every entry must be a directory, regular file or symlink at a relative,
 * normalized path that appears once. PAX keys other than path/linkpath are
 * refused, since cairn's own writer never emits them.
 */
import { kMaxLength } from "node:buffer";
import { gunzipSync } from "node:zlib";
import { extract } from "tar-stream";
import { CairnError, checkLimit, FIXED_LIMIT_HINT, sha256, type Sha256Digest } from "../core/index.ts";
import type { TarEntry } from "./tar-writer.ts";

export const DEFAULT_MAX_UNPACKED_BYTES = 8 * 1024 * 1024 * 1024;

function safeRelative(unsafePath: string): string {
  const p = unsafePath.replace(/\/$/, "");
  if (p === "" || p.startsWith("/") || p.split("/").some((s) => s === "" || s === "." || s === "..") || p.includes("\0")) {
    throw new CairnError("TAR_UNSAFE_PATH", `tar entry ${JSON.stringify(unsafePath).slice(0, 120)} is not a relative normalized path -- refusing (path traversal)`, {
      path: unsafePath,
    });
  }
  return p;
}

export async function readLayerBlob(blob: Uint8Array, expected: { sha256: Sha256Digest; size: number }, where: string, maxUnpacked = DEFAULT_MAX_UNPACKED_BYTES): Promise<TarEntry[]> {
  if (blob.length !== expected.size) throw new CairnError("SIZE_MISMATCH", `${where}: blob is ${blob.length} bytes, manifest says ${expected.size}`, { path: where });
  if (sha256(blob) !== expected.sha256) throw new CairnError("DIGEST_MISMATCH", `${where}: blob does not match its sha256`, { path: where });
  let tar: Buffer;
  try {
    tar = gunzipSync(blob, { maxOutputLength: Math.min(maxUnpacked, kMaxLength) });
  } catch (cause) {
    if ((cause as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") checkLimit("layer.max_unpacked_bytes", maxUnpacked + 1, maxUnpacked, where, "bytes", FIXED_LIMIT_HINT);
    throw new CairnError("TAR_INVALID", `${where}: not a gzip stream`, { path: where, cause });
  }
  const entries: TarEntry[] = [];
  const seen = new Set<string>();
  const ex = extract();
  const done = new Promise<void>((resolve, reject) => {
    ex.on("entry", (h, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on("data", (c: unknown) => void chunks.push(c as Buffer));
      stream.on("error", reject);
      stream.on("end", () => {
        try {
          const path = safeRelative(h.name);
          if (seen.has(path)) throw new CairnError("TAR_DUPLICATE", `${where}: ${path} appears twice`, { path });
          seen.add(path);
          const extra = Object.keys(h.pax ?? {}).filter((k) => k !== "path" && k !== "linkpath");
          if (extra.length > 0) throw new CairnError("TAR_PAX", `${where}: unexpected PAX key ${extra[0]}`, { path });
          if (h.type === "directory") entries.push({ type: "dir", path, mode: (h.mode ?? 0o755) & 0o7777 });
          else if (h.type === "file") entries.push({ type: "file", path, mode: (h.mode ?? 0o644) & 0o7777, data: Buffer.concat(chunks) });
          else if (h.type === "symlink") entries.push({ type: "symlink", path, target: h.linkname ?? "" });
          else throw new CairnError("TAR_UNSUPPORTED_TYPE", `${where}: ${path} is a ${h.type} entry`, { path });
          next();
        } catch (e) {
          reject(e);
        }
      });
      stream.resume();
    });
    ex.on("finish", resolve);
    ex.on("error", (cause) => reject(new CairnError("TAR_INVALID", `${where}: malformed tar`, { path: where, cause })));
  });
  ex.end(tar);
  await done;
  return entries;
}
