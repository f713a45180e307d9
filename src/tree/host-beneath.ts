/**
 * Host paths a document names, read only beneath a directory. A workload
 * spec is someone else's input: the host files it may make cairn read
 * (`source.binary.path`, `source.oci.layout`, `source.lockfile.path`,
 * `run.inputs[].from`, `run.network.http.root`) are confined to the spec's
 * own directory, or to a directory the user named on the command line
 * (`--inputs-root DIR`, one flag for all of them). The attack this stops: a spec naming `/etc/shadow`,
 * `../../.ssh/id_ed25519`, or a symlink planted beside it that leads out
 * (`data -> /home/me`, `sub/../..` through a linked directory), whose bytes
 * then travel into a run, its store and a shareable bundle.
 *
 * Two steps, neither a string check on the whole path:
 *
 *  1. `resolveBeneath` resolves the path with the tree area's one in-root
 *     resolver (in-root.ts) in its "beneath" mode, over the root's real
 *     path, looking at each component with lstat: `..` above the root and a
 *     symlink with an absolute target are refused (PATH_UNSAFE naming the
 *     field); a relative symlink that stays inside is followed like the
 *     kernel would. The result is a path inside the root with no symlink in
 *     it. The only string step maps an absolute path onto the root the user
 *     named (its exact leading components), and a relative one onto the
 *     spec's directory (a real path, so its `..` are exact).
 *  2. `withBeneath` then reaches that path from the root one component at a
 *     time, each directory opened with O_NOFOLLOW through the descriptor of
 *     the one before (core's openDirIn), and hands the caller a descriptor
 *     path for the last component, which the caller opens with O_NOFOLLOW
 *     too (core's bounded reader, the tree area's directory reader). So a
 *     component swapped for a symlink between step 1 and the read (TOCTOU)
 *     is refused, never followed: what is read is what lies beneath the root.
 */
import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import { isAbsolute, join, relative, resolve } from "node:path";
import { CairnError, ioError, withDirIn } from "../core/index.ts";
import { resolveInRootSync, type RootNode } from "./in-root.ts";

/** Where a document's host paths may lead. */
export interface HostScope {
  /** The directory every read stays in: the document's own, or one the user named (`--inputs-root`). */
  readonly root: string;
  /** The directory a relative path starts from (the document's). */
  readonly base: string;
  /** Whether an absolute path is taken (inside `root`): only when the user named the root. */
  readonly absolute: boolean;
  /** How messages name the root: "the spec's directory", "--inputs-root /data". */
  readonly rootName: string;
  /** The flag that widens the scope, for hints ("--inputs-root DIR"). */
  readonly flag: string;
}

/** The flag that names a wider root for every host path a spec names. */
export const HOST_ROOT_FLAG = "--inputs-root";

/**
 * The scope of a spec's host paths: relative to `base` (the spec's
 * directory) and inside it, or anywhere inside `root` (absolute paths too)
 * when the user named one with --inputs-root. The one definition for every
 * field (the workload source, run inputs, the served directory).
 */
export function specHostScope(base: string, root?: string): HostScope {
  return root === undefined
    ? { root: base, base, absolute: false, rootName: "the spec's directory", flag: `${HOST_ROOT_FLAG} DIR` }
    : { root, base, absolute: true, rootName: `${HOST_ROOT_FLAG} ${root}`, flag: `${HOST_ROOT_FLAG} DIR` };
}

/**
 * The host path a spec's field names, checked to lie beneath the scope
 * (PATH_UNSAFE naming `field` otherwise): its symlink-free path, or, when
 * nothing is there, the path as given against `base` (so the reader's own
 * "missing" error names it).
 */
export function hostPathBeneath(scope: HostScope, unsafePath: string, field: string): string {
  return resolveBeneath(scope, unsafePath, field)?.shown ?? resolve(scope.base, unsafePath);
}

/** A path resolved beneath a root: no symlink in `rel` when it was resolved. */
export interface BeneathPath {
  /** The root's real path. */
  readonly root: string;
  /** "" for the root itself, else "a/b" (no `.`, `..` or empty component). */
  readonly rel: string;
  /** The host path, for messages. */
  readonly shown: string;
}

