/**
 * A read-only view of a root filesystem, the only thing the base probe sees.
 * The CLI feeds it either a directory on this machine (`host` is the view of
 * `/`) or an OCI image's canonical tree; the probe does not know which.
 *
 * A view never follows symlinks itself: `readlink` reports them and the probe
 * resolves them inside the root (`resolveInRoot`), clamping `..` at `/` the
 * way a chroot does, so a link can never lead the probe out of the root.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { CairnError, readPrefix } from "../core/index.ts";

export interface RootView {
  /** The bytes of the regular file at `path` (no symlink in it), at most `maxBytes`; undefined when absent or not a file. */
  readFile(path: string, maxBytes: number): Promise<Uint8Array | undefined>;
  /** The target when `path` itself is a symlink, else undefined. */
  readlink(path: string): Promise<string | undefined>;
  /** Names in the directory at `path`, or undefined when it is not a directory. */
  list(path: string): Promise<string[] | undefined>;
}

/** probe.max_symlink_hops */
export const MAX_SYMLINK_HOPS = 40;

/** Resolves every symlink in `path` inside the root; returns the resolved absolute path. */
export async function resolveInRoot(view: RootView, path: string): Promise<string> {
  let hops = 0;
  let pending = path.split("/").filter((s) => s !== "" && s !== ".");
  const done: string[] = [];
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === "..") {
      done.pop(); // clamped at the root
      continue;
    }
    const candidate = `/${[...done, part].join("/")}`;
    const target = await view.readlink(candidate);
    if (target === undefined) {
      done.push(part);
      continue;
    }
    if (++hops > MAX_SYMLINK_HOPS) {
      throw new CairnError("LIMIT_EXCEEDED", `limit probe.max_symlink_hops exceeded resolving ${path}`, { path });
    }
    const tparts = target.split("/").filter((s) => s !== "" && s !== ".");
    if (target.startsWith("/")) done.length = 0;
    pending = [...tparts, ...pending];
  }
  return `/${done.join("/")}`;
}

/** A view of a directory on this machine (`/` for the host). */
export function directoryView(root: string): RootView {
  const abs = (p: string): string => join(root, ...p.split("/").filter((s) => s !== "" && s !== "." && s !== ".."));
  return {
    async readFile(path, maxBytes) {
      let fd: number;
      try {
        fd = openSync(abs(path), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      } catch {
        return undefined;
      }
      try {
        const st = fstatSync(fd);
        if (!st.isFile()) return undefined;
        return readPrefix(fd, Math.min(st.size, maxBytes));
      } finally {
        closeSync(fd);
      }
    },
    async readlink(path) {
      try {
        if (!lstatSync(abs(path)).isSymbolicLink()) return undefined;
        return readlinkSync(abs(path), "utf8");
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
