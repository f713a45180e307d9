/**
 * What `layer capture` reads about an install besides its files: a conda
 * environment's `conda-meta` and an Lmod tree's modulefile. Both are hostile
 * input like the tree: read by the bounded reader (never through a symlink),
 * parsed strictly, every path checked before it is used. Nothing here runs
 * conda, Lmod or a modulefile.
 *
 *  - conda: an environment is a directory with `conda-meta/`, whose
 *    `<package>.json` records list each package's `files` and, in
 *    `paths_data`, which files conda wrote the environment's prefix into at
 *    install (`prefix_placeholder`, `file_mode`). conda records no prefix
 *    field: the prefix is where the environment was installed, which
 *    `conda-meta/history` names when it was made with `--prefix`/`-p`
 *    (its last `# cmd:` line saying so); capture.ts then checks every text
 *    file conda says it wrote the prefix into does name it.
 *  - lmod: a tree holding modulefiles under a module path (`modulefiles/`
 *    by default) and the software they point to. The module NAME/VERSION is
 *    `NAME/VERSION.lua` (Lua, preferred as Lmod prefers it) or `NAME/VERSION`
 *    (Tcl, starting `#%Module`); its software root is the one directory
 *    `…/NAME/VERSION` the modulefile names by absolute path (the
 *    EasyBuild/Spack convention), or `--prefix`.
 */
import { lstatSync, readdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { CairnError, checkLimit, decodeUtf8, FIXED_LIMIT_HINT, ioError, isJsonObject, parseJsonBytes, readFileBounded, type JsonModel } from "../core/index.ts";
import { isLayerPath } from "./layer-manifest.ts";
import { checkModulefile, MAX_MODULEFILE_BYTES } from "./modulefile.ts";

/** capture.max_conda_record_bytes: one `conda-meta/*.json` record or `history`. */
export const MAX_CONDA_RECORD_BYTES = 64 * 1024 * 1024;
/** capture.max_conda_records: `conda-meta` entries read. */
export const MAX_CONDA_RECORDS = 100_000;

export interface CondaEnv {
  /** `name@version` of each package record, sorted. */
  readonly packages: readonly string[];
  /** The prefix the last `# cmd:` line of `conda-meta/history` gives with --prefix/-p, when absolute. */
  readonly historyPrefix?: string;
  /** Paths (relative to the environment) conda says it wrote the prefix into as text. */
  readonly prefixText: readonly string[];
}

const refuse = (message: string, path: string, hint?: string): CairnError => new CairnError("CAPTURE_REFUSED", message, { path, ...(hint ? { hint } : {}) });

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch (cause) {
    if ((cause as { code?: string }).code === "ENOENT") return undefined;
    throw ioError(path, cause);
  }
}

/** A relative path a record names: no absolute path, no `..`, no empty component (a record naming `../../etc/x` is refused). */
function relativePath(v: JsonModel | undefined, where: string): string {
  if (typeof v !== "string" || v.startsWith("/") || v.split("/").some((s) => s === "" || s === "." || s === "..") || v.includes("\0"))
    throw refuse(`${where} is not a relative path inside the environment`, where);
  return v;
}

/** Reads `DIR/conda-meta` (CAPTURE_REFUSED when absent or malformed: DIR is then not a conda environment). */
export function readCondaMeta(dir: string): CondaEnv {
  const meta = join(dir, "conda-meta");
  const st = lstatOrUndefined(meta);
  if (st === undefined || !st.isDirectory()) {
    throw refuse(
      `${dir} has no conda-meta directory, so it is not a conda environment`,
      meta,
      "capture it with --source filesystem, or name the environment's directory",
    );
  }
  let names: string[];
  try {
    names = readdirSync(meta).sort();
  } catch (cause) {
    throw ioError(meta, cause);
  }
  checkLimit("capture.max_conda_records", names.length, MAX_CONDA_RECORDS, meta, "count", FIXED_LIMIT_HINT);
  const packages: string[] = [];
  const prefixText: string[] = [];
  let historyPrefix: string | undefined;
  for (const name of names) {
    const at = join(meta, name);
    if (name === "history") {
      historyPrefix = prefixFromHistory(readFileBounded(at, MAX_CONDA_RECORD_BYTES, "capture.max_conda_record_bytes", { limitHint: FIXED_LIMIT_HINT }), at);
      continue;
    }
    if (!name.endsWith(".json")) continue;
    const v = parseJsonBytes(readFileBounded(at, MAX_CONDA_RECORD_BYTES, "capture.max_conda_record_bytes", { limitHint: FIXED_LIMIT_HINT }), {
      source: at,
    });
    if (!isJsonObject(v) || typeof v.name !== "string" || typeof v.version !== "string")
      throw refuse(`${at} is not a conda package record (an object with a name and a version)`, at);
    packages.push(`${v.name}@${v.version}`);
    if (v.files !== undefined) {
      if (!Array.isArray(v.files)) throw refuse(`${at}: files is not a list`, `${at}#/files`);
      v.files.forEach((f, i) => {
        relativePath(f, `${at}#/files/${i}`);
      });
    }
    const pd = v.paths_data;
    if (pd === undefined) continue;
    if (!isJsonObject(pd) || !Array.isArray(pd.paths)) throw refuse(`${at}: paths_data.paths is not a list`, `${at}#/paths_data`);
    pd.paths.forEach((p, i) => {
      const where = `${at}#/paths_data/paths/${i}`;
      if (!isJsonObject(p)) throw refuse(`${where} is not an object`, where);
      const path = relativePath(p._path, `${where}/_path`);
      if (typeof p.prefix_placeholder === "string" && p.file_mode !== "binary") prefixText.push(path);
    });
  }
  return { packages: packages.sort(), ...(historyPrefix !== undefined ? { historyPrefix } : {}), prefixText: [...new Set(prefixText)].sort() };
}

