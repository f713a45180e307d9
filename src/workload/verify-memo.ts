/**
 * Verify memos `cairn.verify-memo/1`: what lets a second verify of the same
 * lock on the same machine skip re-deriving it, without trusting the store.
 *
 * A full verify re-reads the raw closure and re-derives every identity:
 * gunzip, the tar gate and layer application over every layer, several
 * times the cost of hashing the layers. What that derivation proves depends
 * only on the raw closure's bytes, the lock and the code that derived it.
 * So after a full verify succeeds, cairn writes a memo into the store,
 * named by the lock's `lock_digest`, saying: this lock was re-derived, by
 * this build, and its contents are in this pack. An assembly writes one too
 * (`derived_by: assemble`) when it wrote the pack itself: it derived the
 * lock from the same raw bytes it stored, by the same code; a pack it found
 * already present and kept unchecked gets no memo. The memo is authenticated
 * (HMAC-SHA256) by a key kept outside the store, in the user's own
 * directory (`keys/verify-memo.key`, 0600 in a 0700 directory): the store is
 * hostile input, and anyone who can write it can write a memo, but not one
 * that this key authenticates. A memo is honoured only when its MAC holds,
 * it names this exact lock, and its build is the running cairn's (a digest
 * of every file of the code that runs, so any change to cairn, released or
 * not, re-derives once). A verify that uses a memo still hashes every raw
 * object and the derived entry, and checks the pack's index, hashing the
 * pack's body again only when its file stat is not the memo's (every read
 * from the pack is checked anyway); what it does not repeat is the
 * derivation (see verified-workload.ts).
 *
 * What a memo does not protect against: someone who can read the key (the
 * same account, or root) can forge one; such a person can also replace
 * cairn itself. Copying a store to another machine carries no valid memo
 * there (another key), so the first verify there re-derives.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { closeSync, fstatSync, fsyncSync, linkSync, readdirSync, readSync, rmSync, writeSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import {
  CairnError,
  cairnDir,
  codeRoot,
  canonicalBytes,
  createExclusive,
  ioError,
  mkdirPrivate,
  openForRead,
  parseSha256,
  Sha256Hasher,
  type Sha256Digest,
} from "../core/index.ts";
import type { PackStat, Store } from "../store/index.ts";

export const VERIFY_MEMO_SCHEMA = "cairn.verify-memo/1";
export const VERIFY_KEY_FILE = "verify-memo.key";
const KEY_BYTES = 32;
const MEMO_MAX_BYTES = 4096;

export interface VerifyMemo {
  /** The pack verify found holding the tree's contents (OCI): its name, size, and file stat when it was checked. */
  readonly pack: { readonly digest: Sha256Digest; readonly size: number; readonly stat: PackStat };
  /** When the derivation the memo records ended (ISO 8601, UTC). */
  readonly verifiedAt: string;
  /** What derived the lock's tree from its raw closure: the assembly that wrote the lock, or a full verify of it. */
  readonly derivedBy: MemoSource;
}

/** The derivation a memo records: `assemble` (the lock's own assembly, into a pack it wrote) or a full `verify`. */
export type MemoSource = "assemble" | "verify";

/** How the tree was established: re-derived from the raw closure now, or under a memo of an earlier full derivation (the lock's assembly or a full verify). */
export type Derivation =
  | {
      readonly how: "re-derived";
      readonly memoWritten: boolean;
      readonly why?: string;
      /** Why no memo was written although one would have been (the store is on read-only media or not writable by this user). */
      readonly memoSkipped?: string;
    }
  | {
      readonly how: "memo";
      /** When the derivation the memo records ended. */
      readonly verifiedAt: string;
      /** Which derivation: the assembly that wrote the lock, or a full verify. */
      readonly derivedBy: MemoSource;
      /** `hashed`: every content of the pack was hashed now; `unchanged`: its file stat was the memo's, so only its index was checked (every read is still checked). */
      readonly packBody: "hashed" | "unchanged";
      /**
       * `read back`: the stored derived entry was parsed and its fs, launch and workload identities
       * recomputed (openVerifiedWorkload, which hands out the tree); `hashed only`: its bytes were hashed
       * against the lock and not parsed (verifyWorkloadLock, which hands out no tree).
       */
      readonly tree: "read back" | "hashed only";
    };

