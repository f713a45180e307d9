/**
 * Tree paths, member names and whiteout names. This is the single definition
 * of the canonical path form ("/" or "/a/b"), of parent/ancestor/join on it,
 * of how a tar member name becomes a tree path, and of which names are
 * whiteouts. (A second copy of `parentOf` and the canonical-path check used
 * to live beside `cairn.fs/1`; two copies of a path rule can disagree.)
 *
 * A member name is untrusted (`unsafeName`) until it is normalized here:
 * leading "./" and repeated or trailing "/" are dropped, "." parts vanish,
 * and an absolute name, a NUL, or any ".." part is refused (cairn refuses
 * every "..", escaping or not: no image builder writes them, and refusing
 * them all removes a whole class of resolution bugs).
 */
import { CairnError } from "../core/index.ts";
import { enforceLimit, type LayerLimits } from "./layer-limits.ts";

const WH = ".wh.";
const OPAQUE = ".wh..wh..opq";

/** Normalizes a member name to an absolute tree path ("/" for the root). */
export function normalizeMemberPath(unsafeName: string, limits: LayerLimits, where: string): string {
  if (unsafeName.includes("\0")) throw new CairnError("TAR_UNSAFE_PATH", "member name contains NUL", { path: where });
  if (unsafeName.startsWith("/")) {
    throw new CairnError("TAR_UNSAFE_PATH", `absolute member name ${JSON.stringify(unsafeName.slice(0, 200))}`, {
      path: where,
      hint: "layer members must be relative to the root",
    });
  }
  // One scan over the parts, without splitting (this runs once per member):
  // each part's UTF-8 length is counted in place, and a name that is
  // already canonical (no empty or "." part) becomes its path by one concatenation.
  let depth = 0;
  let bytes = 0;
  let clean = true;
  for (let start = 0; start <= unsafeName.length; ) {
    let end = unsafeName.indexOf("/", start);
    if (end === -1) end = unsafeName.length;
    const len = end - start;
    const dot = len > 0 && unsafeName.charCodeAt(start) === 0x2e;
    if (len === 0 || (len === 1 && dot))
      clean = false; // "a//b", "./a", "a/.", "a/", ""
    else {
      if (len === 2 && dot && unsafeName.charCodeAt(start + 1) === 0x2e)
        throw new CairnError("TAR_UNSAFE_PATH", `member name ${JSON.stringify(unsafeName.slice(0, 200))} has a ".." part`, {
          path: where,
          hint: "'..' in a member name could escape the root; it is always refused",
        });
      const n = utf8Length(unsafeName, start, end);
      enforceLimit(limits, "componentLength", n, where);
      bytes += n;
      depth++;
    }
    start = end + 1;
  }
  enforceLimit(limits, "depth", depth, where);
  enforceLimit(limits, "pathLength", depth === 0 ? 1 : bytes + depth, where);
  if (clean) return `/${unsafeName}`;
  const parts: string[] = [];
  for (const p of unsafeName.split("/")) if (p !== "" && p !== ".") parts.push(p);
  return `/${parts.join("/")}`;
}

/** `Buffer.byteLength(s.slice(start, end))` without the slice: a lone surrogate counts as U+FFFD (3 bytes), as the encoder writes it. */
function utf8Length(s: string, start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < end && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** True for "/" or "/a/b" with no empty, "." or ".." parts, no NUL and no trailing slash (the canonical tree's path form). */
export function isCanonicalPath(p: string): boolean {
  if (p === "/") return true;
  if (p.charCodeAt(0) !== SLASH) return false;
  // one scan, no pieces (this runs for every entry of every tree an identity is computed over):
  // every component between slashes, and the last one, is non-empty, not "." or "..", and holds no NUL
  let start = 1;
  for (let i = 1; i <= p.length; i++) {
    const c = i < p.length ? p.charCodeAt(i) : SLASH;
    if (c === 0) return false;
    if (c !== SLASH) continue;
    const n = i - start;
    if (n === 0 || (n <= 2 && p.charCodeAt(start) === DOT && (n === 1 || p.charCodeAt(start + 1) === DOT))) return false;
    start = i + 1;
  }
  return true;
}

const SLASH = 0x2f;
const DOT = 0x2e;

/** The parent of a canonical path ("/" for "/" and for top-level entries). */
export function parentOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

export function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

export function joinPath(dir: string, name: string): string {
  return dir === "/" ? `/${name}` : `${dir}/${name}`;
}

/** Every proper ancestor of `path`, root first ("/" excluded). */
export function ancestors(path: string): string[] {
  const out: string[] = [];
  let i = path.indexOf("/", 1);
  while (i !== -1) {
    out.push(path.slice(0, i));
    i = path.indexOf("/", i + 1);
  }
  return out;
}

export type WhiteoutKind = { kind: "none" } | { kind: "whiteout"; target: string } | { kind: "opaque"; dir: string };

/**
 * Classifies a normalized member path. `.wh.<name>` whites out `<name>` in
 * the same directory; `.wh..wh..opq` makes its directory opaque. Refused
 * (TAR_WHITEOUT): `.wh.`, `.wh..`, `.wh...` (which would name nothing, the
 * directory itself, or its parent), any other `.wh..wh.` name (reserved by
 * the OCI spec), and a whiteout-named component that is not the last one.
 */
export function classifyWhiteout(path: string, where: string): WhiteoutKind {
  if (!path.includes(WH)) return { kind: "none" };
  const parts = path.split("/");
  for (let i = 1; i < parts.length - 1; i++) {
    if (parts[i]!.startsWith(WH)) throw new CairnError("TAR_WHITEOUT", `whiteout name ${JSON.stringify(parts[i])} used as a directory`, { path: where });
  }
  const base = baseName(path);
  if (!base.startsWith(WH)) return { kind: "none" };
  const dir = parentOf(path);
  if (base === OPAQUE) return { kind: "opaque", dir };
  const target = base.slice(WH.length);
  if (target === "" || target === "." || target === ".." || target.startsWith(WH)) {
    throw new CairnError("TAR_WHITEOUT", `invalid whiteout name ${JSON.stringify(base)}`, {
      path: where,
      hint: "'.wh.', '.wh..', '.wh...' and '.wh..wh.*' (other than .wh..wh..opq) are refused",
    });
  }
  return { kind: "whiteout", target: joinPath(dir, target) };
}
