/**
 * Where pulled content goes: a content-addressed cache the caller provides
 * (the workload area backs it with the content store; tests may back it with
 * a directory). The puller streams each blob into a private staged file the
 * cache hands out, verifies it while it streams, and only then asks the
 * cache to adopt it under its digest; a transfer that fails or is killed
 * leaves at most a staged file, never an entry under a digest.
 */
import { open, rm } from "node:fs/promises";
import { CairnError, type Sha256Digest } from "../../core/index.ts";

/** How many bytes a staged blob collects before one write. */
const WRITE_BATCH_BYTES = 1024 * 1024;

export interface BlobCache {
  /** True when a complete copy of `digest` with `size` bytes is present (the cache verified it when it adopted it). */
  has(digest: Sha256Digest, size: number): boolean;
  /** The size of a present entry, when there is one (a digest-only reference knows no size). */
  sizeOf(digest: Sha256Digest): number | undefined;
  /** A fresh private path to stream into (not yet existing). */
  stagePath(): string;
  /** Names the complete, verified staged file under `digest`, durably (fsynced before the atomic rename; the staged file is gone afterwards). */
  adopt(stagedPath: string, digest: Sha256Digest, size: number): void;
  /** Stores verified bytes under their digest. */
  put(bytes: Uint8Array): Sha256Digest;
  /** Reads and re-verifies a present entry of at most `maxBytes`. */
  read(digest: Sha256Digest, maxBytes: number): Buffer;
  /** The path of a present entry, to copy from. */
  pathOf(digest: Sha256Digest): string;
}

/**
 * Streams a blob into a fresh staged file of `cache`: `fill` writes the chunks
 * (and verifies them as they pass); the file is closed, and on any failure
 * removed. Returns the staged path, for `adopt` once the caller's checks hold
 * (a staged file that fails them is the caller's to remove). It is not
 * fsynced here: `adopt` makes it durable before naming it (the store fsyncs
 * the file, renames it, and fsyncs the directory), and a staged file that is
 * never adopted needs no durability. Syncing here as well flushed every
 * pulled blob twice.
 */
export async function stageBlob(cache: Pick<BlobCache, "stagePath">, fill: (write: (chunk: Uint8Array) => Promise<void>) => Promise<void>): Promise<string> {
  const staged = cache.stagePath();
  const out = await open(staged, "wx", 0o600);
  // Chunks arrive in tens of kilobytes; they are written in batches of about
  // WRITE_BATCH_BYTES (one writev each) instead of one awaited write per chunk.
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  const flush = async (): Promise<void> => {
    const batch = pending;
    const bytes = pendingBytes;
    pending = [];
    pendingBytes = 0;
    if (batch.length === 0) return;
    const { bytesWritten } = await out.writev(batch);
    if (bytesWritten !== bytes) throw new CairnError("IO_ERROR", `a short write staging a blob (${bytesWritten} of ${bytes} bytes)`, { path: staged });
  };
  try {
    await fill(async (chunk) => {
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (pendingBytes >= WRITE_BATCH_BYTES) await flush();
    });
    await flush();
    await out.close();
  } catch (e) {
    await out.close().catch(() => undefined);
    await rm(staged, { force: true });
    throw e;
  }
  return staged;
}