/** One line saying how a verify established the tree and what it checked now (record's and replay's logs). */
export function describeDerivation(d: Derivation): string {
  if (d.how === "re-derived")
    return `workload re-derived from its raw closure${d.why !== undefined ? ` (${d.why})` : ""}${d.memoWritten ? "; memo written for the next verify on this machine" : ""}${d.memoSkipped !== undefined ? `; no memo written (${d.memoSkipped})` : ""}`;
  const of = d.derivedBy === "assemble" ? "its assembly" : "its full verify";
  const entry = d.tree === "read back" ? "derived entry read back and its identities recomputed" : "derived entry hashed";
  const pack = d.packBody === "hashed" ? "pack contents hashed" : "pack index checked (file unchanged; every content is checked as it is read)";
  return `workload verified under this machine's memo of ${of} (${d.verifiedAt}): raw objects hashed, ${entry}, ${pack}; not re-derived`;
}

/** `--keys DIR` when given, else core's one default-location rule (`cairnDir("keys", ...)`). */
export function defaultKeysDir(env: Readonly<Record<string, string | undefined>>, cwd: string, flag?: string): string {
  if (flag !== undefined && flag !== "") return resolve(cwd, flag);
  return cairnDir("keys", env, cwd);
}

/**
 * The memo key in `dir`: read when there, else made (32 random bytes,
 * created exclusively, fsynced, then linked into place so two processes
 * making it at once end with one key). A key that is not a regular file of
 * exactly 32 bytes is refused (IO_ERROR naming it), never replaced.
 */
