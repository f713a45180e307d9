/**
 * Own only what you made. The one place that decides whether cairn may write
 * into, delete from or chmod a directory, used by the store, the guest kit,
 * the runs directory and the registry:
 *
 *  - a root (store, kit, runs, registry) carries a marker file naming its
 *    format (`{"format":"cairn.store/1"}`), written when cairn creates it. An
 *    existing directory without the marker is refused (ROOT_FOREIGN) unless it
 *    is empty and private, then it is marked; a `/tmp`-like directory (1777)
 *    or a directory full of someone's files is never taken over, emptied or
 *    re-permissioned;
 *  - every directory inside a root is reached one component at a time, each
 *    opened with O_NOFOLLOW|O_DIRECTORY relative to the descriptor of its
 *    parent, so a symlink, FIFO or file planted at `store/staging`,
 *    `store/objects` or a run's `replays` is refused (ROOT_UNSAFE), never
 *    followed. A directory inside a root that another user owns or that
 *    others may write to is refused too: whoever can write there could swap
 *    its entries;
 *  - only directories this code created are chmodded.
 *
 * Node has no openat(2) or openat2(2). On Linux the magic link
 * `/proc/self/fd/N` names the open directory itself, so opening
 * `/proc/self/fd/N/name` resolves `name` inside that directory exactly as
 * openat(N, "name") would, even if the directory was renamed or a path above
 * it was swapped for a symlink after it was opened. Walking component by
 * component through held descriptors is therefore race-free for every
 * directory we walk through; callers act on entries through the held
 * descriptor's path (`withDirIn`). The cost was measured at a few
 * microseconds per component (docs/host-safety.md); a native openat2 helper
 * with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS would give the same guarantee for
 * a compiled dependency and was not worth it.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, fchmodSync, fstatSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, type Stats } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileKind, readFileBounded } from "./bounded-read.ts";
import { CairnError, ioError, type ErrorCode } from "./errors.ts";
import { makeDirs, openDirectory, writeFileAtomic } from "./files.ts";
import { parseJsonBytes } from "./json.ts";

/** What kind of root a directory is, and how it is marked. */
export interface RootKind {
  /** For messages: "content store", "runs directory", ... */
  readonly what: string;
  /** The format the marker names, e.g. "cairn.store/1". */
  readonly format: string;
  /** The marker's file name inside the root, e.g. "cairn-store.json". */
  readonly marker: string;
  /** Mode of the root and of the directories created inside it (0700 private, 0755 shared). */
  readonly mode: number;
  /** Code when the root does not exist and is not to be created. Default ROOT_FOREIGN. */
  readonly missing?: ErrorCode;
  /** Code when the directory is not this kind of root. Default ROOT_FOREIGN. */
  readonly foreign?: ErrorCode;
  /** Hint for those refusals. */
  readonly hint?: string;
  /**
   * Files that marked this kind of root before markers existed (e.g. the
   * kit's `kit.json`): a directory holding one is adopted and marked.
   */
  readonly legacyMarkers?: readonly string[];
}

/** root.max_marker_bytes: the largest marker file read. */
export const MAX_MARKER_BYTES = 4096;

/** The path through which `fd`'s directory is reached without resolving any name again (Linux). */
export function descriptorPath(fd: number): string {
  return `/proc/self/fd/${fd}`;
}

function errno(e: unknown): string | undefined {
  return (e as { code?: string } | null)?.code;
}

const uid = (): number | undefined => process.geteuid?.();

/** Others may write into it (and it is not ours): whoever can write there could swap its entries. */
function unsafeDirMode(st: Stats): string | undefined {
  const me = uid();
  if (me !== undefined && st.uid !== me) return `owned by uid ${st.uid}, not by this user`;
  if ((st.mode & 0o022) !== 0) return `writable by others (mode ${(st.mode & 0o7777).toString(8)})`;
  return undefined;
}

function unsafe(path: string, what: string): CairnError {
  return new CairnError("ROOT_UNSAFE", `${path} is ${what}; cairn does not follow or use it`, {
    path,
    hint: "something other than cairn changed this directory; remove what was planted there (cairn never follows a symlink inside its own directories)",
  });
}

