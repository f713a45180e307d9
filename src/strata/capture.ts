/**
 * `cairn layer capture`: an existing install (a directory tree, a conda
 * environment, an Lmod module and its software) becomes a signed layer whose
 * manifest records where it was installed (`original_prefix`), how it was
 * found (`capture_source`) and whether its bytes were rewritten
 * (`normalized`, with the paths rewritten and the binaries left).
 *
 * Where the tree goes in the layer is the install layout:
 *  - `prefix` (the default): under `/opt/NAME/VERSION`, where the layer
 *    mounts it; every absolute mention of the install root is normalized by
 *    capture-rewrite.ts's one rule (text rewritten, binaries left and named),
 *    and an absolute symlink into the install root is pointed at the same
 *    place under the mount path;
 *  - `rootfs`: at the install root itself, so every path it names stays
 *    true and nothing is rewritten (`normalized: false`).
 *
 * The tree is read by the tree floor's one directory reader (never following
 * a link; sockets, FIFOs and devices refused; hard links captured as the
 * bytes they share). On top of it a capture refuses what a layer would
 * silently change or what would reach outside the tree: a setuid or setgid
 * file (CAPTURE_REFUSED: a layer keeps only the execute bits), a symlink whose
 * target leaves the tree (PATH_UNSAFE), and a path the layer tar gate would
 * refuse when the layer is read back (capture.max_path_bytes,
 * capture.max_depth, the gate's own defaults). Every check runs before the blob
 * is written, and the blob is a private staged file the caller publishes only
 * when all of it succeeded. Owners, mtimes and modes are normalized as
 * `layer build` does, so the same bytes in give the same layer digest.
 */
import { lstatSync, realpathSync, type Stats } from "node:fs";
import { join, resolve as resolvePath } from "node:path";
import { CairnError, checkLimit, FIXED_LIMIT_HINT, ioError } from "../core/index.ts";
import {
  DEFAULT_DIR_LIMITS,
  DEFAULT_LIMITS,
  linkLeavesRoot,
  readDirectoryStreamed,
  streamedRegular,
  type DirLimits,
  type TarStreamEntry,
} from "../tree/index.ts";
import { writeLayerBlob, type LayerBlobFile } from "./blob.ts";
import { checkSpec, layoutPrefix, manifestFor, type LayerSpec } from "./build.ts";
import { checkedContent, rewritePrefix, rewrittenContent, scanContent, type FileScan } from "./capture-rewrite.ts";
import { DEFAULT_MODULEPATH, findLmodModule, readCondaMeta, type LmodModule } from "./capture-sources.ts";
import { isLayerPath, normalizeSources, type CaptureRecord, type CaptureSource, type LayerManifest } from "./layer-manifest.ts";
import { generateModulefile, modulefilePath, withModulefile } from "./modulefile.ts";

/** capture.max_path_bytes and capture.max_depth: the layer tar gate's defaults, so a captured layer reads back. */
export const MAX_CAPTURE_PATH_BYTES = DEFAULT_LIMITS.pathLength;
export const MAX_CAPTURE_DEPTH = DEFAULT_LIMITS.depth;

export interface CaptureOptions {
  readonly source: CaptureSource;
  /** `--prefix`: the absolute install root (default: see originalPrefix). Unchecked until capture reads it. */
  readonly unsafePrefix?: string;
  /** lmod: the module path inside the tree (default `modulefiles`). */
  readonly modulepath?: string;
  /** Refuse (CAPTURE_REFUSED) when a binary file still names the install root after normalization. */
  readonly requireRelocatable?: boolean;
}

/** What a capture did, for the command's report (the signed record holds the same facts as `build.capture`). */
export interface CaptureReport extends CaptureRecord {
  /** Where the tree is in the layer (`/opt/NAME/VERSION`, or the install root for rootfs layout). */
  readonly mount_path: string;
  /** conda: `name@version` of each package record. */
  readonly packages?: readonly string[];
  /** lmod: the modulefile found, and whether the layer carries it (a Tcl modulefile is not carried: a layer's modulefile is Lua). */
  readonly modulefile?: { readonly path: string; readonly kind: "lua" | "tcl"; readonly carried: boolean };
}

function absolutePrefix(unsafe: string): string {
  // A relative or unnormalized prefix would be rewritten in the wrong places (or nowhere) and recorded as something it is not.
  if (!isLayerPath(unsafe))
    throw new CairnError("USAGE", `--prefix ${JSON.stringify(unsafe).slice(0, 80)} is not an absolute normalized path`, { path: "--prefix" });
  return unsafe;
}

function realPath(dir: string): string {
  try {
    return realpathSync(dir);
  } catch (cause) {
    throw ioError(dir, cause);
  }
}

