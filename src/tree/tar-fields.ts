/**
 * The fields of one tar header block, decoded strictly: numbers as octal
 * (leading spaces, NUL or space terminated) or base-256 and nothing else,
 * names as raw bytes that must be valid UTF-8 with no NUL, the ustar and GNU
 * magics, and the type flags the gate lets through. `parseInt` and lossy
 * decoding, what tar-stream does, would let two readers of one header
 * disagree; these never guess. The tar gate (tar-gate.ts) is their only user.
 */
import { CairnError } from "../core/index.ts";

/** Device nodes and FIFOs pass the gate as records; layer application refuses or skips them by policy (`devices`). */
export type MemberType = "file" | "dir" | "symlink" | "hardlink" | "chardev" | "blockdev" | "fifo";

/** The member types the gate lets through, by type flag; every other flag is refused (TAR_UNSUPPORTED_TYPE). */
export const MEMBER_TYPES: Readonly<Record<string, MemberType>> = Object.freeze({
  "0": "file",
  "\0": "file",
  "5": "dir",
  "2": "symlink",
  "1": "hardlink",
  "3": "chardev",
  "4": "blockdev",
  "6": "fifo",
});
export const USTAR_MAGIC = Buffer.from("ustar\x0000", "latin1");
export const GNU_MAGIC = Buffer.from("ustar  \0", "latin1");

export function matches(h: Uint8Array, off: number, magic: Uint8Array): boolean {
  for (let i = 0; i < magic.length; i++) if (h[off + i] !== magic[i]) return false;
  return true;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

export function refuse(
  code: "TAR_INVALID" | "TAR_PAX" | "TAR_SPARSE" | "TAR_TIMESTAMP" | "TAR_UNSUPPORTED_TYPE" | "TAR_NAME_UTF8" | "TAR_UNSAFE_PATH" | "TAR_TRAILING",
  message: string,
  where: string,
  hint?: string,
): CairnError {
  return new CairnError(code, message, { path: where, hint });
}

export function isZero(b: Uint8Array): boolean {
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false;
  return true;
}

/** Strict numeric field: octal digits (leading spaces/zeros allowed, NUL or space terminated) or base-256. Reads `h` in place (once per field of every header, so no subarray). */
export function numeric(h: Uint8Array, off: number, len: number, field: string, where: string): number {
  const end = off + len;
  if ((h[off]! & 0x80) !== 0) {
    if (h[off] !== 0x80) throw refuse(field === "mtime" ? "TAR_TIMESTAMP" : "TAR_INVALID", `negative or malformed base-256 ${field}`, where);
    let v = 0;
    for (let i = off + 1; i < end; i++) {
      v = v * 256 + h[i]!;
      if (!Number.isSafeInteger(v)) throw refuse("TAR_INVALID", `${field} is too large`, where);
    }
    return v;
  }
  let i = off;
  while (i < end && h[i] === 0x20) i++;
  let v = 0;
  for (; i < end; i++) {
    const c = h[i]!;
    if (c === 0 || c === 0x20) break;
    if (c < 0x30 || c > 0x37) throw refuse("TAR_INVALID", `${field} is not an octal number`, where);
    v = v * 8 + (c - 0x30);
  }
  for (; i < end; i++) if (h[i] !== 0 && h[i] !== 0x20) throw refuse("TAR_INVALID", `${field} has bytes after its terminator`, where);
  if (!Number.isSafeInteger(v)) throw refuse("TAR_INVALID", `${field} is too large`, where);
  return v;
}

/**
 * A NUL-terminated field as text when every byte before its NUL is ASCII
 * (the common name): then its latin1 decoding is its UTF-8 decoding, read
 * without a subarray or a decoder call; undefined otherwise (the caller
 * decodes `cstr` strictly with `text`).
 */
export function asciiField(h: Buffer, off: number, len: number): string | undefined {
  let end = off;
  for (const stop = off + len; end < stop; end++) {
    const c = h[end]!;
    if (c === 0) break;
    if (c >= 0x80) return undefined;
  }
  return h.toString("latin1", off, end);
}

/** Bytes of a NUL-terminated field. */
export function cstr(h: Uint8Array, off: number, len: number): Uint8Array {
  const f = h.subarray(off, off + len);
  const end = f.indexOf(0);
  return end === -1 ? f : f.subarray(0, end);
}

export function text(bytes: Uint8Array, what: string, where: string): string {
  if (bytes.includes(0)) throw refuse("TAR_UNSAFE_PATH", `${what} contains NUL`, where);
  try {
    return utf8.decode(bytes);
  } catch {
    throw refuse("TAR_NAME_UTF8", `${what} is not valid UTF-8`, where, "rebuild the layer with UTF-8 file names");
  }
}

/** The header's own name: ustar's prefix and name joined by "/", or GNU's name field; strictly UTF-8 (an ASCII name is read in place). */
export function headerName(h: Buffer, gnu: boolean, at: string): string {
  const name = asciiField(h, 0, 100);
  const prefix = gnu ? "" : asciiField(h, 345, 155);
  if (name !== undefined && prefix !== undefined) return prefix.length > 0 ? `${prefix}/${name}` : name;
  let bytes: Uint8Array = cstr(h, 0, 100);
  const prefixBytes = gnu ? undefined : cstr(h, 345, 155);
  if (prefixBytes !== undefined && prefixBytes.length > 0) bytes = Buffer.concat([prefixBytes, Buffer.from("/"), bytes]);
  return text(bytes, "member name", at);
}
