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
 * could straddle two chunks; a text file to rewrite is then read whole,
 * bounded by capture.max_rewrite_bytes, and must be the bytes the scan saw.
 */
import { CairnError, checkLimit, FIXED_LIMIT_HINT, sha256, Sha256Hasher, type Sha256Digest } from "../core/index.ts";
import type { FileContent } from "../tree/index.ts";

/** capture.max_rewrite_bytes: a text file that names the install root is rewritten in memory. */
export const MAX_REWRITE_BYTES = 64 * 1024 * 1024;

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
  /** Holds a NUL byte: never rewritten. */
  readonly binary: boolean;
  readonly sha256: Sha256Digest;
  readonly size: number;
}

/** Reads `content` once, a chunk at a time: does it name `prefix`, is it binary, and its digest. */
export function scanContent(content: FileContent, prefix: Buffer): FileScan {
  const hasher = new Sha256Hasher();
  let carry = Buffer.alloc(0);
  let names = false;
  let binary = false;
  let pending: Buffer | undefined;
  // An occurrence that ends at a chunk's last byte is decided with the next chunk (its following byte), so it is looked for again there.
  const look = (buf: Buffer, final: boolean): void => {
    for (let at = buf.indexOf(prefix); at >= 0 && !names; at = buf.indexOf(prefix, at + 1)) {
      if (!final && at + prefix.length >= buf.length) break;
      if (isOccurrence(buf, at, prefix.length)) names = true;
    }
  };
  for (const chunk of content.chunks()) {
    const b = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    hasher.update(b);
    if (!binary && b.includes(0)) binary = true;
    if (pending !== undefined) look(pending, false);
    const buf = carry.length === 0 ? b : Buffer.concat([carry, b]);
    pending = buf;
    carry = Buffer.from(buf.subarray(Math.max(0, buf.length - prefix.length - 1)));
  }
  if (pending !== undefined) look(pending, true);
  return { namesPrefix: names, binary, sha256: hasher.digest(), size: hasher.size };
}

const changed = (shown: string): CairnError =>
  new CairnError("SOURCE_CHANGED", `${shown} changed while it was captured`, { path: shown, hint: "capture a tree nothing else is writing to" });

/** The file's bytes, read whole (bounded by capture.max_rewrite_bytes), which must be the bytes the scan saw. */
export function readScanned(content: FileContent, scan: FileScan, shown: string): Buffer {
  checkLimit("capture.max_rewrite_bytes", content.size, MAX_REWRITE_BYTES, shown, "bytes", FIXED_LIMIT_HINT);
  const data = Buffer.concat([...content.chunks()].map((c) => Buffer.from(c.buffer, c.byteOffset, c.byteLength)));
  if (sha256(data) !== scan.sha256) throw changed(shown);
  return data;
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