/** The absolute prefix the last `# cmd:` line of conda's history names with --prefix/-p, if any. */
function prefixFromHistory(bytes: Buffer, where: string): string | undefined {
  let found: string | undefined;
  for (const line of decodeUtf8(bytes, where).split("\n")) {
    if (!line.startsWith("# cmd:")) continue;
    const words = line.slice(6).trim().split(/\s+/);
    for (let i = 0; i < words.length; i++) {
      const w = words[i]!;
      const value = w === "-p" || w === "--prefix" ? words[i + 1] : w.startsWith("--prefix=") ? w.slice(9) : undefined;
      if (value !== undefined) found = isLayerPath(value.replace(/\/+$/, "")) ? value.replace(/\/+$/, "") : undefined;
    }
  }
  return found;
}

export interface LmodModule {
  /** The modulefile's path on this machine. */
  readonly path: string;
  readonly kind: "lua" | "tcl";
  readonly text: string;
  /** The software root: an absolute directory inside the tree. */
  readonly root: string;
}

/** The module path inside an Lmod tree when none is given. */
export const DEFAULT_MODULEPATH = "modulefiles";

/** Finds module NAME/VERSION in the Lmod tree `treeDir` and its software root (see the rule above). */
export function findLmodModule(treeDir: string, name: string, version: string, unsafeModulepath: string, unsafePrefix?: string): LmodModule {
  if (unsafeModulepath.startsWith("/") || unsafeModulepath.split("/").some((s) => s === "" || s === "." || s === ".."))
    throw new CairnError("USAGE", "--modulepath is a relative path inside the Lmod tree", { path: "--modulepath" });
  let real: string;
  try {
    real = realpathSync(treeDir);
  } catch (cause) {
    throw ioError(treeDir, cause);
  }
  const base = join(real, unsafeModulepath, name);
  const lua = join(base, `${version}.lua`);
  const tcl = join(base, version);
  const kind = lstatOrUndefined(lua)?.isFile() ? "lua" : lstatOrUndefined(tcl)?.isFile() ? "tcl" : undefined;
  if (kind === undefined) {
    throw refuse(
      `the Lmod tree ${treeDir} has no modulefile ${name}/${version} under ${unsafeModulepath} (${lua}, or ${tcl} in Tcl)`,
      base,
      "name the module with --name and --version, and its module path inside the tree with --modulepath",
    );
  }
  const path = kind === "lua" ? lua : tcl;
  // The module path (or a directory in it) may be a symlink out of the tree: the modulefile would be read from elsewhere.
  insideTree(path, real, `the modulefile ${path}`);
  const text = checkModulefile(readFileBounded(path, MAX_MODULEFILE_BYTES, "layer.max_modulefile_bytes", { limitHint: FIXED_LIMIT_HINT }), path);
  if (kind === "tcl" && !text.startsWith("#%Module")) throw refuse(`${path} is neither NAME/VERSION.lua nor a Tcl modulefile (#%Module)`, path);
  const root = unsafePrefix ?? softwareRoot(text, name, version, path);
  if (!isLayerPath(root)) throw new CairnError("USAGE", "--prefix must be an absolute normalized path", { path: "--prefix" });
  if (!root.startsWith(`${real}/`))
    throw refuse(
      `the software root ${root} of ${name}/${version} is not inside the Lmod tree ${real}`,
      path,
      "capture the tree that holds both the modulefiles and the software",
    );
  // A symlinked directory on the way would make a root named inside the tree hold bytes from outside it.
  insideTree(root, real, `the software root ${root}`);
  return { path, kind, text, root };
}

/** Refuses `path` unless it resolves, symlinks followed, to a path inside `realTree`. */
function insideTree(path: string, realTree: string, what: string): void {
  let resolved: string;
  try {
    resolved = realpathSync(path);
  } catch (cause) {
    throw ioError(path, cause);
  }
  if (!resolved.startsWith(`${realTree}/`))
    throw refuse(
      `${what} resolves to ${resolved}, outside the Lmod tree ${realTree} (through a symlink)`,
      path,
      "capture the tree where the module and its software really are",
    );
}

/** The one directory `…/NAME/VERSION` the modulefile names by absolute path. */
function softwareRoot(text: string, name: string, version: string, where: string): string {
  const tail = `/${name}/${version}`;
  const roots = new Set<string>();
  for (const m of text.matchAll(/\/[A-Za-z0-9._+~@%/-]+/g)) {
    const p = m[0];
    for (let at = p.indexOf(tail); at >= 0; at = p.indexOf(tail, at + 1)) {
      const end = at + tail.length;
      if (end === p.length || p[end] === "/") roots.add(p.slice(0, end).replace(/\/+/g, "/"));
    }
  }
  if (roots.size !== 1) {
    throw refuse(
      roots.size === 0
        ? `${where} names no directory …${tail}, so its software root is unknown`
        : `${where} names ${roots.size} directories …${tail} (${[...roots].sort().join(", ")}), so its software root is ambiguous`,
      where,
      "give the software root with --prefix",
    );
  }
  return [...roots][0]!;
}
