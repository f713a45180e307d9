/**
 * The tree manifest `cairn.tree-manifest/1`: what the guest must see under
 * its workload template, entry by entry, so the agent can prove it runs the
 * tree the workload identity names (agent/verify.c checks it before the
 * first start). Without it, a template the kernel unpacked only in part
 * ("Initramfs unpacking failed: write error" when the image does not fit in
 * guest RAM) ran as if whole, and the run said `passed`.
 *
 * The manifest is derived from the canonical tree only, never from the image
 * bytes, and travels in the image as /cairn/tree. Its digest is a field of
 * the VM identity (`tree_manifest`).
 *
 * Bytes (little-endian; a byte string is u32 length + bytes):
 *   "CAIRNTM1"  u32 version (1)  u32 flags (bit 0: check file contents,
 *   `run.verify-tree: content`)  u32 count
 *   count × { u8 type (1 dir, 2 file, 3 symlink)  u32 mode (07777 bits)
 *             u32 uid  u32 gid  u64 size (file bytes; target bytes for a
 *             symlink; 0 for a dir)  bytes path (relative to the template,
 *             "" for its root)  bytes target (symlinks; empty otherwise)
 *             32 bytes SHA-256 of the content (files only) }
 * Entries in the byte order of their paths (the root first).
 * digest = sha256("cairn.tree-manifest/1\0" || bytes)
 */
import { CairnError, declareIdentity, digestHex, identityHasher, type Sha256Digest } from "../core/index.ts";
import { entriesInByteOrder, type CanonicalTree, type FsEntry } from "../tree/index.ts";

export const TREE_MANIFEST_MAGIC = "CAIRNTM1";
export const TREE_MANIFEST_VERSION = 1;
export const TREE_ENTRY_TYPE = { dir: 1, file: 2, symlink: 3 } as const;
export const TREE_FLAG_CONTENT = 1;

export const TREE_MANIFEST_IDENTITY = declareIdentity({
  name: "guest tree manifest",
  tag: "cairn.tree-manifest/1",
  algorithm: "sha256",
  framing: "tag-nul-binary",
  role: "identity",
  definedIn: "src/vm/tree-manifest.ts",
});

/**
 * A tree manifest as its digest and size, with the tree it is written from:
 * its bytes (14.6 MB at 200,000 entries) are never held whole, but written
 * again, in chunks, where they go (the initramfs's /cairn/tree).
 */
export interface TreeManifest {
  readonly digest: Sha256Digest;
  readonly size: number;
  readonly entries: number;
  /**
   * Emits the manifest's bytes in order, in chunks of at most 64 KiB (or
   * one record, if larger) from one reused buffer: `emit` must take what it
   * keeps before it returns (as a ByteSink does).
   */
  write(emit: (chunk: Uint8Array) => void): void;
}

/** What one emitted chunk of the manifest holds at most, unless one record is larger. */
const CHUNK = 1 << 16;
const HEAD_BYTES = 8 + 4 + 4 + 4;

/** Bytes of one entry's record (type, mode, uid, gid, size, two byte strings, the digest of a file). */
function recordSize(e: FsEntry): number {
  const target = e.type === "symlink" ? Buffer.byteLength(e.target, "utf8") : 0;
  const path = e.path === "/" ? 0 : Buffer.byteLength(e.path, "utf8") - 1;
  return 1 + 4 + 4 + 4 + 8 + 4 + path + 4 + target + (e.type === "file" ? 32 : 0);
}

/** Writes a byte string (u32 length + UTF-8 bytes) at `at`; returns the offset after it. */
function putStr(out: Buffer, at: number, v: string): number {
  const n = out.write(v, at + 4, "utf8");
  out.writeUInt32LE(n, at);
  return at + 4 + n;
}

/** Writes `e`'s record at `at` (recordSize(e) bytes free there); returns the offset after it. */
function putRecord(out: Buffer, at: number, e: FsEntry): number {
  const target = e.type === "symlink" ? e.target : "";
  const bytes = e.type === "file" ? e.size : Buffer.byteLength(target, "utf8");
  // Linux gives every symlink mode 0777 (the cpio writer writes them so): that is what the guest must see
  const mode = e.type === "symlink" ? 0o777 : e.mode & 0o7777;
  out[at] = TREE_ENTRY_TYPE[e.type];
  out.writeUInt32LE(mode, at + 1);
  out.writeUInt32LE(e.uid, at + 5);
  out.writeUInt32LE(e.gid, at + 9);
  out.writeBigUInt64LE(BigInt(bytes), at + 13);
  let end = putStr(out, at + 21, e.path === "/" ? "" : e.path.slice(1));
  end = putStr(out, end, target);
  if (e.type === "file") end += out.write(digestHex(e.sha256), end, "hex");
  return end;
}

/** Emits the manifest of `entries` (byte order) in chunks of one reused buffer; returns the bytes emitted. */
function emitManifest(entries: readonly FsEntry[], flags: number, emit: (chunk: Uint8Array) => void): number {
  let chunk = Buffer.allocUnsafe(CHUNK);
  chunk.write(TREE_MANIFEST_MAGIC, 0, "ascii");
  chunk.writeUInt32LE(TREE_MANIFEST_VERSION, 8);
  chunk.writeUInt32LE(flags, 12);
  chunk.writeUInt32LE(entries.length, 16);
  let at = HEAD_BYTES;
  let total = 0;
  for (const e of entries) {
    const need = recordSize(e);
    if (at + need > chunk.length) {
      emit(chunk.subarray(0, at));
      total += at;
      if (need > chunk.length) chunk = Buffer.allocUnsafe(need);
      at = 0;
    }
    const end = putRecord(chunk, at, e);
    if (end !== at + need)
      throw new CairnError("RUN_INFRASTRUCTURE", `the tree manifest writer wrote ${end - at} bytes for ${e.path}, its plan says ${need}`, {
        path: "/vm/tree_manifest",
      });
    at = end;
  }
  emit(chunk.subarray(0, at));
  return total + at;
}

/**
 * `check`: "content" makes the agent hash every file too (`run.verify-tree: content`).
 * The bytes are emitted once here to be hashed and again by `write`, which
 * hashes them again and refuses other bytes, so no copy of them is kept.
 */
export function encodeTreeManifest(tree: CanonicalTree, check: "metadata" | "content" = "metadata"): TreeManifest {
  const entries = entriesInByteOrder(tree);
  const flags = check === "content" ? TREE_FLAG_CONTENT : 0;
  const hasher = identityHasher(TREE_MANIFEST_IDENTITY);
  const size = emitManifest(entries, flags, (chunk) => hasher.update(chunk));
  const digest = hasher.digest();
  return {
    digest,
    size,
    entries: entries.length,
    write(emit) {
      // hashed again as written (some 15 ms at 200,000 entries): what the image holds is what the VM identity names,
      // or the image's writer fails and publishes nothing
      const again = identityHasher(TREE_MANIFEST_IDENTITY);
      const wrote = emitManifest(entries, flags, (chunk) => {
        again.update(chunk);
        emit(chunk);
      });
      if (wrote !== size || again.digest() !== digest)
        throw new CairnError("RUN_INFRASTRUCTURE", "the tree manifest written differs from the one hashed (its tree changed in between)", {
          path: "/vm/tree_manifest",
        });
    },
  };
}

/** The whole manifest in one buffer (a small tree's; tests and tools that write it to a file). */
export function treeManifestBytes(m: TreeManifest): Buffer {
  const chunks: Uint8Array[] = [];
  m.write((c) => chunks.push(Buffer.from(c)));
  return Buffer.concat(chunks);
}
