/**
 * The in-memory model of a canonical filesystem tree: the contract between
 * layer application (OCI tar layers, or a single installed executable), the
 * canonical filesystem identity `cairn.fs/1`, the content store, and the
 * initramfs writer. The model does no I/O; file bytes live in a content sink
 * addressed by their sha256.
 */
import { ContentHasher, Sha256Hasher, type Sha256Digest } from "../core/index.ts";

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

/** A file's content address: the sha256 of its bytes and their count. */
export interface ContentAddress {
  readonly sha256: Sha256Digest;
  readonly size: number;
}

/**
 * One file's bytes on their way into a sink, handed over in order as they
 * are read (chunks of about 1 MiB at most), so no file is ever held whole on
 * its way in: a 2 GiB member costs one chunk of memory, not 2 GiB.
 */
export interface ContentWriter {
  /** The next chunk; the sink copies what it keeps (the caller may reuse it). May throw to refuse. */
  readonly write: (chunk: Uint8Array) => void;
  /** After the last chunk: the content's address. May throw to refuse. */
  readonly end: () => ContentAddress;
}

/**
 * Where layer application puts file bytes. `begin` starts one file of
 * `size` bytes (what its header says; the reader checks that exactly that
 * many arrive before it calls `end`). A writer that never reaches `end` was
 * abandoned by a refusal: the next `begin` (or the sink's owner, dropping
 * everything) discards what it wrote. Writers run one at a time, in archive order.
 */
export interface ContentSink {
  begin(size: number): ContentWriter;
}

/** A writer that hashes and counts the bytes it is given and keeps none. */
export function hashingWriter(): ContentWriter & { readonly hasher: Sha256Hasher } {
  const hasher = new Sha256Hasher();
  let size = 0;
  return {
    hasher,
    write: (chunk) => {
      hasher.update(chunk);
      size += chunk.length;
    },
    end: () => ({ sha256: hasher.digest(), size }),
  };
}

/** A sink that hashes file bytes and keeps none (a check that stores nothing). */
export const HASH_ONLY_SINK: ContentSink = {
  begin: (size) => {
    const h = new ContentHasher(size);
    return { write: (chunk) => h.update(chunk), end: () => ({ sha256: h.digest(), size: h.size }) };
  },
};

/**
 * A sink for callers that want each file whole (kept in memory by their own
 * bound): chunks are gathered, hashed as they come, and `keep` is called with
 * the address and the bytes at the end. `want(size)` may decline to gather a
 * file at all (its bytes are then only hashed, and `keep` sees no bytes).
 */
export function wholeFileSink(
  keep: (address: ContentAddress, data: Uint8Array | undefined) => void,
  want: (size: number) => boolean = () => true,
): ContentSink {
  return {
    begin(size) {
      const w = hashingWriter();
      const parts: Buffer[] | undefined = want(size) ? [] : undefined;
      return {
        write: (chunk) => {
          w.write(chunk);
          parts?.push(Buffer.from(chunk));
        },
        end: () => {
          const a = w.end();
          keep(a, parts === undefined ? undefined : parts.length === 1 ? parts[0]! : Buffer.concat(parts, a.size));
          return a;
        },
      };
    },
  };
}

/** A sink that keeps every file's bytes in memory by digest, for a tree read whole (a strata layer blob, a replay bundle). */
export function memorySink(): { readonly sink: ContentSink; readonly content: Map<Sha256Digest, Uint8Array> } {
  const content = new Map<Sha256Digest, Uint8Array>();
  return { content, sink: wholeFileSink((a, data) => content.set(a.sha256, data!)) };
}

/** Reads back file bytes by digest (from staging or the content store), verifying them. */
export interface ContentSource {
  get(sha256: Sha256Digest): Promise<Uint8Array>;
  /**
   * The same bytes handed to `chunk` in order, a bounded piece at a time (a
   * large file is never held whole), returning their count. The bytes are
   * verified against `sha256` as they pass, so a refusal can come after
   * chunks were handed over: the caller must not use them until this
   * returns. A source without it is read whole through `get`.
   */
  stream?(sha256: Sha256Digest, chunk: (bytes: Uint8Array) => void): Promise<number>;
}