function checkPath(path: string, shown: string): void {
  checkLimit("capture.max_path_bytes", Buffer.byteLength(path) + 1, MAX_CAPTURE_PATH_BYTES, shown, "bytes", FIXED_LIMIT_HINT);
  checkLimit("capture.max_depth", path.split("/").length, MAX_CAPTURE_DEPTH, shown, "count", FIXED_LIMIT_HINT);
}

interface Walked {
  readonly entries: TarStreamEntry[];
  readonly rewritten: string[];
  readonly left: string[];
  readonly scans: Map<string, FileScan>;
}

/**
 * The tree's entries under `layerRoot`, checked and normalized: `from` (the
 * install root) becomes `to` (the mount path) in text files and symlink
 * targets; when they are equal nothing is scanned or rewritten.
 */
function walkTree(walkRoot: string, layerRoot: string, from: string, to: string, limits: DirLimits): Walked {
  const rewritten: string[] = [];
  const left: string[] = [];
  const scans = new Map<string, FileScan>();
  const fromBuf = Buffer.from(from);
  const toBuf = Buffer.from(to);
  const relocate = from !== to;
  const strip = layerRoot.length + 1;
  const entries = readDirectoryStreamed(walkRoot, layerRoot, limits).map((e): TarStreamEntry => {
    if (e.path.length < strip) return e; // the layout's own parent directories
    const rel = e.path.slice(strip);
    const shown = `${walkRoot}/${rel}`;
    checkPath(e.path, shown);
    if (e.type === "symlink") {
      if (e.target.startsWith("/")) {
        if (e.target !== from && !e.target.startsWith(`${from}/`)) {
          throw new CairnError("PATH_UNSAFE", `${shown} is a symlink to ${e.target}, outside the captured install ${from}`, {
            path: shown,
            hint: "a layer holds only the install's own bytes; replace the link by what it points to, or capture the tree it points into",
          });
        }
        if (!relocate) return e;
        rewritten.push(`/${e.path}`);
        return { ...e, target: to + e.target.slice(from.length) };
      }
      if (linkLeavesRoot(rel, e.target)) {
        throw new CairnError("PATH_UNSAFE", `${shown} is a symlink that climbs out of the captured install (${e.target})`, {
          path: shown,
          hint: "a layer holds only the install's own bytes; replace the link by what it points to",
        });
      }
      return e;
    }
    if (e.type === "dir") return e;
    if ((e.mode & 0o6000) !== 0) {
      throw new CairnError(
        "CAPTURE_REFUSED",
        `${shown} is setuid or setgid; a layer keeps only a file's execute bits, so the capture would silently drop them`,
        {
          path: shown,
          hint: "clear the bit (chmod u-s,g-s) if the file does not need it; a layer cannot grant privileges",
        },
      );
    }
    if (!relocate) return e;
    const scan = scanContent(e.content, fromBuf);
    scans.set(`/${e.path}`, scan);
    if (!scan.namesPrefix) return { ...e, content: checkedContent(e.content, scan, shown) };
    if (scan.binary) {
      left.push(`/${e.path}`);
      return { ...e, content: checkedContent(e.content, scan, shown) };
    }
    // Rewritten as it is written, a chunk at a time: the tree's size does not bound memory.
    rewritten.push(`/${e.path}`);
    return { ...e, content: rewrittenContent(e.content, scan, fromBuf, toBuf, shown) };
  });
  return { entries, rewritten, left, scans };
}

/**
 * conda writes the environment's prefix into the text files its records
 * mark (`prefix_placeholder`); each one present as a regular file must name
 * the prefix, or the prefix is not this environment's (CAPTURE_REFUSED
 * naming the first). Read as the tree is, never through a symlink; returns how many confirmed it.
 */
function checkCondaPrefix(dir: string, prefixText: readonly string[], prefix: string): number {
  const prefixBuf = Buffer.from(prefix);
  let confirmed = 0;
  for (const rel of prefixText) {
    const at = join(dir, rel);
    let st: Stats;
    try {
      st = lstatSync(at);
    } catch {
      continue; // a file the record lists but the environment no longer holds
    }
    // Only the environment's own files: a directory on the way that is a symlink out of it is not followed (the walk refuses it later).
    if (!st.isFile() || !realPath(at).startsWith(`${realPath(dir)}/`)) continue;
    const scan = scanContent(streamedRegular(at, st.size), prefixBuf);
    if (!scan.binary && !scan.namesPrefix) {
      throw new CairnError("CAPTURE_REFUSED", `conda-meta says conda wrote the environment's prefix into ${rel}, but it does not name ${prefix}`, {
        path: at,
        hint: "pass the directory the environment was installed at with --prefix",
      });
    }
    confirmed++;
  }
  return confirmed;
}

/**
 * Captures `dir` as a layer streamed to the new private file `out`. The
 * caller publishes blob and manifest; nothing is written anywhere else.
 */
