/**
 * The tar gate: cairn's one tar reader, strict and streaming. It frames the
 * members itself and hands each member's bytes to the caller as they arrive.
 *
 * Lenient tar readers are lenient exactly where a hostile layer aims: they
 * decode names lossily (invalid UTF-8 becomes U+FFFD), drop NUL-truncated
 * tails, merge global pax headers silently, ignore pax keys they do not know
 * (xattrs, sparse maps, atime), parse numbers with `parseInt`, and read on
 * past the end-of-archive marker (tar-stream, which cairn ran beside the gate
 * until issue 15, does all of these). The gate decides every byte:
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
 *     symlink, hard link, device and FIFO are refused (devices and FIFOs are
 *     refused or skipped by policy later);
 *   - a member's data is exactly the header's size, then padding to the next
 *     512-byte block; a stream that ends inside a member or before the
 *     end-of-archive marker is refused (truncated);
 *   - at the first zero block the archive ends: only zero bytes may follow
 *     (TAR_TRAILING), and nothing after it is read as a member.
 *
 * It also hashes every uncompressed byte (the DiffID) and enforces the
 * expanded-bytes, entries, extended-header and file-size limits as bytes
 * arrive, so a zip bomb stops at the limit. The member records it emits are
 * the only source of member metadata. tests/tree/gate-differential.test.ts
 * checks its framing against tar-stream and GNU tar on archives both accept.
 */
import { CairnError, Sha256Hasher, type Sha256Digest } from "../core/index.ts";
import { enforceLimit, type LayerLimits } from "./layer-limits.ts";
import { KNOWN_PAX, parsePax, paxInt, paxKeyRefusal, xattrName } from "./pax.ts";
import { cstr, GNU_MAGIC, headerName, isZero, matches, MEMBER_TYPES, numeric, refuse, text, USTAR_MAGIC, type MemberType } from "./tar-fields.ts";

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

type State = "header" | "data" | "pad" | "ext" | "eof1" | "end";

/** Where one regular member's bytes go as they are read: `write` per chunk, `end` once all `size` bytes arrived. */
export interface MemberBody {
  readonly write: (chunk: Buffer) => void;
  readonly end: () => void;
}

/**
 * Called once per real member, in archive order, when its header (extended
 * headers applied) has been accepted. For a regular file it may return the
 * body that receives the member's bytes; the chunks are subarrays of what was
 * pushed, valid only during the call (copy what you keep). A body returned
 * for any other type is ended at once.
 */
export type OnMember = (rec: GateRecord) => MemberBody | undefined;

/**
 * Feed uncompressed bytes with `push`; each accepted member reaches
 * `onMember`, and a regular file's bytes its body. Call `end()` after the last
 * chunk, then `diffId()`. Anything `onMember` or a body throws leaves `push`
 * as the refusal.
 */
export class TarGate {
  readonly #onMember: OnMember;
  #body: MemberBody | undefined;
  #dataLeft = 0; // data bytes of the current member still to come (state "data")
  readonly #hasher = new Sha256Hasher();
  readonly #limits: LayerLimits;
  readonly #budget: GateBudget;
  readonly #where: string;
  #state: State = "header";
  #hdr = Buffer.alloc(BLOCK);
  #hdrFill = 0;
  #need = 0; // padding bytes still to skip (state "pad"), or ext body bytes to collect (state "ext")
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
  constructor(limits: LayerLimits, budget: GateBudget, where: string, onMember: OnMember, collect = false) {
    this.#onMember = onMember;
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

  push(chunk: Buffer): void {
    this.#budget.expandedBytes += chunk.length;
    enforceLimit(this.#limits, "expandedBytes", this.#budget.expandedBytes, this.#where);
    this.#hasher.update(chunk);
    let pos = 0;
    while (pos < chunk.length) {
      switch (this.#state) {
        case "data": {
          const n = Math.min(this.#dataLeft, chunk.length - pos);
          this.#body?.write(chunk.subarray(pos, pos + n));
          pos += n;
          this.#dataLeft -= n;
          this.#offset += n;
          if (this.#dataLeft === 0) this.#endMember();
          break;
        }
        case "pad": {
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
          // A header split across chunks is gathered in #hdr; a whole one is read in place.
          let block: Buffer;
          if (this.#hdrFill === 0 && chunk.length - pos >= BLOCK) {
            block = chunk.subarray(pos, pos + BLOCK);
            pos += BLOCK;
          } else {
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
            this.#offset += BLOCK;
            this.#state = "eof1";
            break;
          }
          this.#header(block);
          this.#offset += BLOCK;
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
  }

  /** The current member's data is complete: end its body, then skip its padding. */
  #endMember(): void {
    const body = this.#body;
    this.#body = undefined;
    this.#state = this.#need === 0 ? "header" : "pad";
    body?.end();
  }

  /** Checks that the stream ended at a complete end-of-archive marker. */
  end(): void {
    if (this.#state !== "end" || this.#hdrFill !== 0) {
      throw refuse(
        "TAR_INVALID",
        this.#state === "eof1"
          ? "the end-of-archive marker has one zero block, not two"
          : this.#state === "data"
            ? "the tar stream ends inside a member's data (truncated)"
            : "the tar stream ends without an end-of-archive marker (truncated)",
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
    let sum = 8 * 0x20; // the checksum field itself counts as eight spaces
    for (let i = 0; i < 148; i++) sum += h[i]!;
    for (let i = 156; i < BLOCK; i++) sum += h[i]!;
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
    // GNU headers keep atime and ctime at 345 and 357, where ustar keeps the name's prefix; cairn records mtime only.
    if (gnu && (numeric(h, 345, 12, "atime", at) !== 0 || numeric(h, 357, 12, "ctime", at) !== 0)) {
      throw refuse("TAR_TIMESTAMP", "extended timestamp (GNU atime/ctime)", at, "cairn keeps whole-second mtimes only");
    }
    // the name is the pax path, else the GNU long name, else the header's (prefix/name)
    let nameBytes: Uint8Array | undefined = this.#gnuName;
    this.#gnuName = undefined;
    let linkBytes: Uint8Array | undefined = h[157] === 0 ? undefined : cstr(h, 157, 100);
    if (this.#gnuLink !== undefined) linkBytes = this.#gnuLink;
    this.#gnuLink = undefined;
    // the member's own name first, so a refusal of its type or of a pax key names it (issue 9: "/layers/0@2048" alone sent people to a hex dump)
    const paxPath = pax?.get("path");
    if (paxPath !== undefined) nameBytes = paxPath;
    const name = nameBytes !== undefined ? text(nameBytes, "member name", at) : headerName(h, gnu, at);
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
    const { device, xattrs } = rec;
    const issues = this.#issues;
    this.#issues = undefined;
    // Built field by field (no rest or spread): this runs once per member.
    const plain: GateRecord = {
      ordinal: rec.ordinal,
      name: rec.name,
      type,
      mode: rec.mode,
      uid: rec.uid,
      gid: rec.gid,
      mtime: rec.mtime,
      size: rec.size,
      linkname: rec.linkname,
    };
    const record: GateRecord = Object.freeze(
      device === undefined && xattrs === undefined && issues === undefined
        ? plain
        : { ...plain, ...(device ? { device } : {}), ...(xattrs ? { xattrs: Object.freeze(xattrs) } : {}), ...(issues ? { issues } : {}) },
    );
    this.#dataLeft = rec.size;
    this.#need = Math.ceil(rec.size / BLOCK) * BLOCK - rec.size;
    this.#state = "data";
    this.#body = this.#onMember(record);
    if (type !== "file" || rec.size === 0) this.#endMember();
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
