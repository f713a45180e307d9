/**
 * Reading cairn's own layer blobs back (`layer fold`, `lock verify
 * --contents`) through the tree area's strict tar gate and layer
 * application, the same code that reads OCI layers. A blob is hostile until
 * checked: its size and digest are verified against its manifest before it is
 * decompressed, decompression is streamed and bounded as it flows
 * (layer.max_unpacked_bytes, layer.max_expansion_ratio), and
 * every member passes the gate (strict headers, only known pax keys, no
 * devices, FIFOs or hard links, no setuid/setgid, no member twice) and is
 * applied to an in-memory tree, where a member beneath a symlink (planted by
 * this blob or an earlier one) is refused with TAR_THROUGH_SYMLINK and a
 * member whose parent directory the blob does not name is refused: cairn's
 * writer names every parent, so a blob without one was made by hand.
 *
 * A blob is read from memory or, as every command does, from its private
 * staged copy (blob-staging.ts), whose size and digest are checked again,
 * in chunks, before it is decompressed. Fold keeps file bytes: with a
 * staging directory they are spilled there, one private file per content
 * digest, instead of memory, and read back as the folded blob is written.
 *
 * This replaces strata's own tar reader, which checked none of the tree
 * rules: a hand-made blob could write `a/x` under another layer's symlink
 * `a`, and fold merged it.
 */
import { closeSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { checkBlobFile } from "./blob-staging.ts";
import { CairnError, createExclusive, digestHex, FIXED_LIMIT_HINT, sha256, writeFully, type Sha256Digest } from "../core/index.ts";
import {
  applyLayers,
  hashingWriter,
  streamedRegular,
  type ContentSink,
  type TarStreamEntry,
  DEFAULT_LIMITS,
  LIMIT_CEILINGS,
  STRICT_POLICY,
  wholeFileSink,
  type CanonicalTree,
  type FsEntry,
  type InflationBound,
  type LayerLimits,
  type TarEntry,
  DEFAULT_DIR_LIMITS,
} from "../tree/index.ts";

/** layer.max_unpacked_bytes: the bound on one blob's uncompressed tar stream (what layer build may write: layer.max_total_bytes). */
export const DEFAULT_MAX_UNPACKED_BYTES = 8 * 1024 * 1024 * 1024;

/**
 * layer.max_expansion_ratio: the bound on one blob's uncompressed bytes over
 * its compressed bytes, checked once it has inflated past
 * EXPANSION_RATIO_AFTER_BYTES. Real layers inflate 2-20 times; deflate's
 * ceiling is about 1,032 (long runs of one byte), which is what a bomb uses:
 * the 3.7 MB blob inflating to 3.8 GiB. Refused here after about
 * 100 times its compressed size, it costs a bounded amount of work and memory.
 */
export const MAX_EXPANSION_RATIO = 100;
/** Below this much output the ratio is not checked (a small blob of empty files or zeros is cheap whatever its ratio). */
export const EXPANSION_RATIO_AFTER_BYTES = 64 * 1024 * 1024;

/**
 * The tree limits a strata blob is read under: none tighter than what
 * `layer build` can write (layer.max_file_bytes for one file; paths as long
 * and deep as a directory holds). The byte, entry and layer counts are left
 * to layer.max_unpacked_bytes and layer.max_expansion_ratio, which bound each
 * blob's gunzip output as it flows.
 */
export const BLOB_LIMITS: LayerLimits = Object.freeze({
  ...DEFAULT_LIMITS,
  descriptors: Number.MAX_SAFE_INTEGER,
  compressedBytes: Number.MAX_SAFE_INTEGER,
  expandedBytes: Number.MAX_SAFE_INTEGER,
  entries: Number.MAX_SAFE_INTEGER,
  pathLength: LIMIT_CEILINGS.pathLength,
  componentLength: LIMIT_CEILINGS.componentLength,
  depth: LIMIT_CEILINGS.depth,
  fileSize: DEFAULT_DIR_LIMITS.maxFileBytes,
  extendedHeaderBytes: LIMIT_CEILINGS.extendedHeaderBytes,
});

/** One blob to read: its bytes or its staged copy's path, what its manifest says they are, and a name for messages. */
export type BlobInput = ({ readonly blob: Uint8Array } | { readonly path: string }) & {
  readonly expected: { readonly sha256: Sha256Digest; readonly size: number };
  readonly where: string;
};

/**
 * The tree a sequence of blobs builds, and (unless told not to keep them) the
 * bytes of every file in it by sha256: in `content`, or, when read with a
 * spill directory, in `spilled` (the private file holding them).
 */
export interface BlobTree {
  readonly tree: CanonicalTree;
  readonly content: ReadonlyMap<Sha256Digest, Uint8Array>;
  readonly spilled: ReadonlyMap<Sha256Digest, string>;
}

export interface ReadBlobsOptions {
  readonly maxUnpacked?: number;
  readonly maxRatio?: number;
  /** Keep every file's bytes in `content` (default true; fold needs them, a content check only needs the tree's digests). */
  readonly keepContent?: boolean;
  /** Keep only the bytes of files with these digests (an export picking one modulefile out of a layer); overrides keepContent. */
  readonly keepOnly?: ReadonlySet<Sha256Digest>;
  /** Called before a member replaces an existing entry; may throw to refuse (see ApplyLayersOptions.onReplace). */
  readonly onReplace?: (old: FsEntry, next: FsEntry, where: string) => void;
  /** Keep file bytes in private files under this directory (one per digest) instead of memory; implies keepContent. */
  readonly spillDir?: string;
}

/** Size and digest first: nothing is decompressed before it is verified. */
function checkBlob(input: BlobInput): void {
  if ("path" in input) {
    checkBlobFile(input.path, input.expected, input.where);
    return;
  }
  const { blob, expected, where } = input;
  if (blob.length !== expected.size)
    throw new CairnError("SIZE_MISMATCH", `${where}: blob is ${blob.length} bytes, manifest says ${expected.size}`, { path: where });
  const found = sha256(blob);
  if (found !== expected.sha256)
    throw new CairnError("DIGEST_MISMATCH", `${where}: the manifest says ${expected.sha256}, the blob hashes to ${found}`, { path: where });
}

/**
 * Verifies, unpacks and applies `blobs` in order (a later blob over an
 * earlier one, whiteouts included) under the strict policy with every parent
 * required; see the module comment for what is refused. Each blob is
 * gunzipped as a stream through the gate, bounded as it flows
 * (layer.max_unpacked_bytes, layer.max_expansion_ratio), never inflated
 * whole; a refusal leaves nothing behind (this writes nothing).
 */
export async function readLayerBlobs(blobs: readonly BlobInput[], options: ReadBlobsOptions = {}): Promise<BlobTree> {
  for (const b of blobs) checkBlob(b);
  const inflation: InflationBound = {
    maxBytes: options.maxUnpacked ?? DEFAULT_MAX_UNPACKED_BYTES,
    maxBytesName: "layer.max_unpacked_bytes",
    maxRatio: options.maxRatio ?? MAX_EXPANSION_RATIO,
    maxRatioName: "layer.max_expansion_ratio",
    ratioAfter: EXPANSION_RATIO_AFTER_BYTES,
    hint: FIXED_LIMIT_HINT,
  };
  const keep = options.keepContent ?? true;
  const content = new Map<Sha256Digest, Uint8Array>();
  const spilled = new Map<Sha256Digest, string>();
  // Bytes are gathered only when some may be kept; a content check only hashes them.
  const gather = options.keepOnly !== undefined ? options.keepOnly.size > 0 : keep;
  const spill = options.spillDir !== undefined ? spillSink(options.spillDir, spilled) : undefined;
  const sink =
    spill !== undefined
      ? spill.sink
      : wholeFileSink(
          (a, data) => {
            if (data !== undefined && (options.keepOnly !== undefined ? options.keepOnly.has(a.sha256) : keep)) content.set(a.sha256, data);
          },
          () => gather,
        );
  const layers = blobs.map((b) => ({ ...("path" in b ? { path: b.path } : { bytes: b.blob }), compression: "gzip" as const, where: b.where }));
  try {
    const { tree } = await applyLayers({
      layers,
      policy: STRICT_POLICY,
      limits: BLOB_LIMITS,
      sink,
      parents: "required",
      inflation,
      ...(options.onReplace ? { onReplace: options.onReplace } : {}),
    });
    return { tree, content, spilled };
  } finally {
    spill?.close(); // a file a refusal abandoned mid-way: closed and removed
  }
}

/**
 * A sink that writes each file's bytes to a private file under `dir`
 * (created exclusively, 0600), named by its digest once complete; a repeat
 * of known bytes is hashed and dropped, a file abandoned by a refusal is
 * removed by the next `begin`. Memory holds one chunk.
 */
function spillSink(dir: string, spilled: Map<Sha256Digest, string>): { readonly sink: ContentSink; readonly close: () => void } {
  let n = 0;
  let open: { fd: number; tmp: string } | undefined;
  const abandon = (): void => {
    if (open === undefined) return;
    closeSync(open.fd);
    rmSync(open.tmp, { force: true });
    open = undefined;
  };
  const sink: ContentSink = {
    begin() {
      abandon();
      const tmp = join(dir, `partial-${++n}`);
      const file = { fd: createExclusive(tmp, 0o600), tmp };
      open = file;
      const w = hashingWriter();
      return {
        write: (chunk) => {
          w.write(chunk);
          writeFully(file.fd, chunk);
        },
        end: () => {
          const a = w.end();
          closeSync(file.fd);
          open = undefined;
          if (spilled.has(a.sha256)) rmSync(tmp, { force: true });
          else {
            const at = join(dir, digestHex(a.sha256));
            renameSync(tmp, at);
            spilled.set(a.sha256, at);
          }
          return a;
        },
      };
    },
  };
  return { sink, close: abandon };
}

/** The tree as streamed writer entries whose file bytes are read back from the spill files as the blob is written. */
export function treeToStreamEntries(t: BlobTree): TarStreamEntry[] {
  const out: TarStreamEntry[] = [];
  for (const e of t.tree.values()) {
    if (e.path === "/") continue;
    const path = e.path.slice(1);
    if (e.type === "dir") out.push({ type: "dir", path, mode: e.mode });
    else if (e.type === "symlink") out.push({ type: "symlink", path, target: e.target });
    else {
      const at = t.spilled.get(e.sha256);
      if (at === undefined || statSync(at).size !== e.size) throw new CairnError("STORE_MISSING", `the bytes of ${e.path} were not kept`, { path: e.path });
      out.push({ type: "file", path, mode: e.mode, content: streamedRegular(at, e.size) });
    }
  }
  return out;
}

/** The tree as writer entries (relative paths, the root left out), for building a blob from it. */
export function treeToTarEntries(t: BlobTree): TarEntry[] {
  const out: TarEntry[] = [];
  for (const e of t.tree.values()) {
    if (e.path === "/") continue;
    const path = e.path.slice(1);
    if (e.type === "dir") out.push({ type: "dir", path, mode: e.mode });
    else if (e.type === "symlink") out.push({ type: "symlink", path, target: e.target });
    else {
      const data = t.content.get(e.sha256);
      if (data === undefined) throw new CairnError("STORE_MISSING", `the bytes of ${e.path} were not kept`, { path: e.path });
      out.push({ type: "file", path, mode: e.mode, data });
    }
  }
  return out;
}
