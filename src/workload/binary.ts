/**
 * A binary workload: one static executable installed at `/bin/app` in an
 * otherwise empty tree, and a launch taken verbatim from the spec.
 *
 * The tree (documented in docs/workload.md):
 *   /          dir   0755  0:0       mtime 0
 *   /bin       dir   0755  0:0       mtime 0
 *   /bin/app   file  0755  uid:gid   mtime 0   (uid:gid from the spec's user)
 * plus, when `workdir` is not already a directory, its missing ancestors
 * (0755, 0:0, mtime 0) and the workdir itself (0755, uid:gid, mtime 0), so
 * the program starts in a directory it may write.
 *
 * Nothing else: no auxiliary files, no /etc, no host values.
 */
import { CairnError, type Sha256Digest } from "../core/index.ts";
import { checkStaticExecutable } from "./elf.ts";
import { parentOf } from "../tree/index.ts";
import { makeLaunch, type Launch } from "./launch.ts";
import type { BinarySourceSpec } from "./spec.ts";
import type { CanonicalTree, FsEntry } from "../tree/index.ts";

export const BINARY_INSTALL_PATH = "/bin/app";

export interface BinaryWorkload {
  readonly tree: CanonicalTree;
  readonly launch: Launch;
}

/** Builds the tree and launch of a binary workload from checked executable bytes. */
export function buildBinaryWorkload(source: BinarySourceSpec, exe: { bytes: Uint8Array; sha256: Sha256Digest }, where: string): BinaryWorkload {
  checkStaticExecutable(exe.bytes, where);
  for (const name of source.env.keys()) {
    // "A=B": "c" would launch as A with value "B=c": refuse instead of reinterpreting.
    if (name === "" || name.includes("=")) {
      throw new CairnError("LAUNCH_INVALID", `environment variable name ${JSON.stringify(name)} is empty or holds "="`, { path: "/source/binary/env" });
    }
  }
  const env = [...source.env].map(([k, v]) => `${k}=${v}`);
  const launch = makeLaunch({ argv: [BINARY_INSTALL_PATH, ...source.args], env, workdir: source.workdir, user: source.user }, "/source/binary");
  const tree = new Map<string, FsEntry>();
  const dir = (path: string, uid = 0, gid = 0): void => void tree.set(path, { type: "dir", path, mode: 0o755, uid, gid, mtime: 0 });
  dir("/");
  dir("/bin");
  tree.set(BINARY_INSTALL_PATH, {
    type: "file",
    path: BINARY_INSTALL_PATH,
    mode: 0o755,
    uid: launch.uid,
    gid: launch.gid,
    mtime: 0,
    size: exe.bytes.length,
    sha256: exe.sha256,
  });
  const wd = launch.workdir;
  const existing = tree.get(wd);
  if (existing !== undefined && existing.type !== "dir") {
    throw new CairnError("LAUNCH_INVALID", `workdir ${wd} is the executable, not a directory`, { path: "/source/binary/workdir" });
  }
  if (existing === undefined) {
    const missing: string[] = [];
    for (let p = wd; !tree.has(p); p = parentOf(p)) missing.unshift(p);
    if (tree.get(parentOf(missing[0]!))?.type !== "dir") {
      throw new CairnError("LAUNCH_INVALID", `workdir ${wd} lies under the executable`, { path: "/source/binary/workdir" });
    }
    for (const p of missing) dir(p, p === wd ? launch.uid : 0, p === wd ? launch.gid : 0);
  }
  return { tree, launch };
}
