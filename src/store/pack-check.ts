/**
 * Verify's check of a stored content pack against the tree it was rebuilt
 * from: the same index a PackWriter would build (store/pack.ts), compared
 * with the stored pack, so an intact pack costs one read and no writes, and
 * any changed byte, missing content or other tail sends verify to rebuild
 * it. A stored pack is hostile until this passes: it may have been edited,
 * truncated or replaced by a symlink.
 *
 * Given the pack it expects (the store's record for the derived entry, a
 * hint only), the check compares each content's bytes with that pack's as
 * they stream past, so the pack is read once, beside the layers, and never
 * hashed: the contents' own sha256 is computed from the layer's bytes
 * anyway, and bytes equal to those hash the same. The hint must then turn
 * out to be the rebuilt index's name. Without a hint, or with a wrong one,
 * the stored pack of the rebuilt name is read front to back and every
 * content re-hashed (`bodyMatches`).
 */
import { closeSync, fstatSync } from "node:fs";
import { ContentHasher, readFullyAt, Sha256Hasher, type Sha256Digest } from "../core/index.ts";
import { PackPlan, WRITE_BUFFER, type PackContentWriter, type PackedAddress, type PackIndex } from "./pack.ts";
import { openPack } from "./pack-read.ts";
import type { Store } from "./store.ts";

/**
 * Verify's pass over a tree's contents: builds the same index a PackWriter
 * would, writes nothing, and `finish` checks the stored pack against it
 * (name, size, every content's bytes, the tail). Undefined means the stored
 * pack is missing or differs and must be rebuilt with a PackWriter; the
 * common case, an intact pack, costs one read and no writes. `abort` (or
 * `finish`) closes the expected pack.
 */
export class PackCheck {
  readonly #store: Store;
  readonly #plan = new PackPlan();
  readonly #expected: Sha256Digest | undefined;
  #body: BodyWindow | undefined;
  /** A recorded content's bytes differ from the expected pack's at its offset (shared with each CheckedContent). */
  readonly #state: CheckState = { differs: false };

  constructor(store: Store, expected?: Sha256Digest) {
    this.#store = store;
    this.#expected = expected;
    if (expected === undefined) return;
    try {
      const fd = openPack(store, expected);
      if (fstatSync(fd).isFile()) this.#body = new BodyWindow(fd);
      else closeSync(fd);
    } catch {
      // missing or unopenable: finish decides from the rebuilt name alone
    }
  }