export async function captureLayer(
  dir: string,
  spec: LayerSpec,
  options: CaptureOptions,
  out: string,
  limits: DirLimits = DEFAULT_DIR_LIMITS,
): Promise<{ blob: LayerBlobFile; manifest: LayerManifest; report: CaptureReport }> {
  checkSpec(spec);
  if (options.modulepath !== undefined && options.source !== "lmod")
    throw new CairnError("USAGE", "--modulepath is for --source lmod", { path: "--modulepath" });
  const given = options.unsafePrefix === undefined ? undefined : absolutePrefix(options.unsafePrefix);
  const absDir = resolvePath(dir);
  let walkRoot = absDir;
  let prefix: string;
  let packages: readonly string[] | undefined;
  let prefixText: readonly string[] = [];
  let module: LmodModule | undefined;
  let fromHistory = false;
  if (options.source === "lmod") {
    module = findLmodModule(absDir, spec.name, spec.version, options.modulepath ?? DEFAULT_MODULEPATH, given);
    walkRoot = module.root;
    prefix = module.root;
  } else if (options.source === "conda") {
    const env = readCondaMeta(absDir);
    packages = env.packages;
    prefixText = env.prefixText;
    const here = realPath(absDir);
    prefix = given ?? env.historyPrefix ?? here;
    fromHistory = given === undefined && env.historyPrefix !== undefined && env.historyPrefix !== here;
  } else {
    prefix = given ?? realPath(absDir);
  }
  const layerRoot = spec.install_layout === "prefix" ? layoutPrefix(spec) : prefix.slice(1);
  const mountPath = `/${layerRoot}`;
  if (options.source === "conda" && checkCondaPrefix(absDir, prefixText, prefix) === 0 && fromHistory) {
    // A history's claim alone (`-p /etc`) would rewrite that path in every text file: it must be confirmed by a file conda wrote it into.
    throw new CairnError("CAPTURE_REFUSED", `conda-meta/history names the prefix ${prefix}, but no file conda wrote the prefix into confirms it`, {
      path: join(absDir, "conda-meta", "history"),
      hint: "pass the directory the environment was installed at with --prefix",
    });
  }
  const walked = walkTree(walkRoot, layerRoot, prefix, mountPath, limits);
  let entries = walked.entries;
  let carried: string | undefined;
  if (module?.kind === "lua") {
    if (spec.modulefile !== undefined)
      throw new CairnError("USAGE", "an Lmod capture carries the module's own modulefile; --generate-modulefile is for a Tcl module or another source");
    const text =
      prefix === mountPath
        ? module.text
        : (rewritePrefix(Buffer.from(module.text), Buffer.from(prefix), Buffer.from(mountPath))?.toString("utf8") ?? module.text);
    if (text !== module.text) walked.rewritten.push(modulefilePath(spec.name, spec.version));
    entries = withModulefile(entries, spec.name, spec.version, text);
    carried = text;
  } else if (spec.modulefile !== undefined) {
    const mf = spec.modulefile;
    const dirs = new Set(entries.filter((e) => e.type === "dir").map((e) => e.path));
    const text =
      mf.kind === "given"
        ? mf.text
        : generateModulefile({ name: spec.name, version: spec.version, prefix: layerRoot, provides: spec.provides, env: mf.env }, dirs);
    entries = withModulefile(entries, spec.name, spec.version, text);
  }
  const rewritten = normalizeSources(walked.rewritten);
  const left = normalizeSources(walked.left);
  if (options.requireRelocatable === true && left.length > 0) {
    throw new CairnError(
      "CAPTURE_REFUSED",
      `${left.length} binary file(s) still name the install root ${prefix} after normalization: ${left.slice(0, 5).join(", ")}${left.length > 5 ? ", …" : ""}`,
      {
        path: left[0]!,
        hint: "rebuild them relocatable (relative RPATH, $ORIGIN), capture with --install-layout rootfs to keep the install root, or drop --require-relocatable",
      },
    );
  }
  const record: CaptureRecord = { source: options.source, original_prefix: prefix, normalized: rewritten.length > 0, rewritten, left };
  const finalSpec: LayerSpec = {
    ...spec,
    recorded: { ...spec.recorded, capture: record },
    ...(carried !== undefined ? { modulefile: { kind: "given", text: carried } } : {}),
  };
  const blob = await writeLayerBlob(entries, out);
  const report: CaptureReport = {
    ...record,
    mount_path: mountPath,
    ...(packages !== undefined ? { packages } : {}),
    ...(module !== undefined ? { modulefile: { path: module.path, kind: module.kind, carried: carried !== undefined } } : {}),
  };
  return { blob, manifest: manifestFor(finalSpec, blob), report };
}
