/**
 * The derived entry `cairn.derived/1`: the canonical tree of a workload,
 * stored in the content store under the sha256 of its JCS bytes. It names its
 * complete raw closure, the launch values and their digest, the policy with
 * its version, and the filesystem digest, so a reader holding only the entry
 * can tell what it was made from and check it.
 *
 * A full verify never parses a stored entry: `openVerifiedWorkload` rebuilds
 * the entry from the raw closure and requires the stored bytes to be
 * identical, then hands out the rebuilt values. Only under a verify memo
 * (an earlier full verify of the same lock by the same build, on this
 * machine) is the stored entry read back, strictly, in derived-read.ts,
 * and its fs, launch and workload identities recomputed from what was read.
 */
import {
  CairnError,
  canonicalize,
  declareIdentity,
  defineScope,
  identityBytes,
  jcsNumber,
  jcsPlain,
  jcsString,
  Sha256Hasher,
  type Sha256Digest,
} from "../core/index.ts";
import { rawModel, type RawRef } from "./closure.ts";
import type { SourceKind, WorkloadIdentities } from "./workload-identity.ts";
import { launchModel, type Launch } from "./launch.ts";
import { policyModel, sortedEntries, type CanonicalTree, type FsEntry, type LayerPolicy, type SortedEntries } from "../tree/index.ts";

export const DERIVED_SCHEMA = "cairn.derived/1";

/** The derived entry is stored under the sha256 of exactly these bytes (the store's content address). */
export const DERIVED_ENTRY_IDENTITY = declareIdentity({
  name: "derived entry",
  tag: DERIVED_SCHEMA,
  algorithm: "sha256",
  framing: "jcs-schema-field",
  role: "identity",
  definedIn: "src/workload/derived-entry.ts",
});

/** The entry is a complete record: everything in it is covered, so a reader holding only the entry can check it. */
export const DERIVED_ENTRY_SCOPE = defineScope({
  identity: DERIVED_SCHEMA,
  covers: {
    "/schema": "the entry format version",
    "/source_kind": "binary or oci",
    "/identities": "the workload, source, fs and launch identities",
    "/policy": "the layer policy with its version",
    "/launch": "the launch values the launch identity hashes",
    "/raw": "the complete raw closure the entry was derived from",
    "/tree": "every entry of the canonical tree, sorted by path bytes",
  },
  excludes: {},
});

export interface DerivedEntry {
  readonly kind: SourceKind;
  readonly identities: WorkloadIdentities;
  readonly policy: LayerPolicy;
  readonly launch: Launch;
  readonly raw: readonly RawRef[];
  readonly tree: CanonicalTree;
}

/** One tree entry's model in the derived entry. */
export function entryModel(e: FsEntry): Record<string, string | number> {
  const base = { path: e.path, type: e.type, mode: e.mode, uid: e.uid, gid: e.gid, mtime: e.mtime };
  if (e.type === "file") return { ...base, size: e.size, sha256: e.sha256 };
  if (e.type === "symlink") return { ...base, target: e.target };
  return base;
}

/**
 * Entry `i`'s JCS text, written directly (this runs once per entry of the
 * tree, twice per encoding): keys in JCS order (gid, mode, mtime, path,
 * sha256, size | target, type, uid), values through core's JCS number and
 * string encoders. Equal to canonicalize(entryModel(e)) (tests/workload/
 * derived-entry.test.ts checks every kind of entry); a value JCS refuses is
 * refused as canonicalize names it, at /tree/<i>/<key>.
 */
export function entryText(e: FsEntry, i: number): string {
  try {
    const head = `{"gid":${jcsNumber(e.gid, "")},"mode":${jcsNumber(e.mode, "")},"mtime":${jcsNumber(e.mtime, "")},"path":${jcsString(e.path, "")}`;
    const tail = `"type":${jcsString(e.type, "")},"uid":${jcsNumber(e.uid, "")}}`;
    if (e.type === "file") return `${head},"sha256":${jcsString(e.sha256, "")},"size":${jcsNumber(e.size, "")},${tail}`;
    if (e.type === "symlink") return `${head},"target":${jcsString(e.target, "")},${tail}`;
    return `${head},${tail}`;
  } catch (err) {
    if (!(err instanceof CairnError)) throw err;
    try {
      canonicalize(entryModel(e));
    } catch (named) {
      if (named instanceof CairnError) throw new CairnError(named.code, named.message, { path: `/tree/${i}${named.path ?? ""}`, cause: named });
    }
    throw err;
  }
}