function checkComponent(name: string, path: string): void {
  if (name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0"))
    throw new CairnError("PATH_UNSAFE", `${JSON.stringify(name)} is not a single path component`, { path });
}

export interface DirOptions {
  /** Create missing components (mode `mode`); implies `write`. */
  readonly create?: boolean;
  readonly mode?: number;
  /**
   * The caller will write or delete there: each directory walked must also
   * belong to this user and be writable by no one else. Readers, who verify
   * what they read, may read a registry another user shares.
   */
  readonly write?: boolean;
}

/**
 * Opens directory `rel` (components separated by "/") inside `root`, one
 * component at a time with O_NOFOLLOW, creating missing components with
 * `mode` when `create`. The caller closes the returned descriptor.
 */
export function openDirIn(root: string, rel: string, options: DirOptions = {}): number {
  const mode = options.mode ?? 0o700;
  let fd: number;
  try {
    fd = openDirectory(root, true); // the root itself is the caller's choice of path
  } catch (cause) {
    throw ioError(root, cause, "open");
  }
  let shown = root;
  try {
    for (const name of rel === "" ? [] : rel.split("/")) {
      checkComponent(name, `${shown}/${name}`);
      shown = `${shown}/${name}`;
      const at = `${descriptorPath(fd)}/${name}`;
      let child: number | undefined;
      for (let attempt = 0; child === undefined; attempt++) {
        try {
          child = openDirectory(at, false);
          const why = options.write === true || options.create === true ? unsafeDirMode(fstatSync(child)) : undefined;
          if (why !== undefined) {
            closeSync(child);
            throw unsafe(shown, `a directory ${why}`);
          }
        } catch (e) {
          if (e instanceof CairnError) throw e;
          const code = errno(e);
          if (code === "ENOENT" && options.create === true && attempt < 3) {
            try {
              mkdirSync(at, { mode });
              const made = openDirectory(at, false);
              fchmodSync(made, mode); // we created it: the umask must not change what we promised
              child = made;
            } catch (m) {
              if (errno(m) !== "EEXIST") throw ioError(shown, m, "create");
            }
            continue;
          }
          if (code === "ELOOP" || code === "ENOTDIR") {
            let st: Stats | undefined;
            try {
              st = lstatSync(at);
            } catch {}
            throw unsafe(shown, st === undefined ? "not a directory" : fileKind(st));
          }
          if (code === "ENOENT") throw new CairnError("IO_ERROR", `${shown} does not exist`, { path: shown, cause: e });
          throw ioError(shown, e, "open");
        }
      }
      closeSync(fd);
      fd = child;
    }
    return fd;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/**
 * Runs `fn` with a path that reaches directory `rel` of `root` through its
 * open descriptor (see the header): names joined to it are resolved inside
 * that very directory, whatever happens to the path above it meanwhile.
 */
export function withDirIn<T>(root: string, rel: string, fn: (dir: string) => T, options: DirOptions = {}): T {
  const fd = openDirIn(root, rel, options);
  try {
    return fn(descriptorPath(fd));
  } finally {
    closeSync(fd);
  }
}

/** Creates (or checks) each directory of `rels` inside `root` without following a symlink anywhere. */
export function ensureDirsIn(root: string, rels: readonly string[], mode = 0o700): void {
  for (const rel of rels) closeSync(openDirIn(root, rel, { create: true, mode }));
}

/**
 * Whether directory `rel` is present inside `root` (false when absent),
 * reached without following a symlink: anything else at its path is refused
 * (ROOT_UNSAFE). For readers, which create nothing.
 */
export function hasDirIn(root: string, rel: string): boolean {
  let fd: number;
  try {
    fd = openDirIn(root, rel);
  } catch (e) {
    if (e instanceof CairnError && e.code === "IO_ERROR" && errno(e.cause) === "ENOENT") return false;
    throw e;
  }
  closeSync(fd);
  return true;
}

/** Removes entry `name` of directory `rel` inside `root` (recursively; a symlink there is removed, never followed). */
export function removeIn(root: string, rel: string, name: string): void {
  checkComponent(name, `${root}/${rel}/${name}`);
  withDirIn(root, rel, (dir) => rmSync(`${dir}/${name}`, { recursive: true, force: true }), { write: true });
}

function readMarker(dir: string, kind: RootKind): "ours" | "other" | "absent" {
  let bytes: Buffer;
  try {
    bytes = readFileBounded(`${dir}/${kind.marker}`, MAX_MARKER_BYTES, "root.max_marker_bytes", { missing: "IO_ERROR", notRegular: "ROOT_UNSAFE" });
  } catch (e) {
    if (e instanceof CairnError && errno(e.cause) === "ENOENT") return "absent";
    throw e;
  }
  try {
    const m = parseJsonBytes(bytes, { source: kind.marker });
    return m !== null && typeof m === "object" && !Array.isArray(m) && m.format === kind.format ? "ours" : "other";
  } catch {
    return "other";
  }
}

function writeMarker(root: string, kind: RootKind): void {
  writeFileAtomic(`${root}/${kind.marker}`, `${JSON.stringify({ format: kind.format })}\n`, { mode: 0o644, overwrite: false });
}

/**
 * Makes sure `root` is a root of `kind` that cairn may work in. Absent:
 * created (with `create`; parents are created with the default mode and
 * never chmodded) and marked. Present: it must carry the marker naming
 * `kind.format`; an unmarked directory is adopted only when it is empty and
 * private to this user (or holds one of `kind.legacyMarkers`), otherwise
 * refused. Nothing in a refused directory is touched.
 */
export function openRoot(root: string, kind: RootKind, options: { create: boolean }): void {
  const foreign = (why: string): CairnError =>
    new CairnError(kind.foreign ?? "ROOT_FOREIGN", `${root} is not a ${kind.what} (${why}); cairn does not write into, empty or re-permission it`, {
      path: root,
      hint: kind.hint ?? `give a new or empty private directory, or one cairn created as a ${kind.what}`,
    });
  let st: Stats;
  try {
    st = statSync(root);
  } catch (cause) {
    if (errno(cause) !== "ENOENT") throw ioError(root, cause, "open");
    if (!options.create) throw new CairnError(kind.missing ?? "ROOT_FOREIGN", `no ${kind.what} at ${root}`, { path: root, cause, hint: kind.hint });
    // A root appears marked or not at all: it is made as a hidden sibling,
    // marked, then renamed into place, so a concurrent cairn never sees it
    // unmarked (and refuses it as foreign). Whoever renames second finds the
    // first one's root and uses it.
    const tmp = join(dirname(root), `.${basename(root)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
    try {
      makeDirs(dirname(root));
      mkdirSync(tmp, { mode: kind.mode });
      chmodSync(tmp, kind.mode); // ours: just created
      writeMarker(tmp, kind);
      renameSync(tmp, root);
    } catch (m) {
      rmSync(tmp, { recursive: true, force: true });
      if (errno(m) !== "EEXIST" && errno(m) !== "ENOTEMPTY") throw m instanceof CairnError ? m : ioError(root, m, "create");
      openRoot(root, kind, options); // created concurrently: check it like any existing directory
    }
    return;
  }
  if (!st.isDirectory()) throw foreign(fileKind(st));
  const fd = openDirIn(root, "");
  try {
    const dir = descriptorPath(fd);
    const marker = readMarker(dir, kind);
    if (marker === "ours") return;
    if (marker === "other") throw foreign(`${kind.marker} names another format`);
    if (!options.create) throw foreign(`no ${kind.marker}`);
    const names = readdirSync(dir);
    const legacy = names.some((n) => kind.legacyMarkers?.includes(n) === true);
    if (names.length > 0 && !legacy) throw foreign(`not empty and no ${kind.marker}`);
    const why = unsafeDirMode(fstatSync(fd));
    if (why !== undefined) throw foreign(`an existing directory ${why}`);
    try {
      writeMarker(root, kind);
    } catch (e) {
      // another cairn adopted it at the same moment: fine if it marked it as ours
      if (readMarker(dir, kind) !== "ours") throw e;
    }
  } finally {
    closeSync(fd);
  }
}
