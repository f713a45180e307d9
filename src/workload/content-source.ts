/**
 * The file bytes a verified workload hands out (`ContentSource`): from its
 * content pack (OCI) or from stored objects (binary), only for files of its
 * tree, every read checked against the content's sha256.
 */
import { CairnError, type Sha256Digest } from "../core/index.ts";
import { readPacked, streamPacked, type PackIndex, type Store } from "../store/index.ts";
import type { CanonicalTree, ContentSource, FileEntry } from "../tree/index.ts";

function contentMissing(e: FileEntry): never {
  throw new CairnError("STORE_MISSING", `file content ${e.sha256} of ${e.path} is not in the store`, {
    path: e.path,
    hint: "assemble again into this store",
  });
}

/**
 * File bytes of the verified tree only: a digest no file of the tree has (a
 * content an upper layer removed is still in the pack) is STORE_MISSING. An
 * OCI tree's files are marked in a byte per pack content, not held in a
 * second table by digest; a binary tree has one file. Making it checks that
 * every file's content is in the store (in the pack, or a stored object),
 * refusing the first that is not (STORE_MISSING naming the file's path): the
 * one lookup per file that marks it is also its membership check.
 */
export function contentSource(store: Store, tree: CanonicalTree, pack: PackIndex | undefined): ContentSource {
  const inTree = pack !== undefined ? new Uint8Array(pack.entries.size) : undefined;
  const sizes = new Map<Sha256Digest, number>();
  for (const e of tree.values()) {
    if (e.type !== "file") continue;
    if (pack !== undefined) {
      const i = pack.entries.indexOf(e.sha256);
      if (i < 0) contentMissing(e);
      inTree![i] = 1;
    } else {
      if (!store.has("objects", e.sha256, e.size)) contentMissing(e);
      sizes.set(e.sha256, e.size);
    }
  }
  const sizeOf = (sha256: Sha256Digest): number => {
    const i = pack !== undefined ? pack.entries.indexOf(sha256) : -1;
    const size = pack !== undefined ? (i >= 0 && inTree![i] === 1 ? pack.entries.sizeAt(i) : undefined) : sizes.get(sha256);
    if (size === undefined) throw new CairnError("STORE_MISSING", `${sha256} is not a file of this workload`, { path: sha256 });
    return size;
  };
  // Both reads verify the bytes against the digest: `get` before returning them, `stream` (a MiB at a time, so
  // the guest image is written without holding a file) as they pass, refusing at the end.
  return {
    async get(sha256: Sha256Digest): Promise<Uint8Array> {
      const size = sizeOf(sha256);
      return pack !== undefined ? readPacked(store, pack, sha256, size) : store.read("objects", sha256, size, "fileSize");
    },
    async stream(sha256: Sha256Digest, chunk: (bytes: Uint8Array) => void): Promise<number> {
      const size = sizeOf(sha256);
      return pack !== undefined ? streamPacked(store, pack, sha256, size, chunk) : store.stream("objects", sha256, size, chunk, "fileSize");
    },
  };
}
