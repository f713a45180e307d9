/**
 * The one rule for normalizing a captured install (`layer capture`): where a
 * tree's install root (its original prefix, `/opt/conda/envs/x`) appears in
 * its bytes, and what cairn rewrites when the layer mounts the tree somewhere
 * else (`/opt/NAME/VERSION`).
 *
 *  - An occurrence is the prefix as a whole path: not preceded by a path
 *    byte (a name byte or `/`), and not followed by a name byte, so
 *    `/opt/env` is found in `#!/opt/env/bin/python3` and `prefix=/opt/env`,
 *    never in `/opt/env2` or `/x/opt/env`.
 *  - A text file (no NUL byte anywhere in it) that names the prefix has every
 *    occurrence replaced by the mount path: shebangs, `.pc` files, scripts,
 *    modulefiles. Text may change length, so this is safe for any mount path.
 *  - A binary file (any NUL byte: ELF, archives, compiled bytecode) is never
 *    edited. An RPATH or a string in a binary has its length fixed by the
 *    format, and conda's trick of padding a shorter replacement with NULs is
 *    wrong as soon as the string is not NUL-terminated or its length was
 *    recorded elsewhere; a longer replacement cannot fit at all. Such a file
 *    is kept byte for byte and listed as left (the report and the signed
 *    capture record name it), so nobody mistakes the layer for relocated.
 *
 * The scan reads each file once, a chunk at a time, keeping the bytes that
 * could straddle two chunks; a text file to rewrite is read again the same
 * way as it is written, rewritten as it streams, and must be the bytes the
 * scan saw. Memory holds a chunk or two, whatever the file's size.
 */
import { CairnError, Sha256Hasher, type Sha256Digest } from "../core/index.ts";
import type { FileContent } from "../tree/index.ts";

/** Bytes that continue a path component: an occurrence followed by one is part of a longer name. */
const NAME_BYTES = new Uint8Array(256);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+~@%-") NAME_BYTES[c.charCodeAt(0)] = 1;
const SLASH = 0x2f;

function isOccurrence(data: Uint8Array, at: number, len: number): boolean {
  const before = at === 0 ? -1 : data[at - 1]!;
  const after = at + len >= data.length ? -1 : data[at + len]!;
  return (before < 0 || (NAME_BYTES[before] === 0 && before !== SLASH)) && (after < 0 || NAME_BYTES[after] === 0);
}

/** Offsets of the prefix as a whole path in `data` (see the rule above). */
export function prefixOffsets(data: Buffer, prefix: Buffer): number[] {
  const out: number[] = [];
  for (let at = data.indexOf(prefix); at >= 0; at = data.indexOf(prefix, at + prefix.length)) {
    if (isOccurrence(data, at, prefix.length)) out.push(at);
  }
  return out;
}

/** `data` with every occurrence of `from` replaced by `to`; undefined when there is none. */
export function rewritePrefix(data: Buffer, from: Buffer, to: Buffer): Buffer | undefined {
  const at = prefixOffsets(data, from);
  if (at.length === 0) return undefined;
  const parts: Buffer[] = [];
  let last = 0;
  for (const a of at) {
    parts.push(data.subarray(last, a), to);
    last = a + from.length;
  }
  parts.push(data.subarray(last));
  return Buffer.concat(parts);
}

/** What the scan found in one file. */
export interface FileScan {
  readonly namesPrefix: boolean;
  /** How many occurrences; a rewrite changes the size by this many times the length difference. */
  readonly occurrences: number;
  /** Holds a NUL byte: never rewritten. */
  readonly binary: boolean;
  readonly sha256: Sha256Digest;
  readonly size: number;
}

/** A streamed search's events: a chunk as read, an occurrence's absolute offset, or an offset below which no occurrence is still to come. */
type SearchEvent = { readonly chunk: Buffer } | { readonly at: number } | { readonly settled: number };

/**
 * Reads `content` a chunk at a time and reports each occurrence of `prefix`
 * once, in order. An occurrence ending at a chunk's last byte is decided
 * with the next chunk (its following byte), so each chunk is searched when
 * the next one arrives, together with the last `prefix.length + 1` bytes of
 * the one before (its preceding byte); an offset already reported is never
 * reported again. After each search, `settled` says that every occurrence
 * starting below it has been reported.
 */
