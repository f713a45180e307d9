/**
 * Writing an `oci-archive`: one tar of an OCI image layout, what `skopeo
 * copy … oci-archive:FILE` reads and `podman save --format oci-archive`
 * writes, and what oci-archive.ts reads back. The layout is written first by
 * image-writer.ts (every blob checked against its descriptor, every document
 * against its schema) into a private hidden sibling of FILE, then packed by
 * the tree area's tar writer (tree/tar-writer.ts: members sorted by the
 * UTF-8 bytes of their names, 0:0 with no user or group names, mtime 0,
 * modes the layout's, nothing else in a header), so the same image gives
 * the same archive bytes on every host. Each file is streamed into the tar
 * as it is read, never held whole.
 *
 * FILE appears whole or not at all: the layout and the tar are made in one
 * private hidden sibling directory, the tar fsynced and linked to its name,
 * which fails rather than replace an existing file; the directory is removed
 * when the write ends, and one a killed writer left is removed by the next
 * writer of the same name (core removeAbandonedSiblings).
 */
import { closeSync, existsSync, fchmodSync, fsyncSync, linkSync, lstatSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import {
  CairnError,
  Sha256Hasher,
  createExclusive,
  digestComponents,
  fsyncDir,
  ioError,
  removeAbandonedSiblings,
  tempSibling,
  writeFully,
  type Sha256Digest,
} from "../core/index.ts";
import { streamedRegular, tarChunks, type TarStreamEntry } from "../tree/index.ts";
import { writeOciLayout, type LayoutImageInput, type WrittenLayout } from "./image-writer.ts";

export interface WrittenArchive extends WrittenLayout {
  /** The archive file's own size and sha256. */
  readonly archive: { readonly file: string; readonly size: number; readonly sha256: Sha256Digest };
}

/** The layout's files as tar members, in name-byte order: `blobs/`, `blobs/sha256/`, each blob, `index.json`, `oci-layout`. */
function layoutMembers(layoutDir: string, written: WrittenLayout, image: LayoutImageInput): TarStreamEntry[] {
  const { file: fileMode, dir: dirMode } = image.access === "private" ? { file: 0o600, dir: 0o700 } : { file: 0o644, dir: 0o755 };
  const member = (rel: string): TarStreamEntry => {
    const abs = join(layoutDir, rel);
    return { type: "file", path: rel, mode: fileMode, content: streamedRegular(abs, lstatSync(abs).size) };
  };
  const digests = new Set<Sha256Digest>([written.manifest.digest, written.config.digest, ...image.layers.map((l) => l.digest)]);
  const blobs = [...digests].map((d) => `blobs/sha256/${digestComponents(d)[1]}`).sort(); // hex names: byte order is string order
  return [
    { type: "dir", path: "blobs", mode: dirMode },
    { type: "dir", path: "blobs/sha256", mode: dirMode },
    ...blobs.map(member),
    member("index.json"),
    member("oci-layout"),
  ];
}

function refuseExisting(file: string): void {
  let present = existsSync(file);
  try {
    present ||= lstatSync(file).isSymbolicLink();
  } catch {
    // nothing there
  }
  if (present) {
    throw new CairnError("USAGE", `${file} already exists; the archive is written to a new file`, {
      path: file,
      hint: "choose a path that does not exist yet (an existing file is never replaced)",
    });
  }
}

/**
 * Writes `image` as a new oci-archive at `file` (which must not exist); the
 * archive is private (0600) when the image is. All the work happens in one
 * private hidden sibling directory (the layout, then the tar beside it),
 * removed when the write ends; one left by a writer that was killed is
 * removed by the next writer of the same name.
 */
export function writeOciArchive(file: string, image: LayoutImageInput): WrittenArchive {
  refuseExisting(file);
  removeAbandonedSiblings(file);
  const work = tempSibling(file);
  let fd: number | undefined;
  try {
    mkdirSync(work, { mode: 0o700 });
    const layoutDir = join(work, "layout");
    const tarTmp = join(work, "archive.tar");
    const written = writeOciLayout(layoutDir, image);
    const hasher = new Sha256Hasher();
    fd = createExclusive(tarTmp, 0o600);
    fchmodSync(fd, image.access === "private" ? 0o600 : 0o644); // the umask must not widen or narrow what is promised
    for (const chunk of tarChunks(layoutMembers(layoutDir, written, image))) {
      hasher.update(chunk);
      writeFully(fd, chunk);
    }
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    try {
      linkSync(tarTmp, file); // never replaces: an existing name is EEXIST
    } catch (cause) {
      if ((cause as { code?: string }).code === "EEXIST") refuseExisting(file);
      throw cause;
    }
    fsyncDir(dirname(file));
    return { ...written, dir: file, archive: { file, size: hasher.size, sha256: hasher.digest() } };
  } catch (e) {
    if (fd !== undefined) closeSync(fd);
    if (e instanceof CairnError) throw e;
    throw ioError(file, e, "write");
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