export function loadVerifyKey(dir: string): Buffer {
  const path = join(dir, VERIFY_KEY_FILE);
  const existing = readKey(path);
  if (existing !== undefined) return existing;
  mkdirPrivate(dir);
  const tmp = join(dir, `.${VERIFY_KEY_FILE}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    const fd = createExclusive(tmp, 0o600);
    try {
      writeSync(fd, randomBytes(KEY_BYTES));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(tmp, path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e; // another process made it first: use theirs
    }
  } catch (cause) {
    throw ioError(path, cause, "create");
  } finally {
    rmSync(tmp, { force: true });
  }
  const made = readKey(path);
  if (made === undefined) throw new CairnError("IO_ERROR", `verify memo key ${path} vanished as it was made`, { path });
  return made;
}

function readKey(path: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openForRead(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw ioError(path, e);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== KEY_BYTES) {
      throw new CairnError("IO_ERROR", `verify memo key ${path} is not a regular file of ${KEY_BYTES} bytes`, {
        path,
        hint: "remove it (cairn makes a new one; memos made with the old key are then ignored)",
      });
    }
    const key = Buffer.alloc(KEY_BYTES);
    if (readSync(fd, key, 0, KEY_BYTES, 0) !== KEY_BYTES) throw new CairnError("IO_ERROR", `verify memo key ${path} could not be read whole`, { path });
    return key;
  } finally {
    closeSync(fd);
  }
}

let buildDigest: Sha256Digest | undefined;

/**
 * The running cairn's build: the sha256 over every file of the code
 * root (codeRoot: dist/ when compiled, the CLI bundle included, src/ under
 * tsx), each as its path relative to that directory, a NUL, its byte
 * count and its bytes, in path order. Type declarations (`.d.ts`, which
 * the compiled build ships beside the code) never run and are left out.
 * Computed once per process.
 */
export function cairnBuild(): Sha256Digest {
  if (buildDigest !== undefined) return buildDigest;
  const root = codeRoot();
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, d.name);
      if (d.isDirectory()) walk(p);
      else if (d.isFile() && !d.name.endsWith(".d.ts")) files.push(relative(root, p).split(sep).join("/")); // declarations never run
    }
  };
  walk(root);
  files.sort();
  const h = new Sha256Hasher();
  for (const f of files) {
    const fd = openForRead(join(root, f));
    try {
      const size = fstatSync(fd).size;
      const bytes = Buffer.alloc(size);
      let at = 0;
      while (at < size) {
        const n = readSync(fd, bytes, at, size - at, at);
        if (n === 0) break;
        at += n;
      }
      h.update(Buffer.from(`${f}\0${at}\0`, "utf8"));
      h.update(bytes.subarray(0, at));
    } finally {
      closeSync(fd);
    }
  }
  buildDigest = h.digest();
  return buildDigest;
}

function macOf(key: Buffer, body: object): string {
  return createHmac("sha256", key).update(canonicalBytes(body)).digest("hex");
}

/**
 * Writes the memo for `lockDigest` after a full derivation of its tree by
 * `derivedBy`, with the pack that derivation wrote or checked (replacing any
 * memo there).
 */
export function writeVerifyMemo(
  store: Store,
  key: Buffer,
  lockDigest: Sha256Digest,
  pack: VerifyMemo["pack"],
  derivedBy: MemoSource,
  now: Date = new Date(),
): void {
  const stat = { dev: pack.stat.dev, ino: pack.stat.ino, size: pack.stat.size, mtime_ns: pack.stat.mtimeNs, ctime_ns: pack.stat.ctimeNs };
  const body = {
    schema: VERIFY_MEMO_SCHEMA,
    lock_digest: lockDigest,
    build: cairnBuild(),
    pack: { digest: pack.digest, size: pack.size, stat },
    derived_by: derivedBy,
    verified_at: now.toISOString(),
  };
  store.putRecord("verified", lockDigest, Buffer.from(`${JSON.stringify({ ...body, mac: macOf(key, body) })}\n`, "utf8"));
}

/** Why no memo was honoured (for the verify's report), or the memo. */
export type MemoLookup = { readonly memo: VerifyMemo } | { readonly memo: undefined; readonly why: string };

/**
 * The memo for `lockDigest` when one is there and holds: well formed, MAC
 * valid under `key`, naming this lock and this build. Anything else is no
 * memo (the reason is returned, not thrown: the verify re-derives).
 */
export function readVerifyMemo(store: Store, key: Buffer, lockDigest: Sha256Digest): MemoLookup {
  const bytes = store.recordOf("verified", lockDigest, MEMO_MAX_BYTES);
  if (bytes === undefined) return { memo: undefined, why: "no memo for this lock" };
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(bytes.toString("utf8")) as Record<string, unknown>;
  } catch {
    return { memo: undefined, why: "the memo is not JSON" };
  }
  if (typeof m !== "object" || m === null || typeof m.mac !== "string") return { memo: undefined, why: "the memo has no MAC" };
  const { mac, ...body } = m;
  const want = Buffer.from(macOf(key, body), "hex");
  const got = Buffer.from(mac as string, "hex");
  if (got.length !== want.length || !timingSafeEqual(got, want)) return { memo: undefined, why: "the memo's MAC does not hold under this machine's key" };
  if (body.schema !== VERIFY_MEMO_SCHEMA || body.lock_digest !== lockDigest) return { memo: undefined, why: "the memo names another lock" };
  if (body.build !== cairnBuild()) return { memo: undefined, why: "the memo was written by another cairn build" };
  const pack = body.pack as { digest?: unknown; size?: unknown; stat?: Record<string, unknown> } | null;
  const st = pack?.stat;
  const text = (v: unknown): v is string => typeof v === "string" && /^[0-9]{1,40}$/.test(v);
  if (
    typeof pack !== "object" ||
    pack === null ||
    typeof pack.size !== "number" ||
    !Number.isSafeInteger(pack.size) ||
    typeof body.verified_at !== "string" ||
    (body.derived_by !== "assemble" && body.derived_by !== "verify") ||
    typeof st !== "object" ||
    st === null ||
    !text(st.dev) ||
    !text(st.ino) ||
    !text(st.size) ||
    !text(st.mtime_ns) ||
    !text(st.ctime_ns)
  ) {
    return { memo: undefined, why: "the memo is malformed" };
  }
  const stat: PackStat = { dev: st.dev, ino: st.ino, size: st.size, mtimeNs: st.mtime_ns, ctimeNs: st.ctime_ns };
  return {
    memo: { pack: { digest: parseSha256(pack.digest, "/pack/digest"), size: pack.size, stat }, verifiedAt: body.verified_at, derivedBy: body.derived_by },
  };
}
