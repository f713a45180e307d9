/**
 * Writing an OCI image layout that cairn's own reader accepts: `oci-layout`,
 * one `index.json` descriptor for the selected image manifest carrying its
 * platform (linux/amd64) and, when known, the tag as
 * `org.opencontainers.image.ref.name`, and every blob of the image under
 * `blobs/sha256/`.
 *
 * The layout appears whole or not at all: it is written into a hidden
 * temporary sibling (`.NAME.PID.RANDOM.tmp`), every file fsynced and
 * re-hashed as it is copied, and renamed to its name last. An existing
 * non-empty directory is never written into. A writer killed midway leaves
 * only its hidden sibling, which the next writer of the same name removes
 * once its pid is gone.
 *
 * Linked blobs (`linkImageLayout`, what `cairn pull` writes from the content
 * store): each blob is a hard link to the store's object instead of a second
 * copy of its bytes, when both are on one file system (else it is copied as
 * above). The shared inode is made read-only (0444) for both names: the
 * store never writes into an object it published (it replaces by rename),
 * and a writer of the layout's blob meets a read-only file. One that writes
 * anyway (root, or after a chmod) changes the store's object too: the store
 * re-hashes every object it reads, so the change is found (STORE_CORRUPT)
 * and never used, and `cairn pull` fetches such an object again
 * (docs/registry.md, "One copy of each blob").
 */
import { constants } from "node:fs";
import { copyFile, link, open, rename, rm, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  CairnError,
  Sha256Hasher,
  canonicalBytes,
  digestComponents,
  fsyncDir,
  ioError,
  makeDirs,
  removeAbandonedSiblings,
  tempSibling,
  type Sha256Digest,
} from "../core/index.ts";
import type { Descriptor } from "./documents.ts";
import { OCI_INDEX } from "./media-types.ts";

export interface LayoutImage {
  readonly manifest: Descriptor;
  readonly config: Descriptor;
  readonly layers: readonly Descriptor[];
  /** `org.opencontainers.image.ref.name` of the descriptor (a tag), if any. */
  readonly refName?: string;
}

/** Where the blobs come from: a verified path for each digest. */
export type BlobPath = (digest: Sha256Digest) => string;

const COPY_CHUNK = 4 * 1024 * 1024;

/** Copies `size` bytes from `from` to the new file `to`, hashing as it goes; DIGEST_MISMATCH when the source is not what its name says. */
async function copyChecked(from: string, to: string, d: Descriptor): Promise<void> {
  const src = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW);
  const dst = await open(to, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  try {
    const hasher = new Sha256Hasher();
    const buf = Buffer.allocUnsafe(COPY_CHUNK);
    let pos = 0;
    for (;;) {
      const { bytesRead } = await src.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      pos += bytesRead;
      if (pos > d.size) break;
      const chunk = buf.subarray(0, bytesRead);
      hasher.update(chunk);
      await dst.write(chunk);
    }
    if (pos !== d.size || hasher.digest() !== d.digest) {
      throw new CairnError("STORE_CORRUPT", `the cached copy of ${d.digest} does not match its digest`, {
        path: d.digest,
        hint: "remove the store entry and pull again",
      });
    }
    await dst.sync();
  } finally {
    await src.close();
    await dst.close();
  }
}