function* search(content: FileContent, prefix: Buffer): Generator<SearchEvent> {
  let carry = Buffer.alloc(0);
  let pending: Buffer | undefined;
  let pendingStart = 0;
  // Offsets below `decided` were decided by an earlier search (with their preceding byte in view); `next` is past the last occurrence.
  let decided = 0;
  let next = 0;
  let read = 0;
  function* look(buf: Buffer, start: number, final: boolean): Generator<SearchEvent> {
    const from = Math.max(next, decided);
    for (let at = buf.indexOf(prefix, Math.max(0, from - start)); at >= 0; at = buf.indexOf(prefix, at + 1)) {
      if (!final && at + prefix.length >= buf.length) break;
      if (start + at >= Math.max(next, decided) && isOccurrence(buf, at, prefix.length)) {
        yield { at: start + at };
        next = start + at + prefix.length;
      }
    }
    decided = final ? start + buf.length : start + buf.length - prefix.length;
    yield { settled: decided };
  }
  for (const chunk of content.chunks()) {
    const b = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (pending !== undefined) yield* look(pending, pendingStart, false);
    yield { chunk: b };
    pending = carry.length === 0 ? b : Buffer.concat([carry, b]);
    pendingStart = read - carry.length;
    read += b.length;
    carry = Buffer.from(pending.subarray(Math.max(0, pending.length - prefix.length - 1)));
  }
  if (pending !== undefined) yield* look(pending, pendingStart, true);
}

/** Reads `content` once, a chunk at a time: how often it names `prefix`, whether it is binary, its digest and size. */
export function scanContent(content: FileContent, prefix: Buffer): FileScan {
  const hasher = new Sha256Hasher();
  let count = 0;
  let binary = false;
  for (const e of search(content, prefix)) {
    if ("at" in e) count++;
    else if ("chunk" in e) {
      hasher.update(e.chunk);
      if (!binary && e.chunk.includes(0)) binary = true;
    }
  }
  return { namesPrefix: count > 0, occurrences: count, binary, sha256: hasher.digest(), size: hasher.size };
}

/** The size of the pieces a rewritten file is written in. */
const OUT_CHUNK_BYTES = 1024 * 1024;

const changed = (shown: string): CairnError =>
  new CairnError("SOURCE_CHANGED", `${shown} changed while it was captured`, { path: shown, hint: "capture a tree nothing else is writing to" });

/**
 * `content` with every occurrence of `from` replaced by `to`, streamed: the
 * size follows from the scan, the bytes are produced as the source is read
 * (a chunk or two in memory, whatever the file's size), and the source must
 * be the bytes the scan saw (SOURCE_CHANGED at the end otherwise; the tar
 * writer also refuses a content that yields another size, so the blob is
 * never published).
 */
export function rewrittenContent(content: FileContent, scan: FileScan, from: Buffer, to: Buffer, shown: string): FileContent {
  return {
    size: scan.size + scan.occurrences * (to.length - from.length),
    *chunks() {
      const hasher = new Sha256Hasher();
      // Source bytes read and not yet written or skipped, starting at absolute offset `base`.
      let held: Buffer[] = [];
      let base = 0;
      const cut = (upTo: number): Buffer => {
        const all = held.length === 1 ? held[0]! : Buffer.concat(held);
        const n = upTo - base;
        held = n < all.length ? [all.subarray(n)] : [];
        base = upTo;
        return all.subarray(0, n);
      };
      // Output pieces are gathered into chunks of OUT_CHUNK_BYTES: a file naming the prefix on every line would otherwise be written in tiny pieces.
      let out: Buffer[] = [];
      let outBytes = 0;
      const put = (b: Buffer): void => {
        out.push(b);
        outBytes += b.length;
      };
      const flush = (): Buffer => {
        const whole = Buffer.concat(out, outBytes);
        out = [];
        outBytes = 0;
        return whole;
      };
      for (const e of search(content, from)) {
        if ("chunk" in e) {
          hasher.update(e.chunk);
          held.push(e.chunk);
        } else if ("at" in e) {
          put(cut(e.at));
          put(to);
          cut(e.at + from.length);
        } else if (e.settled > base) {
          put(cut(e.settled));
        }
        if (outBytes >= OUT_CHUNK_BYTES) yield flush();
      }
      for (const b of held) put(b);
      if (outBytes > 0) yield flush();
      if (hasher.digest() !== scan.sha256) throw changed(shown);
    },
  };
}

/** `content`, checked as it is written to be the bytes the scan saw (SOURCE_CHANGED at the end otherwise, so the blob is never published). */
export function checkedContent(content: FileContent, scan: FileScan, shown: string): FileContent {
  return {
    size: content.size,
    *chunks() {
      const hasher = new Sha256Hasher();
      for (const c of content.chunks()) {
        hasher.update(c);
        yield c;
      }
      if (hasher.digest() !== scan.sha256) throw changed(shown);
    },
  };
}
