/**
 * A read-only view of a root filesystem, the only thing the base probe sees:
 * either a directory on this machine (`directoryView("/")` is the host) or a
 * canonical tree with the file bytes a layer application kept (`treeView`,
 * an OCI image). The probe does not know which.
 *
 * A view never follows symlinks itself: `lookup` reports them and callers
 * resolve paths inside the root with `resolveInRoot` (in-root.ts), so a link
 * can never lead a reader out of the root.
 */
import { lstatSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { readFilePrefix, type Sha256Digest } from "../core/index.ts";
import type { CanonicalTree } from "./entries.ts";
import type { RootNode } from "./in-root.ts";
import { parentOf } from "./tree-paths.ts";

export interface RootView {
  /** The bytes of the regular file at `path` (no symlink in it), at most `maxBytes`; undefined when absent or not a file. */
  readFile(path: string, maxBytes: number): Promise<Uint8Array | undefined>;
  /** What `path` (no symlink before its last component) names, without following a final symlink; undefined when absent. */
  lookup(path: string): Promise<RootNode | undefined>;
  /** Names in the directory at `path`, sorted, or undefined when it is not a directory. */
  list(path: string): Promise<string[] | undefined>;
}

/** A view of a directory on this machine (`/` for the host). */
export function directoryView(root: string): RootView {
  const abs = (p: string): string => join(root, ...p.split("/").filter((s) => s !== "" && s !== "." && s !== ".."));
  return {
    async readFile(path, maxBytes) {
      return readFilePrefix(abs(path), maxBytes);
    },
    async lookup(path) {
      try {
        const st = lstatSync(abs(path));
        if (st.isSymbolicLink()) return { type: "symlink", target: readlinkSync(abs(path), "utf8") };
        return { type: st.isDirectory() ? "dir" : st.isFile() ? "file" : "other" };
      } catch {
        return undefined;
      }
    },
    async list(path) {
      try {
        if (!lstatSync(abs(path)).isDirectory()) return undefined;
        return readdirSync(abs(path)).sort();
      } catch {
        return undefined;
      }
    },
  };
}

/** A view of a canonical tree and the file bytes its content sink kept (files whose bytes were not kept read as absent). */
export function treeView(tree: CanonicalTree, content: ReadonlyMap<Sha256Digest, Uint8Array>): RootView {
  const children = new Map<string, string[]>();
  for (const path of tree.keys()) {
    if (path === "/") continue;
    const parent = parentOf(path);
    const list = children.get(parent) ?? [];
    list.push(path.slice(path.lastIndexOf("/") + 1));
    children.set(parent, list);
  }
  const norm = (p: string): string => (p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p);
  return {
    async readFile(path, maxBytes) {
      const e = tree.get(norm(path));
      if (e?.type !== "file") return undefined;
      const bytes = content.get(e.sha256);
      return bytes?.subarray(0, Math.min(bytes.length, maxBytes));
    },
    async lookup(path) {
      return tree.get(norm(path));
    },
    async list(path) {
      const e = tree.get(norm(path));
      return e?.type === "dir" ? [...(children.get(norm(path)) ?? [])].sort() : undefined;
    },
  };
}
