/**
 * A small, deterministic tar writer for layer blobs. Only what a layer needs:
 * directories, regular files and symlinks, owned by 0:0 with no user or group
 * names, mtime 0, modes normalized by the caller. Names that do not fit the
 * ustar name/prefix fields get a PAX `path` (or `linkpath`) record, and
 * nothing else ever goes into a PAX header, so no host metadata (atime, ctime,
 * xattrs, uid names) can leak in. The same entries give the same bytes on every
 * host.
 *
 * The archive can be produced whole (`writeTar`, small layers) or as a
 * stream of chunks (`tarChunks`), where a file's bytes are read as they are
 * written (`FileContent`): a 2 GiB file costs one chunk of memory, not 2 GiB.
 * Both give the same bytes; a content that yields more or fewer bytes than
 * it declared is refused (SOURCE_CHANGED), never written short or long,
 * since the header already promised its size.
 */
import { CairnError } from "../core/index.ts";

export type TarEntry =
  | { readonly type: "dir"; readonly path: string; readonly mode: number }
  | { readonly type: "file"; readonly path: string; readonly mode: number; readonly data: Uint8Array }
  | { readonly type: "symlink"; readonly path: string; readonly target: string };

/** A file's bytes, read when they are written: exactly `size` bytes, in order, from `chunks()`. */
export interface FileContent {
  readonly size: number;
  chunks(): Iterable<Uint8Array>;
}

/** An entry whose file bytes are read as they are written (see FileContent). */
export type TarStreamEntry =
  | Exclude<TarEntry, { readonly type: "file" }>
  | { readonly type: "file"; readonly path: string; readonly mode: number; readonly content: FileContent };

/** Bytes already in memory as a FileContent. */
export function bytesContent(data: Uint8Array): FileContent {
  return { size: data.length, chunks: () => [data] };
}

/** An in-memory entry as a stream entry. */
export function streamEntry(e: TarEntry): TarStreamEntry {
  return e.type === "file" ? { type: "file", path: e.path, mode: e.mode, content: bytesContent(e.data) } : e;
}

const BLOCK = 512;

function octal(buf: Buffer, off: number, width: number, value: number): void {
  const s = value.toString(8).padStart(width - 1, "0");
  if (s.length > width - 1)
    throw new CairnError("LIMIT_EXCEEDED", `tar field value ${value} does not fit ${width} bytes`, { hint: "a layer file is larger than 8 GiB" });
  buf.write(s, off, width - 1, "ascii");
  buf[off + width - 1] = 0;
}

/** Splits a name into ustar prefix/name, or returns undefined when it needs PAX. */
function splitUstar(name: Buffer): [Buffer, Buffer] | undefined {
  if (name.length <= 100) return [Buffer.alloc(0), name];
  for (let i = name.length - 1; i > 0; i--) {
    if (name[i] === 0x2f && i <= 155 && name.length - i - 1 <= 100 && name.length - i - 1 > 0) {
      return [name.subarray(0, i), name.subarray(i + 1)];
    }
  }
  return undefined;
}

function header(name: Buffer, prefix: Buffer, mode: number, size: number, type: string, link: Buffer): Buffer {
  const h = Buffer.alloc(BLOCK);
  name.copy(h, 0, 0, Math.min(100, name.length));
  octal(h, 100, 8, mode);
  octal(h, 108, 8, 0); // uid
  octal(h, 116, 8, 0); // gid
  octal(h, 124, 12, size);
  octal(h, 136, 12, 0); // mtime: fixed policy, the epoch
  h.fill(0x20, 148, 156); // checksum placeholder
  h.write(type, 156, 1, "ascii");
  link.copy(h, 157, 0, Math.min(100, link.length));
  h.write("ustar\0", 257, 6, "ascii");
  h.write("00", 263, 2, "ascii");
  // uname, gname stay empty; devmajor/devminor stay zero-filled
  octal(h, 329, 8, 0);
  octal(h, 337, 8, 0);
  prefix.copy(h, 345, 0, Math.min(155, prefix.length));
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "ascii");
  return h;
}

function pad(n: number): Buffer {
  const r = n % BLOCK;
  return Buffer.alloc(r === 0 ? 0 : BLOCK - r);
}

function paxRecord(key: string, value: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(` ${key}=`), value, Buffer.from("\n")]);
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return Buffer.concat([Buffer.from(String(len)), body]);
}

/**
 * Serializes entries in the order given (the caller sorts them) and ends the
 * archive with two zero blocks, one header, record or file chunk at a time.
 */
export function* tarChunks(entries: Iterable<TarStreamEntry>): Generator<Buffer> {
  for (const e of entries) {
    const nameBuf = Buffer.from(e.type === "dir" ? `${e.path}/` : e.path, "utf8");
    const link = Buffer.from(e.type === "symlink" ? e.target : "", "utf8");
    const split = splitUstar(nameBuf);
    const records: Buffer[] = [];
    if (split === undefined) records.push(paxRecord("path", nameBuf));
    if (link.length > 100) records.push(paxRecord("linkpath", link));
    if (records.length > 0) {
      const pax = Buffer.concat(records);
      yield Buffer.concat([header(Buffer.from("PaxHeader"), Buffer.alloc(0), 0o644, pax.length, "x", Buffer.alloc(0)), pax, pad(pax.length)]);
    }
    const [prefix, name] = split ?? [Buffer.alloc(0), nameBuf.subarray(0, 100)];
    if (e.type === "dir") yield header(name, prefix, e.mode, 0, "5", Buffer.alloc(0));
    else if (e.type === "symlink") yield header(name, prefix, 0o777, 0, "2", link.length > 100 ? Buffer.alloc(0) : link);
    else {
      const size = e.content.size;
      yield header(name, prefix, e.mode, size, "0", Buffer.alloc(0));
      let written = 0;
      for (const chunk of e.content.chunks()) {
        written += chunk.length;
        if (written > size) break;
        yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
      }
      // The header promised `size` bytes: a file that grew or shrank since it was measured would misframe every member after it.
      if (written !== size)
        throw new CairnError(
          "SOURCE_CHANGED",
          `${e.path} changed while it was written: ${size} bytes were promised, ${written > size ? "more" : written} came`,
          {
            path: e.path,
            hint: "read a directory nothing else is writing to",
          },
        );
      const p = pad(size);
      if (p.length > 0) yield p;
    }
  }
  yield Buffer.alloc(BLOCK * 2);
}

/** The whole archive in memory (small layers, tests); the same bytes as `tarChunks`. */
export function writeTar(entries: readonly TarEntry[]): Buffer {
  return Buffer.concat([...tarChunks(entries.map(streamEntry))]);
}