  begin(size: number): PackContentWriter {
    // A content lies at the end of the recorded body (a duplicate or unfinished one records nothing, and the next starts there too).
    return new CheckedContent(this.#plan, this.#state, new ContentHasher(size), this.#plan.offset, this.#body);
  }

  add(data: Uint8Array): PackedAddress {
    const w = this.begin(data.length);
    w.write(data);
    return w.end();
  }

  finish(): PackIndex | undefined {
    const { digest, size } = this.#plan.seal();
    const index = { digest, size, entries: this.#plan.entries };
    const body = this.#body;
    this.#body = undefined;
    if (body !== undefined) {
      try {
        // the expected pack is the rebuilt one: its body was compared while streaming; the same open file must end with the tail
        if (digest === this.#expected) return !this.#state.differs && body.endsWithTail(this.#plan, size) ? index : undefined;
      } catch {
        return undefined;
      } finally {
        body.close();
      }
    }
    if (!this.#store.has("packs", digest, size)) return undefined;
    let fd: number | undefined;
    try {
      fd = openPack(this.#store, digest);
      if (!fstatSync(fd).isFile() || fstatSync(fd).size !== size) return undefined;
      if (!bodyMatches(fd, this.#plan)) return undefined;
      if (!tailMatches(fd, this.#plan)) return undefined;
      return index;
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** Closes the expected pack (after a refusal). Safe to call more than once. */
  abort(): void {
    this.#body?.close();
    this.#body = undefined;
  }
}

interface CheckState {
  differs: boolean;
}

/**
 * One content streaming through a PackCheck: hashed, and compared with the
 * expected pack at its offset while every chunk so far matched and no
 * recorded content differed (one object per content, no closures: this
 * runs once per file of the tree). Ending it records it in the plan; a new
 * content whose bytes did not match marks the pack different.
 */
class CheckedContent implements PackContentWriter {
  readonly #plan: PackPlan;
  readonly #state: CheckState;
  readonly #hash: ContentHasher;
  readonly #body: BodyWindow | undefined;
  #at: number;
  #same = true;

  constructor(plan: PackPlan, state: CheckState, hash: ContentHasher, at: number, body: BodyWindow | undefined) {
    this.#plan = plan;
    this.#state = state;
    this.#hash = hash;
    this.#at = at;
    this.#body = body;
  }

  write(chunk: Uint8Array): void {
    this.#hash.update(chunk);
    if (this.#same && this.#body !== undefined && !this.#state.differs) this.#same = this.#body.holds(chunk, this.#at);
    this.#at += chunk.length;
  }

  end(): PackedAddress {
    // the plan takes the digest's 32 bytes from the hasher (no string parsed back per content)
    if (this.#plan.recordRaw(this.#hash.raw(), this.#hash.size) && !this.#same) this.#state.differs = true;
    return { sha256: this.#hash.digest(), size: this.#hash.size };
  }
}

/** The expected pack's body through one 1 MiB window, refilled where the compared bytes leave it (sequentially, as contents stream in order). */
class BodyWindow {
  readonly #fd: number;
  readonly #buf = Buffer.allocUnsafe(WRITE_BUFFER);
  #start = 0;
  #length = 0;
  #closed = false;

  constructor(fd: number) {
    this.#fd = fd;
  }

  /** True when the pack holds exactly `chunk` at offset `at`; false once closed (a content still streaming after `finish` or `abort`). */
  holds(chunk: Uint8Array, at: number): boolean {
    if (this.#closed) return false;
    for (let done = 0; done < chunk.length; ) {
      const pos = at + done;
      if (pos < this.#start || pos >= this.#start + this.#length) {
        this.#start = pos;
        this.#length = readFullyAt(this.#fd, this.#buf, pos);
        if (this.#length === 0) return false;
      }
      const from = pos - this.#start;
      const n = Math.min(chunk.length - done, this.#length - from);
      if (this.#buf.compare(chunk, done, done + n, from, from + n) !== 0) return false;
      done += n;
    }
    return true;
  }

  /** True when the file is a regular file of `size` bytes that ends with the plan's tail. */
  endsWithTail(plan: PackPlan, size: number): boolean {
    const st = fstatSync(this.#fd);
    return st.isFile() && st.size === size && tailMatches(this.#fd, plan);
  }

  close(): void {
    this.#closed = true;
    closeSync(this.#fd);
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
  const count = plan.entries.size;
  let left = count > 0 ? plan.entries.sizeAt(0) : 0; // its bytes still to come
  const settle = (): boolean => {
    // closes every content that has all its bytes (empty ones included)
    while (k < count && left === 0) {
      if (h.digest() !== plan.entries.digestAt(k)) return false;
      k++;
      h = new Sha256Hasher();
      left = k < count ? plan.entries.sizeAt(k) : 0;
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
  return k === count;
}

/**
 * True when the file holds the plan's tail (index, count, magic) right after
 * the body: compared chunk by chunk as the plan makes it, so neither the
 * expected tail nor the stored one (40 bytes per content) is held whole.
 */
function tailMatches(fd: number, plan: PackPlan): boolean {
  const stored = Buffer.allocUnsafe(64 * 1024);
  let at = plan.offset;
  for (const chunk of plan.tail()) {
    const got = stored.subarray(0, chunk.length);
    if (readFullyAt(fd, got, at) !== chunk.length || !got.equals(chunk)) return false;
    at += chunk.length;
  }
  return true;
}
