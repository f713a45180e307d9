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

export interface TreeManifest {
  readonly bytes: Buffer;
  readonly digest: Sha256Digest;
  readonly entries: number;
}

function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
}

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

/**
 * `check`: "content" makes the agent hash every file too (`run.verify-tree: content`).
 * Written into one buffer sized first (a tree of 200,000 entries would
 * otherwise make ten small buffers per entry).
 */
export function encodeTreeManifest(tree: CanonicalTree, check: "metadata" | "content" = "metadata"): TreeManifest {
  const entries = entriesInByteOrder(tree);
  const flags = check === "content" ? TREE_FLAG_CONTENT : 0;
  const head = Buffer.concat([Buffer.from(TREE_MANIFEST_MAGIC, "ascii"), u32(TREE_MANIFEST_VERSION), u32(flags), u32(entries.length)]);
  let size = head.length;
  for (const e of entries) size += recordSize(e);
  const out = Buffer.alloc(size);
  head.copy(out, 0);
  let at = head.length;
  for (const e of entries) {
    const target = e.type === "symlink" ? e.target : "";
    const bytes = e.type === "file" ? e.size : Buffer.byteLength(target, "utf8");
    // Linux gives every symlink mode 0777 (the cpio writer writes them so): that is what the guest must see
    const mode = e.type === "symlink" ? 0o777 : e.mode & 0o7777;
    out[at] = TREE_ENTRY_TYPE[e.type];
    out.writeUInt32LE(mode, at + 1);
    out.writeUInt32LE(e.uid, at + 5);
    out.writeUInt32LE(e.gid, at + 9);
    out.writeBigUInt64LE(BigInt(bytes), at + 13);
    at = putStr(out, at + 21, e.path === "/" ? "" : e.path.slice(1));
    at = putStr(out, at, target);
    if (e.type === "file") at += out.write(digestHex(e.sha256), at, "hex");
  }
  if (at !== size)
    throw new CairnError("RUN_INFRASTRUCTURE", `the tree manifest writer wrote ${at} bytes, its plan says ${size}`, { path: "/vm/tree_manifest" });
  return { bytes: out, digest: identityHasher(TREE_MANIFEST_IDENTITY).update(out).digest(), entries: entries.length };
}
