/**
 * The content store: a directory of immutable, content-addressed files.
 *
 *   <root>/                       0700
 *     cairn-store.json            0644  the root's marker (core/owned-root.ts): {"format":"cairn.store/1"}
 *     objects/sha256/<hex>        0600  raw objects and tree file contents, named by the sha256 of their bytes
 *                                      (0444 when a layout `cairn pull` wrote shares it as a hard link: oci/layout-writer.ts)
 *     derived/sha256/<hex>        0600  derived entries (canonical trees), named by the sha256 of their bytes
 *     packs/sha256/<hex>          0600  tree file contents, one pack per derived tree (see pack.ts for its name)
 *     derived-packs/sha256/<hex>  0600  which pack holds the file contents of derived entry <hex> (a record: gc keeps the pack; verify reads it as a hint of which pack to compare, checked against the rebuilt name)
 *     verified/sha256/<hex>       0600  a verify memo for the lock whose lock_digest is <hex> (workload/verify-memo.ts: MAC'd by a key the store never holds; gc keeps it with its lock)
 *     roots/<hex>                 0600  a lock this store's writers wrote or verified (its absolute path; <hex> is its sha256)
 *     staging/<host>-<pid>-<random>/  0700  one writer's private staging, held from open to close
 *     gc.lock                     0600  held while `cairn store gc` sweeps (gc-lock.ts)
 *
 * Every file is published by rename(2) of a complete file from the writer's
 * staging directory (publish.ts), so a reader sees a whole file or none, and a SIGKILL at
 * any moment leaves at most a staging leftover. Because names are digests of
 * contents, concurrent writers of the same object write the same bytes, and
 * a verified file is never replaced by different bytes; a file that does not
 * match its name is corrupt, not verified, and may be repaired.
 *
 * Reads are bounded, refuse symlinks and non-regular files, and verify the
 * digest of the bytes against the name before returning them: the store is
 * hostile input too.
 *
 * A store opened for writing holds its staging directory until `close()`:
 * that is how `cairn store gc` knows a writer is open and waits for it
 * (gc-lock.ts); the roots and pack records are what gc keeps (gc.ts).
 */
import { lstatSync, rmSync, type Stats } from "node:fs";
import { isAbsolute } from "node:path";
import { join } from "node:path";
import {
  CairnError,
  digestComponents,
  ensureDirsIn,
  hasDirIn,
  openRoot,
  parseSha256,
  hashFileBounded,
  hashFileBoundedOnThread,
  readFileBounded,
  sha256,
  Sha256Hasher,
  streamFileBounded,
  writeNewFile,
  type RootKind,
  type Sha256Digest,
  notWritable,
  writeRefusal,
} from "../core/index.ts";
import { gcHeld, sleepSync } from "./gc-lock.ts";
import { publishBytes, publishStaged } from "./publish.ts";
import { cleanStaging, createStaging, STAGING, type Staging } from "./staging.ts";

export type StoreArea = "objects" | "derived" | "packs" | "derived-packs" | "verified";

/** How long a writer waits for a running gc to finish before STORE_BUSY. */
const GC_WAIT_MS = 10 * 60 * 1000;

export interface StoreOptions {
  /** Create the store if missing and clean dead writers' staging (default true). */
  write?: boolean;
}

/** The store root's marker (core/owned-root.ts): cairn writes into, cleans and chmods only a directory it marked. */
export const STORE_ROOT: RootKind = {
  what: "content store",
  format: "cairn.store/1",
  marker: "cairn-store.json",
  mode: 0o700,
  missing: "STORE_MISSING",
  hint: "assemble the workload first, or pass --store with a new, empty or cairn-made directory",
};

const STORE_DIRS = [
  "objects",
  "objects/sha256",
  "derived",
  "derived/sha256",
  "packs",
  "packs/sha256",
  "derived-packs",
  "derived-packs/sha256",
  "verified",
  "verified/sha256",
  "roots",
  STAGING,
] as const;

const STORE_CORRUPT_HINT = "the store was modified; remove the file and assemble again";

const BOUNDED_STORE_READ = { missing: "STORE_MISSING", notRegular: "STORE_CORRUPT", changed: "STORE_CORRUPT" } as const;

export class Store {
  readonly root: string;
  #staging: Staging | undefined;
  #seq = 0;

