/**
 * The in-memory model of a canonical filesystem tree: the contract between
 * layer application (OCI tar layers, or a single installed executable), the
 * canonical filesystem identity `cairn.fs/1`, the content store, and the
 * initramfs writer. The model does no I/O; file bytes live in a content sink
 * addressed by their sha256.
 */
import { sha256, type Sha256Digest } from "../core/index.ts";

export type FsEntryType = "dir" | "file" | "symlink";

export interface FsEntryBase {
  /** Absolute, normalized path: "/" for the root, "/usr/bin/x" otherwise (no trailing slash, no "." or ".." parts). */
  readonly path: string;
  /** Permission bits only (0o0000–0o1777 after policy: sticky kept, setuid/setgid refused or stripped). */
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  /** Whole seconds since the epoch (may be 0). */
  readonly mtime: number;
}

export interface DirEntry extends FsEntryBase {
  readonly type: "dir";
}

export interface FileEntry extends FsEntryBase {
  readonly type: "file";
  readonly size: number;
  readonly sha256: Sha256Digest;
}

export interface SymlinkEntry extends FsEntryBase {
  readonly type: "symlink";
  /** The link target exactly as recorded (may be relative or absolute; never followed on the host). */
  readonly target: string;
}

export type FsEntry = DirEntry | FileEntry | SymlinkEntry;

/** A complete tree: every directory explicit, the root "/" included. Keyed by path. */
export type CanonicalTree = ReadonlyMap<string, FsEntry>;

/** Where layer application puts file bytes; returns their digest and size. */
export interface ContentSink {
  put(data: Uint8Array): Promise<{ sha256: Sha256Digest; size: number }>;
}

/** A sink that keeps every file's bytes in memory by digest, for a tree read whole (a strata layer blob, a replay bundle). */
export function memorySink(): { readonly sink: ContentSink; readonly content: Map<Sha256Digest, Uint8Array> } {
  const content = new Map<Sha256Digest, Uint8Array>();
  return {
    content,
    sink: {
      async put(data) {
        const d = sha256(data);
        content.set(d, data);
        return { sha256: d, size: data.length };
      },
    },
  };
}

/** Reads back file bytes by digest (from staging or the content store), verifying them. */
export interface ContentSource {
  get(sha256: Sha256Digest): Promise<Uint8Array>;
}
