/**
 * The layers a lock export adds on top of the lockfile's own (the Lmod tree
 * and login script, the pinned package archives): uncompressed tar written by
 * the tree area's writer, so their bytes and digest depend on nothing but the
 * files given, not even on the zlib a host links (a gzip stream could differ
 * between two zlib builds; a plain tar cannot). Entries are sorted by their
 * UTF-8 bytes, every parent directory is named (the strict tar gate refuses a
 * member whose parent its blob does not name), owned by 0:0, mtime 0, modes
 * fixed here (directories 0755, files 0644 or 0755), never the umask's.
 *
 * Paths are built by cairn from checked names; each is checked again here to
 * be relative, canonical and free of `..`, so no lockfile value can make an
 * export write outside the directory it names.
 *
 * A file's bytes are in memory or in a private staged file (a pinned
 * archive, copied there and checked); with `out`, the tar is streamed to
 * that file, each staged file read as it is written, so a layer of large
 * archives holds one chunk of them at a time.
 */
import { closeSync, rmSync } from "node:fs";
import { CairnError, compareBytes, createExclusive, ioError, sha256, Sha256Hasher, writeFully } from "../core/index.ts";
import { OCI_LAYER_TAR, type LayoutLayerInput } from "../oci/index.ts";
import { bytesContent, streamedRegular, tarChunks, type TarStreamEntry } from "../tree/index.ts";

/** One file of an added layer: a relative path and its bytes (or the staged file holding them); `executable` gives it mode 0755. */
export type AddedFile = ({ readonly data: Uint8Array } | { readonly file: { readonly path: string; readonly size: number } }) & {
  readonly path: string;
  readonly executable?: boolean;
};

const SEGMENT = /^[A-Za-z0-9_+@=!-][A-Za-z0-9._+@=!-]*$/;

function checkPath(path: string): void {
  const parts = path.split("/");
  if (path.startsWith("/") || parts.some((p) => p === "." || p === ".." || !SEGMENT.test(p))) {
    throw new CairnError("PATH_UNSAFE", `${JSON.stringify(path.slice(0, 200))} is not a plain relative path for an exported layer`, { path });
  }
}

/**
 * The layer holding exactly `files` (and their parent directories), as an
 * uncompressed tar, in memory or (with `out`) streamed to that new private
 * file; refuses one path given twice.
 */
export function addedLayer(files: readonly AddedFile[], out?: string): LayoutLayerInput {
  const entries = new Map<string, TarStreamEntry>();
  for (const f of files) {
    checkPath(f.path);
    if (entries.has(f.path)) throw new CairnError("EXPORT_REFUSED", `two files of the export would be written at ${f.path}`, { path: f.path });
    const parts = f.path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      const seen = entries.get(dir);
      if (seen !== undefined && seen.type !== "dir")
        throw new CairnError("EXPORT_REFUSED", `${dir} is both a file and a directory of the export`, { path: dir });
      entries.set(dir, { type: "dir", path: dir, mode: 0o755 });
    }
    const content = "data" in f ? bytesContent(f.data) : streamedRegular(f.file.path, f.file.size);
    entries.set(f.path, { type: "file", path: f.path, mode: f.executable ? 0o755 : 0o644, content });
  }
  const sorted = [...entries.values()].sort((a, b) => compareBytes(a.path, b.path));
  if (out === undefined) {
    const tar = Buffer.concat([...tarChunks(sorted)]);
    const digest = sha256(tar);
    return { mediaType: OCI_LAYER_TAR, digest, size: tar.length, diffId: digest, blob: { bytes: tar } };
  }
  const h = new Sha256Hasher();
  let fd: number | undefined;
  try {
    fd = createExclusive(out, 0o600);
    for (const chunk of tarChunks(sorted)) {
      h.update(chunk);
      writeFully(fd, chunk);
    }
    closeSync(fd);
    fd = undefined;
  } catch (cause) {
    if (fd !== undefined) closeSync(fd);
    rmSync(out, { force: true });
    if (cause instanceof CairnError) throw cause;
    throw ioError(out, cause, "write");
  }
  const digest = h.digest();
  return { mediaType: OCI_LAYER_TAR, digest, size: h.size, diffId: digest, blob: { path: out } };
}