/** A kernel copy of a blob this process verified just before, checked by size and fsynced. */
async function copyFast(from: string, to: string, d: Descriptor): Promise<void> {
  await copyFile(from, to, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
  const h = await open(to, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    if ((await h.stat()).size !== d.size) throw new CairnError("STORE_CORRUPT", `the cached copy of ${d.digest} has another size`, { path: d.digest });
    await h.chmod(0o644);
    await h.sync();
  } finally {
    await h.close();
  }
}

/** Errors of link(2) that mean "not here" (another file system, a file system without hard links, a file we may not link, too many links): the blob is copied instead. */
const NO_LINK = new Set(["EXDEV", "EPERM", "EACCES", "EMLINK", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"]);

/** How many blobs a layout writer linked and copied (for the tests and the bench). */
export interface LayoutBlobCounts {
  linked: number;
  copied: number;
}

/**
 * Makes `to` a hard link of `from` (read-only, 0444, for both names) and
 * checks it: by size when the blob was verified moments before, else by
 * hashing the linked file itself (what the layout holds, whatever is under
 * the store's name meanwhile). The inode is fsynced, as a copy is: when the
 * object was made durable before, nothing is dirty and this costs nothing.
 * False when the file system cannot link here (then nothing was created).
 */
async function linkChecked(from: string, to: string, d: Descriptor, verified: boolean): Promise<boolean> {
  try {
    await link(from, to);
  } catch (cause) {
    if (NO_LINK.has((cause as { code?: string }).code ?? "")) return false;
    throw cause;
  }
  const notRegular = (): CairnError =>
    new CairnError("STORE_CORRUPT", `the cached copy of ${d.digest} is not a regular file of ${d.size} bytes`, {
      path: d.digest,
      hint: "pull again: the object is fetched anew",
    });
  let h: Awaited<ReturnType<typeof open>>;
  try {
    // link(2) links a symlink itself, and a FIFO or device as well: never follow one, never wait on one
    h = await open(to, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (cause) {
    if ((cause as { code?: string }).code === "ELOOP") throw notRegular();
    throw cause;
  }
  try {
    const st = await h.stat();
    if (!st.isFile() || st.size !== d.size) throw notRegular();
    if (!verified) {
      const hasher = new Sha256Hasher();
      const buf = Buffer.allocUnsafe(COPY_CHUNK);
      let pos = 0;
      for (;;) {
        const { bytesRead } = await h.read(buf, 0, buf.length, pos);
        if (bytesRead === 0 || pos + bytesRead > d.size) break;
        hasher.update(buf.subarray(0, bytesRead));
        pos += bytesRead;
      }
      if (pos !== d.size || hasher.digest() !== d.digest) {
        throw new CairnError("STORE_CORRUPT", `the cached copy of ${d.digest} does not match its digest`, {
          path: d.digest,
          hint: "pull again: the object is fetched anew",
        });
      }
    }
    await h.chmod(0o444);
    await h.sync();
  } catch (e) {
    await unlink(to).catch(() => undefined);
    throw e;
  } finally {
    await h.close();
  }
  return true;
}

/**
 * Writes the layout at `layoutDir` (which must not exist, or be an empty
 * directory). Blobs in `justVerified` were verified against their digest by
 * this process moments before (a pull that just streamed them) and are copied
 * by the kernel (`copyFile`, a reflink where the filesystem has them) and
 * checked by size; every other blob is re-hashed as it is copied.
 */
export async function writeImageLayout(
  layoutDir: string,
  image: LayoutImage,
  blobPath: BlobPath,
  justVerified: ReadonlySet<string> = new Set(),
): Promise<void> {
  await writeLayout(layoutDir, image, blobPath, justVerified, false);
}

/**
 * `writeImageLayout` with every blob a hard link of the file `blobPath`
 * names (see the module comment), where the file system allows, and a copy
 * where it does not. For the content store's own objects only: the linked
 * files become read-only. Returns how many blobs were linked and copied.
 */
export async function linkImageLayout(
  layoutDir: string,
  image: LayoutImage,
  blobPath: BlobPath,
  justVerified: ReadonlySet<string> = new Set(),
): Promise<LayoutBlobCounts> {
  return writeLayout(layoutDir, image, blobPath, justVerified, true);
}

async function writeLayout(
  layoutDir: string,
  image: LayoutImage,
  blobPath: BlobPath,
  justVerified: ReadonlySet<string>,
  linkBlobs: boolean,
): Promise<LayoutBlobCounts> {
  const counts: LayoutBlobCounts = { linked: 0, copied: 0 };
  removeAbandonedSiblings(layoutDir);
  const tmp = tempSibling(layoutDir);
  try {
    makeDirs(join(tmp, "blobs", "sha256"), 0o755); // not mkdir's recursive: it spins forever under /proc
    const file = async (name: string, bytes: Uint8Array): Promise<void> => {
      const h = await open(join(tmp, name), "wx", 0o644);
      try {
        await h.write(bytes);
        await h.sync();
      } finally {
        await h.close();
      }
    };
    await file("oci-layout", Buffer.from('{"imageLayoutVersion":"1.0.0"}'));
    const done = new Set<string>();
    for (const d of [image.manifest, image.config, ...image.layers]) {
      if (done.has(d.digest)) continue;
      done.add(d.digest);
      const [, hex] = digestComponents(d.digest);
      const dest = join(tmp, "blobs", "sha256", hex);
      if (linkBlobs && (await linkChecked(blobPath(d.digest), dest, d, justVerified.has(d.digest)))) {
        counts.linked++;
        continue;
      }
      counts.copied++;
      if (justVerified.has(d.digest)) await copyFast(blobPath(d.digest), dest, d);
      else await copyChecked(blobPath(d.digest), dest, d);
    }
    const descriptor: Record<string, unknown> = {
      mediaType: image.manifest.mediaType,
      digest: image.manifest.digest,
      size: image.manifest.size,
      platform: { architecture: "amd64", os: "linux" },
    };
    if (image.refName !== undefined) descriptor.annotations = { "org.opencontainers.image.ref.name": image.refName };
    await file("index.json", canonicalBytes({ schemaVersion: 2, mediaType: OCI_INDEX, manifests: [descriptor] } as never));
    fsyncDir(join(tmp, "blobs", "sha256"));
    fsyncDir(tmp);
    try {
      await rename(tmp, layoutDir); // replaces only an empty directory
    } catch (cause) {
      const code = (cause as { code?: string }).code;
      if (code === "ENOTEMPTY" || code === "EEXIST" || code === "ENOTDIR") {
        throw new CairnError("IO_ERROR", `${layoutDir} already exists and is not an empty directory; refusing to write into it`, {
          path: layoutDir,
          hint: "name a new directory for the layout",
        });
      }
      throw cause;
    }
    fsyncDir(dirname(layoutDir));
    return counts;
  } catch (cause) {
    await rm(tmp, { recursive: true, force: true });
    if (cause instanceof CairnError) throw cause;
    throw ioError(layoutDir, cause, "write");
  }
}