  constructor(root: string, options: StoreOptions = {}) {
    this.root = root;
    const write = options.write ?? true;
    if (write) {
      // read-only media (EROFS) or a store this user may not write (EACCES): said as such, naming the
      // file system, before the first write fails somewhere inside (it surfaced as INTERNAL, issue 31)
      const why = notWritable(root);
      if (why !== undefined) throw writeRefusal(root, Object.assign(new Error(why), { code: why }), "into the content store");
      try {
        openRoot(root, STORE_ROOT, { create: true });
        ensureDirsIn(root, STORE_DIRS);
        cleanStaging(root);
        this.#open();
      } catch (e) {
        throw writeRefusal(root, e, "into the content store");
      }
    } else {
      openRoot(root, STORE_ROOT, { create: false });
      // reading: what is there must still be a real directory of ours (a planted symlink is refused, never followed)
      for (const d of STORE_DIRS) hasDirIn(root, d);
    }
  }

  /** The single function that builds a path in the store; it validates the digest first. */
  pathOf(area: StoreArea, unsafeDigest: string): string {
    const [alg, hex] = digestComponents(unsafeDigest);
    if (alg !== "sha256") throw new CairnError("DIGEST_INVALID", "the store addresses content by sha256", { path: unsafeDigest });
    return join(this.root, area, alg, hex);
  }

