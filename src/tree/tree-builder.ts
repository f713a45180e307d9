/**
 * The mutable in-memory tree that layer application edits, base layer to
 * top, before anything is written anywhere. Invariant: every ancestor of an
 * entry is a directory entry (callers put entries only under directories,
 * and replacing a directory by anything else removes its subtree), which
 * lets parent checks stop at the parent. It keeps a child index so that
 * removing a subtree (replacement, whiteout, opaque directory) costs the
 * size of that subtree, not of the whole tree. It never touches the host
 * filesystem; `freeze()` yields the canonical tree (sorted by UTF-8 path
 * bytes, every directory explicit, "/" included).
 */
import { sortByBytes } from "../core/index.ts";
import type { CanonicalTree, DirEntry, FsEntry } from "./entries.ts";
import { FrozenTree } from "./frozen-tree.ts";
import { parentOf } from "./tree-paths.ts";

/** Attributes of directories cairn creates because a member needed a parent that no member named. */
export const IMPLICIT_DIR = Object.freeze({ mode: 0o755, uid: 0, gid: 0, mtime: 0 });

export class TreeModel {
  readonly #entries = new Map<string, FsEntry>();
  readonly #children = new Map<string, Set<string>>();

  constructor() {
    const root: DirEntry = { path: "/", type: "dir", ...IMPLICIT_DIR };
    this.#entries.set("/", root);
    this.#children.set("/", new Set());
  }

  get(path: string): FsEntry | undefined {
    return this.#entries.get(path);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Children of a directory (full paths); empty for anything else. */
  children(dir: string): readonly string[] {
    return [...(this.#children.get(dir) ?? [])];
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
    if (entry.type === "dir" && !this.#children.has(entry.path)) this.#children.set(entry.path, new Set());
    if (entry.path !== "/") this.#children.get(parentOf(entry.path))?.add(entry.path);
  }

  /** Removes `path` and everything beneath it; the root itself is never removed. */
  remove(path: string): void {
    if (path === "/" || !this.#entries.has(path)) return;
    const stack = [path];
    while (stack.length > 0) {
      const p = stack.pop()!;
      const kids = this.#children.get(p);
      if (kids !== undefined) {
        stack.push(...kids);
        this.#children.delete(p);
      }
      this.#entries.delete(p);
    }
    this.#children.get(parentOf(path))?.delete(path);
  }

  /** The canonical tree (a FrozenTree: one sorted array, no second table). */
  freeze(): CanonicalTree {
    return new FrozenTree(sortByBytes([...this.#entries.values()], (e) => e.path));
  }
}
