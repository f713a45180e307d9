/**
 * The guest's image files in a boot directory. The initramfs and the root
 * disk are written from the verified tree as streams (a MiB of a file at a
 * time, never an image or a file whole) into a private temporary sibling
 * (created exclusively, 0600), and appear under their name, by one rename,
 * only when their digest and size are the ones the VM identity names; a
 * refused or failed image is removed, so nothing half-written or unnamed is
 * ever handed to QEMU. Attack stopped: a content store changed between
 * prepareGuest (which hashed the image) and the boot cannot put other bytes
 * before the guest than the ones the run's identity names. The files are
 * transient (the boot reads them at once, dropImage removes them), so they
 * are not fsynced.
 */
import { renameSync, rmSync } from "node:fs";
import { CairnError, ioError, tempSibling, writeNewFileAsync, type Sha256Digest } from "../core/index.ts";
import type { CanonicalTree, ContentSource } from "../tree/index.ts";
import type { ByteSink } from "./cpio.ts";
import { writeErofs, type ErofsPlan } from "./erofs.ts";
import { writeGuestImage, type GuestImage, type GuestImageParts } from "./initramfs.ts";
import { withNoSpaceNamed } from "./no-space.ts";

/** What the image writers' small chunks (headers, names, pads) are gathered into before one write. */
const BLOCK = 1 << 20;

/** A sink that gathers chunks below BLOCK into one buffer and writes larger ones straight through, in order. */
function blockSink(write: (chunk: Uint8Array) => void): ByteSink & { flush(): void } {
  const block = Buffer.allocUnsafe(BLOCK);
  let used = 0;
  const flush = (): void => {
    if (used > 0) write(block.subarray(0, used));
    used = 0;
  };
  return {
    write(chunk) {
      if (used + chunk.length > BLOCK) flush();
      if (chunk.length >= BLOCK) return write(chunk);
      block.set(chunk, used);
      used += chunk.length;
    },
    flush,
  };
}

interface Written {
  readonly digest: Sha256Digest;
  readonly size: number;
}

/** Writes `produce`'s bytes to a private sibling of `path` and renames it there, when they are `expected` (if given). */
async function publishImage<T extends Written>(
  path: string,
  field: string,
  expected: Written | undefined,
  produce: (sink: ByteSink) => Promise<T>,
): Promise<T> {
  rmSync(path, { force: true }); // a previous boot's copy in the same directory
  const tmp = tempSibling(path);
  let got: T;
  try {
    got = await writeNewFileAsync(tmp, async (write) => {
      const sink = blockSink(write);
      const r = await produce(sink);
      sink.flush();
      return r;
    });
  } catch (e) {
    // a failed write (ENOSPC, most often) names the image, not its temporary sibling, nor the store object being copied into it
    const full = withNoSpaceNamed(e, path);
    if (full !== e) throw full;
    if (e instanceof CairnError && e.code === "IO_ERROR" && e.path === tmp) throw ioError(path, e.cause, "write");
    throw e;
  }
  if (expected !== undefined && (got.digest !== expected.digest || got.size !== expected.size)) {
    rmSync(tmp, { force: true });
    throw new CairnError(
      "RUN_INFRASTRUCTURE",
      `the image written for this boot (${got.digest}, ${got.size} bytes) is not the one the VM identity names (${expected.digest}, ${expected.size} bytes)`,
      { path: field, hint: "the content store changed while the run was prepared; run it again" },
    );
  }
  renameSync(tmp, path);
  return got;
}

/** The cpio initramfs of `parts` at `path` (0600); with `expected`, refused unless it is that image. */
export function writeGuestImageFile(parts: GuestImageParts, path: string, expected?: Written): Promise<GuestImage> {
  return publishImage(path, "/guest_image/initramfs", expected, (sink) => writeGuestImage(parts, sink));
}

/** The EROFS root disk of the tree at `path` (0600), refused unless it is `expected` (the content source re-verifies every file). */
export async function writeRootDiskFile(tree: CanonicalTree, content: ContentSource, plan: ErofsPlan, path: string, expected: Written): Promise<void> {
  await publishImage(path, "/vm/root_disk/image", expected, (sink) => writeErofs(tree, content, sink, plan));
}
