/**
 * The tar gate: a strict, streaming reader of raw tar header blocks that sits
 * in front of `tar-stream`.
 *
 * `tar-stream` frames members and streams their data, but it is lenient in
 * exactly the places a hostile layer aims at: it decodes names lossily
 * (invalid UTF-8 becomes U+FFFD), drops NUL-truncated tails, merges global
 * pax headers silently, ignores pax keys it does not know (xattrs, sparse
 * maps, atime), parses numbers with `parseInt`, and reads on past the
 * end-of-archive marker. The gate sees every byte first and decides:
 *
 *   - each header's checksum, magic and numeric fields are parsed strictly;
 *   - names and link names are kept as raw bytes and must be valid UTF-8
 *     with no NUL;
 *   - every pax record is parsed strictly and only known keys pass
 *     (ACLs → TAR_XATTR, sparse → TAR_SPARSE, atime/ctime and
 *     sub-second mtimes → TAR_TIMESTAMP, anything else → TAR_PAX);
 *     extended attributes are recorded by name on the member, for layer
 *     application to refuse or drop by policy;
 *   - global pax headers, GNU sparse and every type but file, directory,
 *     symlink, hard link, device and FIFO are refused before tar-stream
 *     sees them (devices and FIFOs are refused or skipped by policy later);
 *   - at the first zero block the archive ends: only zero bytes may follow
 *     (TAR_TRAILING), and nothing after it is forwarded.
 *
 * It also hashes every uncompressed byte (the DiffID) and enforces the
 * expanded-bytes, entries, extended-header and file-size limits as bytes
 * arrive, so a zip bomb stops at the limit. The member records it emits are
 * the single source of member metadata; tar-stream's view is only
 * cross-checked against them (see layer-reader.ts).
 */
import { CairnError, Sha256Hasher, type Sha256Digest } from "../core/index.ts";
import { enforceLimit, type LayerLimits } from "./layer-limits.ts";
import { KNOWN_PAX, parsePax, paxInt, paxKeyRefusal, xattrName } from "./pax.ts";
import { cstr, GNU_MAGIC, isZero, matches, MEMBER_TYPES, numeric, refuse, text, USTAR_MAGIC, type MemberType } from "./tar-fields.ts";

export type { MemberType } from "./tar-fields.ts";

/** One tar member as the gate parsed it (extended headers already applied). */
export interface GateRecord {
  /** Ordinal among real members of this layer (extended headers not counted). */
  readonly ordinal: number;
  readonly name: string;
  readonly type: MemberType;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly mtime: number;
  readonly size: number;
  readonly linkname: string | undefined;
  /** Device numbers of a character or block device member. */
  readonly device?: { readonly major: number; readonly minor: number };
  /**
   * Names of the member's extended attributes (pax `SCHILY.xattr.*`,
   * `LIBARCHIVE.xattr.*`, `RHT.security.*`), in header order; layer
   * application refuses or drops them by policy (`xattrs`). ACLs never get here.
   */
  readonly xattrs?: readonly string[];
  /** Check mode only: this member's pax refusals, in header order (see TarGate's constructor). */
  readonly issues?: readonly CairnError[];
}

const BLOCK = 512;

/** Running totals shared by all layers of one assembly. */
export interface GateBudget {
  expandedBytes: number;
  entries: number;
}

type State = "header" | "data" | "ext" | "eof1" | "end";

/**
 * Feed uncompressed bytes with `push`; it returns the slices to forward to
 * tar-stream and queues one `GateRecord` per real member. Call `end()` after
 * the last chunk, then `diffId()`.
 */
export class TarGate {
  readonly records: GateRecord[] = [];
  readonly #hasher = new Sha256Hasher();
  readonly #limits: LayerLimits;
  readonly #budget: GateBudget;
  readonly #where: string;
  #state: State = "header";
  #hdr = Buffer.alloc(BLOCK);
  #hdrFill = 0;
  #need = 0; // data or padding bytes still to pass (state "data"), or ext body bytes to collect (state "ext")
  #ext: { type: string; body: Buffer; fill: number; padded: number } | undefined;
  #pax: Map<string, Uint8Array> | undefined;
  #gnuName: Uint8Array | undefined;
  #gnuLink: Uint8Array | undefined;
  #ordinal = 0;
  #offset = 0;

