/**
 * The mutable in-memory tree that layer application edits, base layer to
 * top, before anything is written anywhere. Invariant: every ancestor of an
 * entry is a directory entry (callers put entries only under directories,
 * and replacing a directory by anything else removes its subtree), which
 * lets parent checks stop at the parent. It keeps a child index so that
 * removing a subtree (replacement, whiteout, opaque directory) costs the
 * size of that subtree, not of the whole tree; the index is built on the
 * first removal of a directory (or listing of one), so the layers of an
 * image that never removes a directory (a single layer, most often) cost no
 * set of children per directory. It never touches the host
 * filesystem; `freeze()` yields the canonical tree (sorted by UTF-8 path
 * bytes, every directory explicit, "/" included).
 */
import type { CanonicalTree, DirEntry, FsEntry } from "./entries.ts";
import { FrozenTree } from "./frozen-tree.ts";
import { PathMap } from "./path-map.ts";
import { parentOf } from "./tree-paths.ts";

/** Attributes of directories cairn creates because a member needed a parent that no member named. */
export const IMPLICIT_DIR = Object.freeze({ mode: 0o755, uid: 0, gid: 0, mtime: 0 });

export class TreeModel {
  /** By path; a PathMap (chunks and int32 slots) rather than a Map: see path-map.ts. */
  readonly #entries = new PathMap<FsEntry>();
  /** Children (full paths) of every directory; undefined until a directory is first removed or listed. */
  #children: Map<string, Set<string>> | undefined;

  constructor() {
    const root: DirEntry = { path: "/", type: "dir", ...IMPLICIT_DIR };
    this.#entries.set("/", root);
  }

  get(path: string): FsEntry | undefined {
    return this.#entries.get(path);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The child index, built from the entries on first use and kept up to date from then on. */
  #index(): Map<string, Set<string>> {
    if (this.#children === undefined) {
      const index = new Map<string, Set<string>>();
      for (const e of this.#entries.values()) if (e.type === "dir") index.set(e.path, new Set());
      for (const p of this.#entries.keys()) if (p !== "/") index.get(parentOf(p))!.add(p);
      this.#children = index;
    }
    return this.#children;
  }

  /** Children of a directory (full paths); empty for anything else. */
  children(dir: string): readonly string[] {
    return [...(this.#index().get(dir) ?? [])];
  }

  /**
   * Puts `entry` at its path. The parent must already be a directory (the
   * caller decides that). Replacing a directory by a directory keeps its
   * children; replacing anything else removes the old subtree first.
   */
  set(entry: FsEntry): void {
    const old = this.#entries.get(entry.path);
    if (old !== undefined && !(old.type === "dir" && entry.type === "dir")) this.remove(entry.path);
    this.#entries.set(entry.path, entry);
    const index = this.#children;
    if (index === undefined) return;
    if (entry.type === "dir" && !index.has(entry.path)) index.set(entry.path, new Set());
    if (entry.path !== "/") index.get(parentOf(entry.path))?.add(entry.path);
  }

  /** Removes `path` and everything beneath it; the root itself is never removed. */
  remove(path: string): void {
    const e = this.#entries.get(path);
    if (path === "/" || e === undefined) return;
    if (e.type !== "dir" && this.#children === undefined) {
      this.#entries.delete(path); // no subtree, and no index to keep
      return;
    }
    const index = this.#index();
    const stack = [path];
    while (stack.length > 0) {
      const p = stack.pop()!;
      const kids = index.get(p);
      if (kids !== undefined) {
        for (const k of kids) stack.push(k); // not push(...kids): a directory of 200,000 children would overflow the call stack
        index.delete(p);
      }
      this.#entries.delete(p);
    }
    index.get(parentOf(path))?.delete(path);
  }

  /** The canonical tree (a FrozenTree: one sorted array, no second table). */
  freeze(): CanonicalTree {
    return FrozenTree.fromEntries([...this.#entries.values()]);
  }
}