/** The fixed pieces of an entry's text, in JCS key order, as bytes. */
const ascii = (text: string): Uint8Array => Uint8Array.from(text, (c) => c.charCodeAt(0));
const OPEN_GID = ascii('{"gid":');
const MODE = ascii(',"mode":');
const MTIME = ascii(',"mtime":');
const PATH = ascii(',"path":"');
const FILE_SHA256 = ascii('","sha256":"');
const FILE_SIZE = ascii('","size":');
const FILE_TYPE = ascii(',"type":"file","uid":');
const SYMLINK_TARGET = ascii('","target":"');
const SYMLINK_TYPE = ascii('","type":"symlink","uid":');
const DIR_TYPE = ascii('","type":"dir","uid":');
/** Bytes of an entry's text besides its strings, at most: the fixed pieces (76 for a file, the longest) and five numbers of up to 17 characters. */
const ENTRY_FIXED = 76 + 5 * 17;

function putBytes(buf: Buffer, at: number, bytes: Uint8Array): number {
  for (let k = 0; k < bytes.length; k++) buf[at + k] = bytes[k]!;
  return at + bytes.length;
}

/** A safe integer's JCS text (its decimal digits, "-" first when negative; -0 is "0"), written as bytes. */
function putInt(buf: Buffer, at: number, n: number): number {
  if (n < 0) {
    buf[at++] = 0x2d;
    n = -n;
  }
  let end = at + 1;
  for (let m = Math.floor(n / 10); m > 0; m = Math.floor(m / 10)) end++;
  for (let k = end - 1, m = n; k >= at; k--) {
    const q = Math.floor(m / 10);
    buf[k] = 0x30 + (m - q * 10);
    m = q;
  }
  return end;
}

/**
 * A plain string's UTF-8 bytes (its JCS text without the quotes), or -1 when
 * it is not plain (jcsPlain). An ASCII string, the common case, is told
 * plain by its written bytes (no quote, backslash or control byte; a string
 * whose UTF-8 is as long as it is has no surrogate) instead of a regex.
 */
function putPlain(buf: Buffer, at: number, s: string): number {
  const n = buf.write(s, at, "utf8");
  if (n === s.length) {
    for (let k = at; k < at + n; k++) {
      const b = buf[k]!;
      if (b < 0x20 || b === 0x22 || b === 0x5c) return -1;
    }
  } else if (!jcsPlain(s)) return -1;
  return at + n;
}

/**
 * Writes entry `e`'s text (the bytes of `entryText(e, i)`) into `buf` at
 * `at`, which has ENTRY_FIXED + 3 × (its strings' length) bytes free;
 * returns the offset after it, or -1 when a value is not in the common case
 * this writes directly (every number a safe integer, every string plain, a
 * known type): the caller then writes entryText, which also names a value JCS
 * refuses. It runs once per entry of every tree verified; building eight
 * strings per entry cost as much as hashing them.
 * tests/workload/derived-digest.test.ts holds the two equal on random entries.
 */
function writeEntry(buf: Buffer, at: number, e: FsEntry): number {
  if (!Number.isSafeInteger(e.gid) || !Number.isSafeInteger(e.mode) || !Number.isSafeInteger(e.mtime) || !Number.isSafeInteger(e.uid)) return -1;
  at = putInt(buf, putBytes(buf, at, OPEN_GID), e.gid);
  at = putInt(buf, putBytes(buf, at, MODE), e.mode);
  at = putInt(buf, putBytes(buf, at, MTIME), e.mtime);
  at = putPlain(buf, putBytes(buf, at, PATH), e.path);
  if (at < 0) return -1;
  if (e.type === "file") {
    if (!Number.isSafeInteger(e.size)) return -1;
    at = putPlain(buf, putBytes(buf, at, FILE_SHA256), e.sha256);
    if (at < 0) return -1;
    at = putBytes(buf, putInt(buf, putBytes(buf, at, FILE_SIZE), e.size), FILE_TYPE);
  } else if (e.type === "symlink") {
    at = putPlain(buf, putBytes(buf, at, SYMLINK_TARGET), e.target);
    if (at < 0) return -1;
    at = putBytes(buf, at, SYMLINK_TYPE);
  } else if (e.type === "dir") at = putBytes(buf, at, DIR_TYPE);
  else return -1;
  at = putInt(buf, at, e.uid);
  buf[at] = 0x7d; // "}"
  return at + 1;
}

/** `"tree"` sorts after every other key of the entry (JCS orders keys by UTF-16 units), so the document ends with it. */
const EMPTY_TREE_TAIL = Buffer.from('"tree":[]}');

