/**
 * A deterministic cpio `newc` writer (the format the Linux kernel unpacks as
 * an initramfs). No `cpio` process and nothing from the host enters an
 * entry: inode numbers are assigned 1, 2, 3... in write order, every header
 * field comes from the caller, names are written as given, data and names
 * are padded to 4 bytes with zeros, and the archive ends with the
 * `TRAILER!!!` entry padded to a 512-byte boundary. Same entries in the same
 * order → same bytes, on any host. A regular file's data may be streamed
 * (`addStreamed`): its header's size is then enforced on what arrives.
 */
import { CairnError, compareBytes } from "../core/index.ts";

export const S_IFDIR = 0o040000;
export const S_IFREG = 0o100000;
export const S_IFLNK = 0o120000;
export const S_IFCHR = 0o020000;

export interface CpioEntry {
  /** Archive name without a leading slash ("init", "cairn/template/usr"). */
  readonly name: string;
  /** Full st_mode: file type bits | permission bits. */
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly mtime: number;
  /** File bytes, or a symlink's target bytes; empty for directories and devices. */
  readonly data?: Uint8Array;
  /** Device numbers for character devices. */
  readonly rdevMajor?: number;
  readonly rdevMinor?: number;
}

/** Receives archive bytes in order; a chunk's buffer may be reused once `write` returns, so a sink copies what it keeps. */
export interface ByteSink {
  write(chunk: Uint8Array): void;
}

const U32_MAX = 0xffffffff;

function hex8(value: number, field: string, name: string): string {
  if (!Number.isSafeInteger(value) || value < 0 || value > U32_MAX) {
    throw new CairnError("RUN_INVALID", `cpio field ${field} of "${name}" does not fit newc's 32-bit field`, {
      path: name,
      hint: "newc stores 32-bit unsigned values; mtimes before 1970 or after 2106 and ids above 2^32-1 cannot be represented",
    });
  }
  return value.toString(16).padStart(8, "0");
}

const ZEROS = new Uint8Array(512);

function pad4(n: number): number {
  return (4 - (n % 4)) % 4;
}

export class CpioWriter {
  private ino = 0;
  private offset = 0;
  /** Every name written before `beginOrdered`, to refuse a second entry of one name. */
  private readonly names = new Set<string>();
  /** After `beginOrdered`: the names' required prefix and the last name, each next one above it in byte order. */
  private ordered: { readonly prefix: string; last: string | undefined } | undefined;

  constructor(private readonly sink: ByteSink) {}

  /** Bytes written so far. */
  get size(): number {
    return this.offset;
  }

  private emit(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.sink.write(chunk);
    this.offset += chunk.length;
  }

  private header(e: CpioEntry, ino: number, nlink: number, fileSize: number): void {
    const nameBytes = Buffer.from(`${e.name}\0`, "utf8");
    const fields = [
      hex8(ino, "ino", e.name),
      hex8(e.mode, "mode", e.name),
      hex8(e.uid, "uid", e.name),
      hex8(e.gid, "gid", e.name),
      hex8(nlink, "nlink", e.name),
      hex8(e.mtime, "mtime", e.name),
      hex8(fileSize, "filesize", e.name),
      "00000000", // devmajor
      "00000000", // devminor
      hex8(e.rdevMajor ?? 0, "rdevmajor", e.name),
      hex8(e.rdevMinor ?? 0, "rdevminor", e.name),
      hex8(nameBytes.length, "namesize", e.name),
      "00000000", // check (unused by newc)
    ];
    this.emit(Buffer.from(`070701${fields.join("")}`, "ascii"));
    this.emit(nameBytes);
    this.emit(ZEROS.subarray(0, pad4(110 + nameBytes.length)));
  }

  add(e: CpioEntry): void {
    const data = e.data ?? new Uint8Array(0);
    this.begin(e, data.length);
    this.emit(data);
    this.emit(ZEROS.subarray(0, pad4(data.length)));
  }

  /**
   * A regular file of `size` bytes whose data `fill` emits in order (a large
   * file is never held whole): refused unless exactly `size` bytes came.
   */
  async addStreamed(e: Omit<CpioEntry, "data">, size: number, fill: (emit: (chunk: Uint8Array) => void) => Promise<void>): Promise<void> {
    if ((e.mode & 0o170000) !== S_IFREG) throw new CairnError("RUN_INVALID", `cpio entry "${e.name}" streamed is not a regular file`, { path: e.name });
    this.begin(e, size);
    const start = this.offset;
    await fill((chunk) => this.emit(chunk));
    if (this.offset - start !== size)
      throw new CairnError("SIZE_MISMATCH", `cpio entry "${e.name}" got ${this.offset - start} bytes, its header says ${size}`, { path: e.name });
    this.emit(ZEROS.subarray(0, pad4(size)));
  }

  /**
   * From here on every name must begin with `prefix` and come after the
   * previous one in byte order, so no name is written twice without the
   * writer keeping them (a tree of 200,000 entries would otherwise keep
   * 200,000 names, some 20 MB): the guest image's tree, walked in its own
   * order. No name written before may begin with `prefix`.
   */
  beginOrdered(prefix: string): void {
    if (prefix.length === 0) throw new CairnError("RUN_INVALID", "an ordered run of cpio names needs a prefix", { path: prefix });
    for (const n of this.names) {
      if (n.startsWith(prefix)) throw new CairnError("RUN_INVALID", `cpio entry "${n}" was written before the ordered names under ${prefix}`, { path: n });
    }
    this.ordered = { prefix, last: undefined };
  }

  /** Refuses a name written twice (or, in an ordered run, out of order or outside its prefix), and records it. */
  private claim(name: string): void {
    const run = this.ordered;
    if (run === undefined) {
      if (this.names.has(name)) throw new CairnError("RUN_INVALID", `cpio entry "${name}" written twice`, { path: name });
      this.names.add(name);
      return;
    }
    if (!name.startsWith(run.prefix))
      throw new CairnError("RUN_INVALID", `cpio entry "${name}" is outside the ordered names under ${run.prefix}`, { path: name });
    if (run.last !== undefined && compareBytes(run.last, name) >= 0) {
      throw new CairnError("RUN_INVALID", `cpio entry "${name}" written twice or out of byte order (after "${run.last}")`, { path: name });
    }
    run.last = name;
  }

  /** Checks the entry and writes its header for `size` bytes of data. */
  private begin(e: CpioEntry, size: number): void {
    if (e.name.length === 0 || e.name.startsWith("/") || e.name.includes("\0") || e.name === "TRAILER!!!") {
      throw new CairnError("PATH_UNSAFE", `cpio entry name ${JSON.stringify(e.name)} is not allowed`, { path: e.name });
    }
    this.claim(e.name);
    const type = e.mode & 0o170000;
    if (type !== S_IFREG && type !== S_IFLNK && size > 0) {
      throw new CairnError("RUN_INVALID", `cpio entry "${e.name}" of this type cannot carry data`, { path: e.name });
    }
    this.header(e, ++this.ino, type === S_IFDIR ? 2 : 1, size);
  }

  /** Writes the trailer and pads the archive to a 512-byte boundary. */
  finish(): void {
    this.header({ name: "TRAILER!!!", mode: 0, uid: 0, gid: 0, mtime: 0 }, 0, 1, 0);
    this.emit(ZEROS.subarray(0, (512 - (this.offset % 512)) % 512));
  }
}
