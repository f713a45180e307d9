/**
 * Verify's check of a stored content pack against the tree it was rebuilt
 * from: the same index a PackWriter would build (store/pack.ts), compared
 * with the stored pack in one front-to-back pass, so an intact pack costs
 * one read and no writes, and any changed byte, missing content or other
 * tail sends verify to rebuild it. A stored pack is hostile until this
 * passes: it may have been edited, truncated or replaced by a symlink.
 */
import { closeSync, fstatSync } from "node:fs";
import { readFullyAt, Sha256Hasher } from "../core/index.ts";
import { contentHash, openPack, PackPlan, WRITE_BUFFER, type PackContentWriter, type PackedAddress, type PackIndex } from "./pack.ts";
import type { Store } from "./store.ts";

/**
 * Verify's pass over a tree's contents: builds the same index a PackWriter
 * would, writes nothing, and `finish` checks the stored pack against it
 * (name, size, every content's sha256, the tail). Undefined means the stored
 * pack is missing or differs and must be rebuilt with a PackWriter; the
 * common case, an intact pack, costs one read and no writes.
 */
export class PackCheck {
  readonly #store: Store;
  readonly #plan = new PackPlan();

  constructor(store: Store) {
    this.#store = store;
  }

  begin(_size: number): PackContentWriter {
    const hash = contentHash();
    return {
      write: (chunk) => hash.write(chunk),
      end: () => {
        const a = hash.end();
        this.#plan.record(a.sha256, a.size);
        return a;
      },
    };
  }

  add(data: Uint8Array): PackedAddress {
    const w = this.begin(data.length);
    w.write(data);
    return w.end();
  }

  finish(): PackIndex | undefined {
    const { digest, size } = this.#plan.seal();
    if (!this.#store.has("packs", digest, size)) return undefined;
    let fd: number | undefined;
    try {
      fd = openPack(this.#store, digest);
      if (!fstatSync(fd).isFile() || fstatSync(fd).size !== size) return undefined;
      if (!bodyMatches(fd, this.#plan)) return undefined;
      // the stored tail against the plan's, chunk by chunk (neither is held whole)
      let at = this.#plan.offset;
      const stored = Buffer.allocUnsafe(64 * 1024);
      for (const chunk of this.#plan.tail()) {
        const got = stored.subarray(0, chunk.length);
        if (readFullyAt(fd, got, at) !== chunk.length || !got.equals(chunk)) return undefined;
        at += chunk.length;
      }
      return { digest, size, entries: this.#plan.entries };
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
}

/**
 * True when the pack's body holds exactly the plan's contents: the body is
 * read once, front to back, in 1 MiB blocks (the contents lie end to end in
 * plan order), and each content's bytes are hashed as they pass and checked
 * against its sha256 when it ends. One read per block, not one per content:
 * a tree of 20,000 small files costs ~100 reads, not 20,000.
 */
function bodyMatches(fd: number, plan: PackPlan): boolean {
  const buf = Buffer.allocUnsafe(Math.min(Math.max(plan.offset, 1), WRITE_BUFFER));
  let k = 0; // the content being hashed
  let h = new Sha256Hasher();
  const n = plan.entries.size;
  let left = n > 0 ? plan.entries.sizeAt(0) : 0; // its bytes still to come
  const settle = (): boolean => {
    // closes every content that has all its bytes (empty ones included)
    while (k < n && left === 0) {
      if (h.digest() !== plan.entries.digestAt(k)) return false;
      k++;
      h = new Sha256Hasher();
      left = k < n ? plan.entries.sizeAt(k) : 0;
    }
    return true;
  };
  if (!settle()) return false;
  for (let at = 0; at < plan.offset; ) {
    const n = Math.min(buf.length, plan.offset - at);
    if (readFullyAt(fd, buf.subarray(0, n), at) !== n) return false;
    for (let pos = 0; pos < n; ) {
      const take = Math.min(left, n - pos);
      h.update(buf.subarray(pos, pos + take));
      pos += take;
      left -= take;
      if (!settle()) return false;
    }
    at += n;
  }
  return k === n;
}
