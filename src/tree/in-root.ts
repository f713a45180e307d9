/**
 * In-root path resolution: the single definition of how cairn follows a path
 * inside a root filesystem that is not the host's (an image's canonical tree,
 * a probed root directory), the way the kernel would inside a chroot:
 * absolute symlink targets restart at the root, relative ones continue from
 * the link's directory, and ".." stops at the root, so no link can lead a
 * lookup out of the root. Nothing is ever followed on the host: the caller's
 * lookup reports what a path names without following a final symlink.
 *
 * One limit, one behaviour at it: more than MAX_SYMLINK_HOPS links in one
 * lookup (a loop, or a chain built to exhaust the resolver) is LIMIT_EXCEEDED
 * naming `tree.max_symlink_hops`, never a hang and never mistaken for a
 * missing path. A missing component, or a non-directory with more path after
 * it, resolves to `undefined` ("not found"). There used to be two resolvers
 * (the base probe's threw at the limit, the launch check's returned
 * "not found"); this one replaces both.
 */
import { FIXED_LIMIT_HINT, checkLimit } from "../core/index.ts";
import type { CanonicalTree, FsEntry } from "./entries.ts";

/** tree.max_symlink_hops: the kernel's own limit on symlinks followed in one lookup. */
export const MAX_SYMLINK_HOPS = 40;

/** What a path inside a root names, without following it when it is a symlink. */
export type RootNode = { readonly type: "dir" | "file" | "other" } | { readonly type: "symlink"; readonly target: string };

/** Reports what `path` (absolute, resolved, no symlink before its last component) names, or undefined when nothing is there. */
export type RootLookup = (path: string) => RootNode | undefined | Promise<RootNode | undefined>;

function parts(p: string): string[] {
  return p.split("/").filter((s) => s !== "" && s !== ".");
}

/**
 * Resolves every symlink in `unsafePath` inside the root. Returns the resolved
 * absolute path (whose last component is not a symlink), or undefined when a
 * component does not exist or a non-directory is walked through. Throws
 * LIMIT_EXCEEDED (tree.max_symlink_hops) on too many links.
 */
export async function resolveInRoot(lookup: RootLookup, unsafePath: string): Promise<string | undefined> {
  let hops = 0;
  let pending = parts(unsafePath);
  const done: string[] = [];
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === "..") {
      done.pop(); // clamped at the root, as in a chroot
      continue;
    }
    const candidate = `/${done.length === 0 ? part : `${done.join("/")}/${part}`}`;
    const node = await lookup(candidate);
    if (node === undefined) return undefined;
    if (node.type === "symlink") {
      checkLimit("tree.max_symlink_hops", ++hops, MAX_SYMLINK_HOPS, unsafePath, "count", FIXED_LIMIT_HINT);
      if (node.target.startsWith("/")) done.length = 0;
      pending = [...parts(node.target), ...pending];
      continue;
    }
    if (node.type !== "dir" && pending.length > 0) return undefined;
    done.push(part);
  }
  return `/${done.join("/")}`;
}

/** The entry `unsafePath` names in a canonical tree after following symlinks, or undefined when it does not resolve. */
export async function resolveInTree(tree: CanonicalTree, unsafePath: string): Promise<FsEntry | undefined> {
  const resolved = await resolveInRoot((p) => tree.get(p), unsafePath);
  return resolved === undefined ? undefined : tree.get(resolved);
}