function realDir(dir: string): string {
  try {
    return realpathSync(dir);
  } catch (cause) {
    throw ioError(dir, cause);
  }
}

/** Looks at one path inside `root` without following its last component (the resolver never asks below a symlink). */
function hostLookup(root: string): (p: string) => RootNode | undefined {
  return (p) => {
    const abs = root === "/" ? p : `${root}${p}`;
    try {
      const st = lstatSync(abs);
      if (st.isSymbolicLink()) return { type: "symlink", target: readlinkSync(abs, "utf8") };
      return { type: st.isDirectory() ? "dir" : st.isFile() ? "file" : "other" };
    } catch (cause) {
      const code = (cause as { code?: string }).code;
      if (code === "ENOENT" || code === "ENOTDIR") return undefined;
      throw ioError(abs, cause);
    }
  };
}

/** What follows `root`'s own components at the start of `unsafePath`, or undefined when it does not start with them. */
function below(unsafePath: string, root: string): string | undefined {
  if (unsafePath === root) return "";
  const head = root.endsWith("/") ? root : `${root}/`;
  return unsafePath.startsWith(head) ? unsafePath.slice(head.length) : undefined;
}

/**
 * Resolves `unsafePath` (a document's field `field`) beneath `scope.root`.
 * Returns undefined when nothing is there; PATH_UNSAFE naming `field` when
 * it is absolute without a named root, or leads out of the root.
 */
export function resolveBeneath(scope: HostScope, unsafePath: string, field: string): BeneathPath | undefined {
  const refuse = (why: string, cause?: unknown): never => {
    throw new CairnError("PATH_UNSAFE", `${field}: ${unsafePath} ${why}`, {
      path: field,
      cause,
      hint: `a spec names host files inside its own directory, with relative paths; to read files elsewhere, pass ${scope.flag} naming a directory that holds them`,
    });
  };
  const root = realDir(scope.root);
  let inRoot: string;
  if (isAbsolute(unsafePath)) {
    if (!scope.absolute) refuse("is an absolute path; cairn reads only what lies inside the spec's directory");
    const rest = below(unsafePath, resolve(scope.root)) ?? below(unsafePath, root);
    if (rest === undefined) refuse(`is outside ${scope.rootName}`);
    inRoot = rest!;
  } else {
    const prefix = relative(root, realDir(scope.base));
    if (prefix === ".." || prefix.startsWith("../") || isAbsolute(prefix)) refuse(`is relative to the spec's directory, which is outside ${scope.rootName}`);
    inRoot = prefix === "" ? unsafePath : `${prefix}/${unsafePath}`;
  }
  let resolved: string | undefined;
  try {
    resolved = resolveInRootSync(hostLookup(root), `/${inRoot}`, "beneath");
  } catch (e) {
    if (e instanceof CairnError && e.code === "PATH_UNSAFE") refuse(`leads out of ${scope.rootName} ${root}: ${e.message}`, e);
    // a symlink loop or chain (tree.max_symlink_hops): the same code and limit, naming the field rather than the in-root path
    if (e instanceof CairnError) throw new CairnError(e.code, `${field}: ${unsafePath}: ${e.message}`, { path: field, hint: e.hint, cause: e });
    throw e;
  }
  if (resolved === undefined) return undefined;
  return { root, rel: resolved.slice(1), shown: resolved === "/" ? root : join(root, resolved) };
}

/**
 * Runs `fn` with a path that reaches `p` through the held descriptor of its
 * parent directory, itself reached from the root without following any
 * symlink (see the header). `fn` must open it with O_NOFOLLOW (core's
 * bounded reader and the tree area's directory reader do). The root itself
 * is handed over by its real path.
 */
export function withBeneath<T>(p: BeneathPath, fn: (at: string) => T): T {
  if (p.rel === "") return fn(p.root);
  const i = p.rel.lastIndexOf("/");
  return withDirIn(p.root, i < 0 ? "" : p.rel.slice(0, i), (dir) => fn(`${dir}/${p.rel.slice(i + 1)}`));
}
