/**
 * Resolves a path inside a canonical tree the way the guest kernel will,
 * following symlinks (absolute targets from the tree's root, relative ones
 * from the link's directory), without ever touching the host file system.
 * Used to check at assembly that the program a launch names exists, so a
 * broken image is refused here rather than failing inside a run.
 */
import { parentOf } from "./fs-identity.ts";
import type { CanonicalTree, FsEntry } from "./tree.ts";

/** The kernel's limit on symlinks followed in one lookup. */
export const MAX_SYMLINK_HOPS = 40;

function join(dir: string, name: string): string {
  return dir === "/" ? `/${name}` : `${dir}/${name}`;
}

/** The entry `path` names after following symlinks, or undefined when it does not resolve. */
export function resolveInTree(tree: CanonicalTree, path: string): FsEntry | undefined {
  let hops = 0;
  const pending = path.split("/").filter((p) => p !== "");
  let cur = "/";
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === ".") continue;
    if (part === "..") {
      cur = parentOf(cur);
      continue;
    }
    const next = join(cur, part);
    const e = tree.get(next);
    if (e === undefined) return undefined;
    if (e.type === "symlink") {
      if (++hops > MAX_SYMLINK_HOPS) return undefined;
      pending.unshift(...e.target.split("/").filter((p) => p !== ""));
      if (e.target.startsWith("/")) cur = "/";
      continue;
    }
    if (e.type !== "dir" && pending.length > 0) return undefined;
    cur = next;
  }
  return tree.get(cur);
}