  /**
   * Opens this writer's staging: announce (create the directory), then look
   * for a gc; while a live gc holds the store, step back and wait for it.
   */
  #open(): Staging {
    const deadline = Date.now() + GC_WAIT_MS;
    for (;;) {
      const staging = createStaging(this.root);
      if (!gcHeld(this.root)) {
        this.#staging = staging;
        return staging;
      }
      staging.dispose();
      if (Date.now() >= deadline) {
        throw new CairnError("STORE_BUSY", `a gc held the store at ${this.root} for ${GC_WAIT_MS} ms`, {
          path: this.root,
          hint: "try again when the gc has finished",
        });
      }
      sleepSync(50);
    }
  }

  /** This writer's private staging directory (held from open to `close`, reopened on use after it). */
  get stagingDir(): string {
    return (this.#staging ?? this.#open()).dir;
  }

  /**
   * Records `lockPath` (absolute) as a gc root: a lock this store's writer
   * wrote or verified. gc keeps its closure while the file exists.
   */
  registerRoot(lockPath: string): void {
    if (!isAbsolute(lockPath)) throw new CairnError("USAGE", `a store root must be an absolute path: ${lockPath}`, { path: lockPath });
    const text = Buffer.from(`${lockPath}\n`, "utf8");
    const target = join(this.root, "roots", sha256(text).slice("sha256:".length));
    if (this.#holds(target, text)) return;
    publishBytes(target, text, { tmp: join(this.stagingDir, `root-${this.#seq++}`), mode: 0o600 });
  }

  /** Records that the file contents of derived entry `derived` are in pack `pack` (gc keeps the pack by it; verify takes it as a hint, checked against the rebuilt pack name). */
  recordPack(derived: Sha256Digest, pack: Sha256Digest): void {
    const text = Buffer.from(`${pack}\n`, "latin1");
    const target = this.pathOf("derived-packs", derived);
    if (this.#holds(target, text)) return;
    publishBytes(target, text, { tmp: join(this.stagingDir, `record-${this.#seq++}`), mode: 0o600 });
  }

  /** The pack recorded for derived entry `derived`, when a record is there and well formed. */
  packOf(derived: Sha256Digest): Sha256Digest | undefined {
    try {
      const text = readFileBounded(this.pathOf("derived-packs", derived), 80, "packRecordBytes").toString("latin1");
      return text.endsWith("\n") ? parseSha256(text.slice(0, -1)) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Publishes a small record named by a digest that is not its content's
   * (a verify memo, named by its lock's digest), replacing what is there:
   * a record is checked by its reader, never trusted for its name.
   */
  putRecord(area: "verified", name: Sha256Digest, data: Buffer): void {
    const target = this.pathOf(area, name);
    if (this.#holds(target, data)) return;
    publishBytes(target, data, { tmp: join(this.stagingDir, `record-${this.#seq++}`), mode: 0o600 });
  }

  /** A record's bytes (at most `maxBytes`), or undefined when there is none or it cannot be read as a regular file. */
  recordOf(area: "verified", name: Sha256Digest, maxBytes: number): Buffer | undefined {
    try {
      return readFileBounded(this.pathOf(area, name), maxBytes, "recordBytes");
    } catch {
      return undefined;
    }
  }

  /** True when `target` is a regular file holding exactly `data`. */
  #holds(target: string, data: Buffer): boolean {
    try {
      return readFileBounded(target, data.length, "storeRecordBytes").equals(data);
    } catch {
      return false;
    }
  }

  /** Removes this writer's staging directory. Call when done writing. */
  close(): void {
    this.#staging?.dispose();
    this.#staging = undefined;
  }

  has(area: StoreArea, digest: Sha256Digest, size?: number): boolean {
    try {
      const st = lstatSync(this.pathOf(area, digest));
      return st.isFile() && (size === undefined || st.size === size);
    } catch {
      return false;
    }
  }

  /**
   * Checks that a stored file exists with the expected size, without reading
   * it: STORE_MISSING when absent, STORE_CORRUPT when it is not a regular
   * file or has another size. (Content is checked by `read`.)
   */
  require(area: StoreArea, digest: Sha256Digest, size: number): void {
    const path = this.pathOf(area, digest);
    let st: Stats;
    try {
      st = lstatSync(path);
    } catch (cause) {
      throw new CairnError("STORE_MISSING", `${area === "objects" ? "object" : "derived entry"} ${digest} is not in the store`, {
        path: digest,
        cause,
        hint: "assemble the workload again into this store; nothing falls back to the live source",
      });
    }
    if (!st.isFile() || st.size !== size) {
      throw new CairnError("STORE_CORRUPT", `stored ${digest} is not a regular file of ${size} bytes`, {
        path: digest,
        hint: "the store was modified; remove the file and assemble again",
      });
    }
  }

  /**
   * Stores `data`, returns its digest. Idempotent; safe against concurrent
   * writers and SIGKILL (the file is complete before it gets its name).
   *
   * `durable` (default true) also fsyncs the file and its directory, so it
   * survives a power loss. Tree file contents are written with
   * `durable: false`: they are derived data that verify rebuilds from the
   * (durable) raw layers when one is missing or corrupt, and an fsync per
   * file would make a 20,000-file layer take a minute. `checkExisting`
   * re-reads a present file and repairs it when it does not match its name.
   */
  put(area: StoreArea, data: Uint8Array, options: { checkExisting?: boolean; durable?: boolean } = {}): Sha256Digest {
    const digest = sha256(data);
    if (this.has(area, digest, data.length)) {
      if (options.checkExisting !== true) return digest;
      try {
        this.read(area, digest, data.length);
        return digest;
      } catch (e) {
        if (!(e instanceof CairnError) || e.code !== "STORE_CORRUPT") throw e;
        // fall through: replace the corrupt file with the bytes we hold
      }
    }
    // Not present (or corrupt and being repaired): a content address, published by rename from this writer's staging.
    publishBytes(this.pathOf(area, digest), data, { tmp: join(this.stagingDir, `put-${this.#seq++}`), durable: options.durable ?? true, mode: 0o600 });
    return digest;
  }

  /**
   * Publishes a copy of the regular file at `file` (left where it is), which
   * must hold exactly the bytes named by `digest` and `size`: copied in 1 MiB
   * chunks into this writer's staging and hashed as it is copied (a large
   * object is never held whole; STORE_CORRUPT when the bytes are not the
   * ones named), then adopted (fsynced, renamed into place). A present file
   * is kept, unless `replace` is set (the caller found it corrupt).
   */
  putFile(area: StoreArea, file: string, digest: Sha256Digest, size: number, options: { readonly replace?: boolean } = {}): void {
    if (options.replace !== true && this.has(area, digest, size)) return;
    const tmp = join(this.stagingDir, `put-${this.#seq++}`);
    const hash = new Sha256Hasher();
    writeNewFile(tmp, (write) => {
      const copy = (chunk: Uint8Array): void => {
        hash.update(chunk);
        write(chunk);
      };
      streamFileBounded(file, size, "storeObjectBytes", copy, { expectedSize: size });
      if (hash.digest() !== digest) throw new CairnError("STORE_CORRUPT", `${file} does not hold ${digest}`, { path: file });
    });
    this.adopt(area, tmp, digest, size, { replace: options.replace === true });
  }

  /**
   * Moves a file the caller staged in this store's staging directory and
   * already verified against `digest` and `size` into place (large layer
   * blobs: no second copy). The file is made 0600 and, unless `durable` is
   * false, fsynced first. A present file is kept, unless `replace` is set
   * (the caller found it corrupt).
   */
  adopt(area: StoreArea, stagedPath: string, digest: Sha256Digest, size: number, options: { durable?: boolean; replace?: boolean } = {}): void {
    if (options.replace !== true && this.has(area, digest, size)) {
      rmSync(stagedPath, { force: true });
      return;
    }
    publishStaged(stagedPath, this.pathOf(area, digest), size, { durable: options.durable ?? true, mode: 0o600 });
  }

  /** Reads and verifies one stored file; STORE_MISSING when absent, STORE_CORRUPT when its bytes do not match its name. */
  read(area: StoreArea, digest: Sha256Digest, maxBytes: number, limitName = "storeObjectBytes"): Buffer {
    // core's bounded reader: no symlink, no FIFO or device, size bounded before reading, refused if it changes while read
    const buf = this.#bounded(area, digest, limitName, () => readFileBounded(this.pathOf(area, digest), maxBytes, limitName, BOUNDED_STORE_READ));
    if (sha256(buf) !== digest) this.#corrupt(area, digest);
    return buf;
  }

  /**
   * Hands one stored file to `chunk` in 1 MiB pieces (core's bounded reader,
   * the same checks as `read`) and returns its size; STORE_CORRUPT when its
   * bytes do not match its name comes after the chunks were handed over, so
   * the caller must not use them until this returns.
   */
  stream(area: StoreArea, digest: Sha256Digest, maxBytes: number, chunk: (bytes: Buffer) => void, limitName = "storeObjectBytes"): number {
    const hash = new Sha256Hasher();
    const size = this.#bounded(area, digest, limitName, () =>
      streamFileBounded(
        this.pathOf(area, digest),
        maxBytes,
        limitName,
        (bytes) => {
          hash.update(bytes);
          chunk(bytes);
        },
        BOUNDED_STORE_READ,
      ),
    );
    if (hash.digest() !== digest) this.#corrupt(area, digest);
    return size;
  }

  /**
   * Verifies one stored file as `read` does (the same refusals) without
   * holding it: its bytes are hashed in chunks. For a large file whose bytes
   * the caller already has, such as a rebuilt derived entry.
   */
  check(area: StoreArea, digest: Sha256Digest, maxBytes: number, limitName = "storeObjectBytes"): void {
    const r = this.#bounded(area, digest, limitName, () => hashFileBounded(this.pathOf(area, digest), maxBytes, limitName, BOUNDED_STORE_READ));
    if (r.digest !== digest) this.#corrupt(area, digest);
  }

  /**
   * `check` with the file read and hashed on the inflate thread
   * (hashFileBoundedOnThread: the same opening and checks), so the calling
   * thread can work meanwhile: a verify under a memo hashes its layers
   * while it reads the tree back.
   */
  async checkOnThread(area: StoreArea, digest: Sha256Digest, maxBytes: number, limitName = "storeObjectBytes"): Promise<void> {
    let r: { digest: Sha256Digest };
    try {
      r = await hashFileBoundedOnThread(this.pathOf(area, digest), maxBytes, limitName, BOUNDED_STORE_READ);
    } catch (e) {
      throw this.#named(e, area, digest, limitName);
    }
    if (r.digest !== digest) this.#corrupt(area, digest);
  }

  #corrupt(area: StoreArea, digest: Sha256Digest): never {
    const what = area === "objects" ? "object" : "derived entry";
    throw new CairnError("STORE_CORRUPT", `stored ${what} ${digest} does not match its digest`, { path: digest, hint: STORE_CORRUPT_HINT });
  }

  /** Runs a bounded read of a stored file, naming the file by its digest in a refusal. */
  #bounded<T>(area: StoreArea, digest: Sha256Digest, limitName: string, fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      throw this.#named(e, area, digest, limitName);
    }
  }

  /** A bounded read's refusal, naming the file by its digest (the store names a file by its digest, not by where this machine keeps it). */
  #named(e: unknown, area: StoreArea, digest: Sha256Digest, limitName: string): unknown {
    const what = area === "objects" ? "object" : "derived entry";
    if (!(e instanceof CairnError)) return e;
    if (e.code === "STORE_MISSING") {
      return new CairnError("STORE_MISSING", `${what} ${digest} is not in the store`, {
        path: digest,
        cause: e,
        hint: "assemble the workload again into this store; nothing falls back to the live source",
      });
    }
    if (e.code === "STORE_CORRUPT")
      return new CairnError("STORE_CORRUPT", `store file for ${digest}: ${e.message}`, { path: digest, cause: e, hint: STORE_CORRUPT_HINT });
    if (e.code === "LIMIT_EXCEEDED")
      return new CairnError("LIMIT_EXCEEDED", `limit ${limitName} exceeded by stored ${digest}`, {
        path: digest,
        cause: e,
        hint: `raise the limit "${limitName}"`,
      });
    return e;
  }
}
