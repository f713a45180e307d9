/**
 * Where a replay bundle's bytes wait while it is checked, so that importing a
 * bundle holds at most one member's bytes, never the bundle: the bundle file
 * is copied once, bounded (bundle.max_bytes) and chunk by chunk, into a
 * private directory (0700, removed when the import ends; see strata's blob
 * staging), and read by the tar gate from that copy, so what is checked is
 * what is imported even if the original changes. Members up to
 * SPILL_AFTER_BYTES stay in memory; larger ones (layer blobs, kernels, long
 * replay logs) are written to private files in the same directory as their
 * bytes stream out of the gate, hashed as they go.
 */
import { closeSync } from "node:fs";
import { createExclusive, ioError, readFileBounded, streamFileBounded, writeFully, writeNewFile, type Sha256Digest } from "../core/index.ts";
import { BlobStaging } from "../strata/index.ts";
import { hashingWriter, type ContentSink } from "../tree/index.ts";

/** Members larger than this are spilled to files instead of held. */
export const SPILL_AFTER_BYTES = 4 * 1024 * 1024;

/** One member's bytes: in memory, or in a private file. */
export type HeldBytes =
  | { readonly bytes: Uint8Array; readonly file?: undefined }
  | { readonly bytes?: undefined; readonly file: string; readonly size: number };

export class BundleSpill {
  readonly #staging: BlobStaging;
  readonly #held = new Map<Sha256Digest, HeldBytes>();
  /** Spill files still open (a member abandoned by a refusal); closed by dispose. */
  readonly #open = new Set<number>();

  constructor() {
    this.#staging = BlobStaging.create();
  }

  /** Copies the bundle at `file` into the private directory (the checks and codes of a bounded read) and returns the copy's path. */
  copyBundle(file: string, max: number, limit: string): string {
    const copy = this.#staging.path("bundle.tar");
    writeNewFile(copy, (write) => streamFileBounded(file, max, limit, write, { missing: "USAGE", notRegular: "BUNDLE_INVALID" }));
    return copy;
  }

  /** A content sink keeping small members in memory and spilling large ones; `get` finds them by digest. */
  sink(): ContentSink {
    return {
      begin: (size) => {
        const hash = hashingWriter();
        if (size <= SPILL_AFTER_BYTES) {
          const parts: Buffer[] = [];
          return {
            write: (chunk) => {
              hash.write(chunk);
              parts.push(Buffer.from(chunk));
            },
            end: () => {
              const a = hash.end();
              this.#held.set(a.sha256, { bytes: Buffer.concat(parts, a.size) });
              return a;
            },
          };
        }
        const file = this.#staging.path("member");
        const fd = createExclusive(file, 0o600);
        this.#open.add(fd);
        return {
          write: (chunk) => {
            hash.write(chunk);
            try {
              writeFully(fd, chunk);
            } catch (e) {
              throw ioError(file, e, "write");
            }
          },
          end: () => {
            this.#open.delete(fd);
            closeSync(fd);
            const a = hash.end();
            this.#held.set(a.sha256, { file, size: a.size });
            return a;
          },
        };
      },
    };
  }

  held(digest: Sha256Digest): HeldBytes | undefined {
    return this.#held.get(digest);
  }

  /** The members as a map of path to bytes, a spilled member read back from its file only when asked for (one at a time). */
  members(files: ReadonlyMap<string, { readonly sha256: Sha256Digest; readonly size: number }>): ReadonlyMap<string, Uint8Array> {
    return new SpilledMembers(files, this);
  }

  /** A member's bytes whole, read back from its private file when spilled (bounded by `max`, the member's use). */
  bytes(digest: Sha256Digest, max: number, limit: string): Uint8Array | undefined {
    const h = this.#held.get(digest);
    if (h === undefined) return undefined;
    if (h.bytes !== undefined) return h.bytes;
    return readFileBounded(h.file, max, limit, { expectedSize: h.size });
  }

  dispose(): void {
    for (const fd of this.#open) closeSync(fd);
    this.#open.clear();
    this.#staging.dispose();
  }
}

/** A read-only map over the bundle's members whose values come from the spill: memory for small members, the private file for large ones. */
class SpilledMembers implements ReadonlyMap<string, Uint8Array> {
  constructor(
    readonly files: ReadonlyMap<string, { readonly sha256: Sha256Digest; readonly size: number }>,
    readonly spill: BundleSpill,
  ) {}
  get size(): number {
    return this.files.size;
  }
  has(path: string): boolean {
    return this.files.has(path);
  }
  get(path: string): Uint8Array | undefined {
    const f = this.files.get(path);
    return f === undefined ? undefined : this.spill.bytes(f.sha256, f.size, "bundle.max_member_bytes");
  }
  *keys(): MapIterator<string> {
    yield* this.files.keys();
  }
  *values(): MapIterator<Uint8Array> {
    for (const p of this.files.keys()) yield this.get(p)!;
  }
  *entries(): MapIterator<[string, Uint8Array]> {
    for (const p of this.files.keys()) yield [p, this.get(p)!];
  }
  [Symbol.iterator](): MapIterator<[string, Uint8Array]> {
    return this.entries();
  }
  forEach(f: (value: Uint8Array, key: string, map: ReadonlyMap<string, Uint8Array>) => void): void {
    for (const [k, v] of this.entries()) f(v, k, this);
  }
}