/**
 * The entry's bytes up to and including `"tree":[`, and the tree's entries in
 * byte order (checked by sortedEntries, unless the caller checked them: the
 * same tree's `sortedEntries`, made in the same synchronous pass).
 */
function opening(d: DerivedEntry, checked?: SortedEntries): { open: Buffer; entries: readonly FsEntry[] } {
  const head = identityBytes(DERIVED_ENTRY_IDENTITY, {
    source_kind: d.kind,
    identities: { ...d.identities },
    policy: policyModel(d.policy),
    launch: launchModel(d.launch),
    raw: rawModel(d.raw),
    tree: [],
  });
  if (!head.subarray(head.length - EMPTY_TREE_TAIL.length).equals(EMPTY_TREE_TAIL)) throw new TypeError("derived entry: the tree is not the last key");
  return { open: head.subarray(0, head.length - 2), entries: checked ?? sortedEntries(d.tree) };
}

/**
 * The JCS bytes of a derived entry (deterministic: the same workload always
 * gives the same bytes). The tree is the bulk of it (one object per entry),
 * so it is never held as one model, nor as pieces to be joined: a first pass
 * sizes every entry's text, a second writes them into the one buffer of the
 * result. The result equals canonicalBytes of the whole model: a JCS array
 * is its items' JCS texts joined by commas, and "tree" is the last key.
 */
export function encodeDerived(d: DerivedEntry): Buffer {
  const { open, entries } = opening(d);
  let size = open.length + Math.max(0, entries.length - 1) + 2;
  for (let i = 0; i < entries.length; i++) size += Buffer.byteLength(entryText(entries[i]!, i), "utf8");
  const out = Buffer.allocUnsafe(size);
  open.copy(out, 0);
  let at = open.length;
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ","
    at += out.write(entryText(entries[i]!, i), at, "utf8");
  }
  at += out.write("]}", at, "latin1");
  if (at !== size) throw new TypeError(`derived entry: wrote ${at} bytes of ${size}`);
  return out;
}

const HASH_BUFFER = 64 * 1024;

/**
 * The sha256 and size of `encodeDerived(d)` without holding the entry
 * (verify compares only these with the lock, then the stored entry's own
 * sha256): one pass, each entry's text written once into a 64 KiB buffer
 * that is hashed whenever it fills, instead of two passes into a buffer of
 * the whole entry. The same texts in the same order as encodeDerived, so
 * the same bytes are hashed (tests/workload/derived-digest.test.ts). With
 * `write`, the same bytes are handed over in order as they are hashed (each
 * chunk valid until `write` returns): assembly stores the entry from them,
 * never holding it whole (some 35 MB for 200,000 entries).
 */
export function hashDerived(d: DerivedEntry, write?: (chunk: Uint8Array) => void, checked?: SortedEntries): { digest: Sha256Digest; size: number } {
  const { open, entries } = opening(d, checked);
  const h = new Sha256Hasher();
  h.update(open);
  write?.(open);
  let size = open.length;
  const buf = Buffer.allocUnsafe(HASH_BUFFER);
  let fill = 0;
  const flush = (): void => {
    h.update(buf.subarray(0, fill));
    write?.(buf.subarray(0, fill));
    size += fill;
    fill = 0;
  };
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    // the comma, then the entry written directly where it fits a buffer
    const bound = 1 + ENTRY_FIXED + 3 * (e.path.length + (e.type === "symlink" ? e.target.length : e.type === "file" ? e.sha256.length : 0));
    if (bound <= buf.length) {
      if (fill + bound > buf.length) flush();
      const end = writeEntry(buf, i > 0 ? fill + 1 : fill, e);
      if (end >= 0) {
        if (i > 0) buf[fill] = 0x2c; // ","
        fill = end;
        continue;
      }
    }
    const text = entryText(e, i);
    // at most 3 UTF-8 bytes per UTF-16 unit, and 1 for the comma
    if (fill + 3 * text.length + 1 > buf.length) flush();
    if (i > 0) buf[fill++] = 0x2c; // ","
    if (3 * text.length + 1 > buf.length) {
      flush();
      const bytes = Buffer.from(text, "utf8");
      h.update(bytes);
      write?.(bytes);
      size += bytes.length;
    } else fill += buf.write(text, fill, "utf8");
  }
  flush();
  h.update(EMPTY_TREE_TAIL.subarray(EMPTY_TREE_TAIL.length - 2)); // "]}"
  write?.(EMPTY_TREE_TAIL.subarray(EMPTY_TREE_TAIL.length - 2));
  return { digest: h.digest(), size: size + 2 };
}