  readonly #collect: boolean;
  #issues: CairnError[] | undefined;

  /**
   * `collect` (`cairn workload check`): a refusal that concerns one member's
   * pax keys alone (sparse, timestamps, ACLs, unknown keys) is recorded on
   * the member's record (`issues`, so it is met in archive order) and the
   * member is read on as if the key were absent; refusals of the stream's
   * framing always throw.
   */
  constructor(limits: LayerLimits, budget: GateBudget, where: string, collect = false) {
    this.#limits = limits;
    this.#budget = budget;
    this.#where = where;
    this.#collect = collect;
  }

  #memberIssue(e: CairnError): void {
    if (!this.#collect) throw e;
    (this.#issues ??= []).push(e);
  }

  /** Where in the layer we are, for messages: "<layer path>@<byte offset>". */
  #at(): string {
    return `${this.#where}@${this.#offset}`;
  }

  push(chunk: Buffer): Buffer[] {
    this.#budget.expandedBytes += chunk.length;
    enforceLimit(this.#limits, "expandedBytes", this.#budget.expandedBytes, this.#where);
    this.#hasher.update(chunk);
    // What is forwarded: every accepted byte up to the first zero block, as
    // few, large slices of `chunk` as possible (tar-stream's cost is per
    // write). A header split across chunks is held back and forwarded as one
    // copy once complete and accepted; nothing from the end-of-archive
    // marker on is forwarded.
    const forward: Buffer[] = [];
    let run = this.#state === "eof1" || this.#state === "end" ? -1 : 0; // start of the unforwarded run, -1 when not forwarding
    const flush = (to: number): void => {
      if (run >= 0 && to > run) forward.push(chunk.subarray(run, to));
    };
    let pos = 0;
    while (pos < chunk.length) {
      switch (this.#state) {
        case "data": {
          const n = Math.min(this.#need, chunk.length - pos);
          pos += n;
          this.#need -= n;
          this.#offset += n;
          if (this.#need === 0) this.#state = "header";
          break;
        }
        case "ext": {
          const ext = this.#ext!;
          const n = Math.min(this.#need, chunk.length - pos);
          const take = Math.max(0, Math.min(n, ext.body.length - ext.fill));
          chunk.copy(ext.body, ext.fill, pos, pos + take);
          ext.fill += take;
          pos += n;
          this.#need -= n;
          this.#offset += n;
          if (this.#need === 0) {
            this.#state = "header";
            this.#finishExt(ext);
          }
          break;
        }
        case "header":
        case "eof1": {
          let block: Buffer;
          const start = pos;
          const split = this.#hdrFill > 0;
          if (!split && chunk.length - pos >= BLOCK) {
            block = chunk.subarray(pos, pos + BLOCK);
            pos += BLOCK;
          } else {
            if (!split) {
              flush(pos); // hold the partial header back
              run = -1;
            }
            const n = Math.min(BLOCK - this.#hdrFill, chunk.length - pos);
            chunk.copy(this.#hdr, this.#hdrFill, pos, pos + n);
            this.#hdrFill += n;
            pos += n;
            if (this.#hdrFill < BLOCK) break;
            this.#hdrFill = 0;
            block = this.#hdr;
          }
          if (this.#state === "eof1") {
            if (!isZero(block))
              throw refuse(
                "TAR_TRAILING",
                "data after the end-of-archive zero block",
                this.#at(),
                "the archive has members after its end marker; rebuild the layer",
              );
            this.#offset += BLOCK;
            this.#state = "end";
            break;
          }
          if (isZero(block)) {
            if (this.#ext !== undefined || this.#pax !== undefined || this.#gnuName !== undefined || this.#gnuLink !== undefined) {
              throw refuse("TAR_INVALID", "extended header without a member", this.#at());
            }
            if (!split) flush(start);
            run = -1;
            this.#offset += BLOCK;
            this.#state = "eof1";
            break;
          }
          this.#header(block);
          this.#offset += BLOCK;
          if (split) {
            forward.push(Buffer.from(block));
            run = pos;
          }
          break;
        }
        case "end": {
          const rest = chunk.subarray(pos);
          if (!isZero(rest))
            throw refuse(
              "TAR_TRAILING",
              "non-zero bytes after the end-of-archive marker",
              this.#at(),
              "the archive has data after its end marker; rebuild the layer",
            );
          this.#offset += rest.length;
          pos = chunk.length;
          break;
        }
      }
    }
    if (this.#hdrFill === 0) flush(chunk.length);
    return forward;
  }

  /** Checks that the stream ended at a complete end-of-archive marker. */
  end(): void {
    if (this.#state !== "end" || this.#hdrFill !== 0) {
      throw refuse(
        "TAR_INVALID",
        this.#state === "eof1" ? "the end-of-archive marker has one zero block, not two" : "the tar stream ends without an end-of-archive marker (truncated)",
        this.#at(),
      );
    }
  }

  diffId(): Sha256Digest {
    return this.#hasher.digest();
  }

  #header(h: Buffer): void {
    const at = this.#at();
    this.#budget.entries++;
    enforceLimit(this.#limits, "entries", this.#budget.entries, at);
    const stored = numeric(h, 148, 8, "checksum", at);
    let sum = 8 * 0x20;
    for (let i = 0; i < BLOCK; i++) if (i < 148 || i >= 156) sum += h[i]!;
    if (stored !== sum) throw refuse("TAR_INVALID", "header checksum mismatch", at, "the layer is corrupt or not a tar stream");
    const gnu = matches(h, 257, GNU_MAGIC);
    if (!gnu && !matches(h, 257, USTAR_MAGIC))
      throw refuse("TAR_INVALID", "header is neither ustar/pax nor GNU format", at, "pre-POSIX (v7) tar headers are not accepted");
    const flag = String.fromCharCode(h[156]!);
    const size = numeric(h, 124, 12, "size", at);
    if (flag === "x" || flag === "L" || flag === "K") {
      if (
        this.#ext !== undefined ||
        (flag === "x" && this.#pax !== undefined) ||
        (flag === "L" && this.#gnuName !== undefined) ||
        (flag === "K" && this.#gnuLink !== undefined)
      ) {
        throw refuse("TAR_PAX", "two extended headers of one kind for one member", at);
      }
      enforceLimit(this.#limits, "extendedHeaderBytes", size, at);
      const padded = Math.ceil(size / BLOCK) * BLOCK;
      this.#ext = { type: flag, body: Buffer.alloc(size), fill: 0, padded };
      this.#need = padded;
      this.#state = padded === 0 ? "header" : "ext";
      if (padded === 0) this.#finishExt(this.#ext);
      return;
    }
    if (flag === "g")
      throw refuse("TAR_PAX", "global pax header", at, "global pax headers change every later member invisibly; rebuild the layer without them");
    if (flag === "S") throw refuse("TAR_SPARSE", "GNU sparse member", at, "sparse files are refused; rebuild the layer without --sparse");
    const type: MemberType | undefined = MEMBER_TYPES[flag];
    const pax = this.#pax;
    this.#pax = undefined;
    let nameBytes: Uint8Array = cstr(h, 0, 100);
    if (!gnu) {
      const prefix = cstr(h, 345, 155);
      if (prefix.length > 0) nameBytes = Buffer.concat([prefix, Buffer.from("/"), nameBytes]);
    } else {
      // GNU headers keep atime and ctime at 345 and 357; cairn records mtime only.
      if (numeric(h, 345, 12, "atime", at) !== 0 || numeric(h, 357, 12, "ctime", at) !== 0) {
        throw refuse("TAR_TIMESTAMP", "extended timestamp (GNU atime/ctime)", at, "cairn keeps whole-second mtimes only");
      }
    }
    if (this.#gnuName !== undefined) nameBytes = this.#gnuName;
    this.#gnuName = undefined;
    let linkBytes: Uint8Array | undefined = h[157] === 0 ? undefined : cstr(h, 157, 100);
    if (this.#gnuLink !== undefined) linkBytes = this.#gnuLink;
    this.#gnuLink = undefined;
    // the member's own name first, so a refusal of its type or of a pax key names it (issue 9: "/layers/0@2048" alone sent people to a hex dump)
    const paxPath = pax?.get("path");
    if (paxPath !== undefined) nameBytes = paxPath;
    const name = text(nameBytes, "member name", at);
    const member = `${this.#where}:${name.slice(0, 200)}`;
    if (type === undefined) {
      throw refuse(
        "TAR_UNSUPPORTED_TYPE",
        `member ${name.slice(0, 200)} of type ${JSON.stringify(flag)} (${at})`,
        member,
        "cairn trees hold directories, regular files and symlinks only (devices and FIFOs can be skipped by the policy devices: skip)",
      );
    }
    let rec = {
      ordinal: this.#ordinal++,
      name,
      type,
      mode: numeric(h, 100, 8, "mode", at) & 0o7777,
      uid: numeric(h, 108, 8, "uid", at),
      gid: numeric(h, 116, 8, "gid", at),
      mtime: numeric(h, 136, 12, "mtime", at),
      size,
      linkname: undefined as string | undefined,
      device: undefined as { major: number; minor: number } | undefined,
      xattrs: undefined as string[] | undefined,
    };
    if (type === "chardev" || type === "blockdev") rec.device = { major: numeric(h, 329, 8, "devmajor", at), minor: numeric(h, 337, 8, "devminor", at) };
    if (pax !== undefined) {
      for (const [key, v] of pax) {
        const xattr = xattrName(key);
        if (xattr !== undefined) (rec.xattrs ??= []).push(xattr);
        else if (!KNOWN_PAX.has(key)) this.#memberIssue(paxKeyRefusal(key, member));
        else if (key === "linkpath") linkBytes = v;
        else if (key === "size") rec.size = paxInt(v, key, at);
        else if (key === "uid" || key === "gid" || key === "mtime") {
          try {
            rec = { ...rec, [key]: paxInt(v, key, at) };
          } catch (e) {
            // only a member's own value is wrong here; its framing (size) is not
            if (!(e instanceof CairnError)) throw e;
            this.#memberIssue(e);
          }
        }
      }
    }
    if (linkBytes !== undefined) rec.linkname = text(linkBytes, "link name", member);
    if (rec.name.length === 0) throw refuse("TAR_UNSAFE_PATH", "empty member name", at);
    if (type === "file" && rec.name.endsWith("/")) throw refuse("TAR_INVALID", "regular-file member whose name ends in /", member);
    if (type !== "file" && rec.size !== 0) throw refuse("TAR_INVALID", `${type} member with a data size`, member);
    if ((type === "symlink" || type === "hardlink") && (rec.linkname === undefined || rec.linkname.length === 0))
      throw refuse("TAR_INVALID", `${type} member without a target`, member);
    if (type === "file") enforceLimit(this.#limits, "fileSize", rec.size, member);
    const { device, xattrs, ...plain } = rec;
    const issues = this.#issues;
    this.#issues = undefined;
    this.records.push(
      Object.freeze(
        device === undefined && xattrs === undefined && issues === undefined
          ? plain
          : { ...plain, ...(device ? { device } : {}), ...(xattrs ? { xattrs: Object.freeze(xattrs) } : {}), ...(issues ? { issues } : {}) },
      ),
    );
    const padded = Math.ceil(rec.size / BLOCK) * BLOCK;
    this.#need = padded;
    this.#state = padded === 0 ? "header" : "data";
  }

  #finishExt(ext: { type: string; body: Buffer }): void {
    this.#ext = undefined;
    const at = this.#at();
    if (ext.type === "x") this.#pax = parsePax(ext.body, at);
    else {
      // GNU long names end with one or more NULs; a NUL before the end would truncate the name in other readers.
      let end = ext.body.length;
      while (end > 0 && ext.body[end - 1] === 0) end--;
      const bytes = ext.body.subarray(0, end);
      if (bytes.includes(0)) throw refuse("TAR_UNSAFE_PATH", "GNU long name contains NUL", at);
      if (ext.type === "L") this.#gnuName = bytes;
      else this.#gnuLink = bytes;
    }
  }
}
