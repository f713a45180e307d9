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
import { CairnError, FIXED_LIMIT_HINT, checkLimit } from "../core/index.ts";
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
 * How a lookup treats a path that would leave the root. "chroot" (an image's
 * tree, a probed root): as the kernel does inside a chroot, ".." stops at the
 * root and an absolute symlink target restarts there. "beneath" (a host
 * directory a spec may read from, such as the directory of `run.inputs`):
 * the root is not the filesystem's root, so a ".." above it, or a symlink
 * whose target is absolute (it names a host path, not one inside the root),
 * is refused (PATH_UNSAFE) instead of being reinterpreted inside the root.
 */
export type EscapeMode = "chroot" | "beneath";

/**
 * The single definition of the walk, shared by the async and sync drivers:
 * yields each candidate path to look up and receives what it names.
 */
function* resolveSteps(unsafePath: string, mode: EscapeMode): Generator<string, string | undefined, RootNode | undefined> {
  let hops = 0;
  let pending = parts(unsafePath);
  const done: string[] = [];
  const leaveRoot = (why: string): never => {
    throw new CairnError("PATH_UNSAFE", `${why} (resolving ${unsafePath})`, {
      path: unsafePath,
      hint: "name a path inside the directory, without `..` above it or a symlink whose target is absolute or climbs out",
    });
  };
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === "..") {
      if (done.length === 0 && mode === "beneath") leaveRoot("`..` climbs above the root");
      done.pop(); // clamped at the root, as in a chroot
      continue;
    }
    const candidate = `/${done.length === 0 ? part : `${done.join("/")}/${part}`}`;
    const node = yield candidate;
    if (node === undefined) return undefined;
    if (node.type === "symlink") {
      checkLimit("tree.max_symlink_hops", ++hops, MAX_SYMLINK_HOPS, unsafePath, "count", FIXED_LIMIT_HINT);
      if (node.target.startsWith("/")) {
        if (mode === "beneath") leaveRoot(`${candidate} is a symlink to the absolute path ${node.target}`);
        done.length = 0;
      }
      pending = [...parts(node.target), ...pending];
      continue;
    }
    if (node.type !== "dir" && pending.length > 0) return undefined;
    done.push(part);
  }
  return `/${done.join("/")}`;
}

/**
 * Resolves every symlink in `unsafePath` inside the root. Returns the resolved
 * absolute path (whose last component is not a symlink), or undefined when a
 * component does not exist or a non-directory is walked through. Throws
 * LIMIT_EXCEEDED (tree.max_symlink_hops) on too many links, and in "beneath"
 * mode PATH_UNSAFE on a way out of the root.
 */
export async function resolveInRoot(lookup: RootLookup, unsafePath: string, mode: EscapeMode = "chroot"): Promise<string | undefined> {
  const steps = resolveSteps(unsafePath, mode);
  let step = steps.next();
  while (!step.done) step = steps.next(await lookup(step.value));
  return step.value;
}

/** `resolveInRoot` for a lookup that answers at once (a host directory read with lstat). */
export function resolveInRootSync(lookup: (path: string) => RootNode | undefined, unsafePath: string, mode: EscapeMode = "chroot"): string | undefined {
  const steps = resolveSteps(unsafePath, mode);
  let step = steps.next();
  while (!step.done) step = steps.next(lookup(step.value));
  return step.value;
}

/** The entry `unsafePath` names in a canonical tree after following symlinks, or undefined when it does not resolve. */
export async function resolveInTree(tree: CanonicalTree, unsafePath: string): Promise<FsEntry | undefined> {
  const resolved = await resolveInRoot((p) => tree.get(p), unsafePath);
  return resolved === undefined ? undefined : tree.get(resolved);
}
