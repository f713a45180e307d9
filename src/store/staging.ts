/**
 * Private staging for one store writer. Each writer works in
 * `staging/<host>-<pid>-<random>/` (0700); everything it publishes is written
 * there first, then renamed into place. A writer killed at any moment (even
 * by SIGKILL) leaves only its staging directory behind, never a partial
 * object: publication is a single rename(2) of a complete file.
 *
 * The next writer removes staging directories whose owner is gone: same
 * host tag and a pid that is no longer alive. A directory from another host
 * tag (another machine or container sharing the store, where our pid
 * numbers mean nothing) is removed only once it is older than
 * `FOREIGN_STAGING_MAX_AGE_MS`. A live pid's directory is left alone: it may
 * be a concurrent assembler; pid reuse can only delay a cleanup.
 *
 * The staging directory is reached through the store root without following
 * a symlink (core/owned-root.ts): a `staging` planted as a symlink to another
 * directory is refused, never emptied.
 */
import { createHash, randomBytes } from "node:crypto";
import { lstatSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { removeIn, withDirIn } from "../core/index.ts";

/** The staging directory's name inside a store root. */
export const STAGING = "staging";

const STAGING_NAME = /^([0-9a-f]{8})-([1-9][0-9]{0,9})-[0-9a-f]{16}$/;
export const FOREIGN_STAGING_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/** A short tag for this host (or container): pids are only comparable under the same tag. */
export function hostTag(): string {
  return createHash("sha256").update(hostname()).digest("hex").slice(0, 8);
}

export function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM"; // exists, owned by someone else
  }
}

export function abandoned(stagingRoot: string, name: string, now: number): boolean {
  const m = STAGING_NAME.exec(name);
  if (m === null) return true; // not a writer's directory: nothing of ours, a leftover
  if (m[1] === hostTag()) return !processAlive(Number(m[2]));
  try {
    return now - lstatSync(join(stagingRoot, name)).mtimeMs > FOREIGN_STAGING_MAX_AGE_MS;
  } catch {
    return false;
  }
}

/** Removes leftovers of dead writers in the staging directory of the store at `storeRoot`; returns how many were removed. */
export function cleanStaging(storeRoot: string, now = Date.now()): number {
  return withDirIn(
    storeRoot,
    STAGING,
    (stagingRoot) => {
      let removed = 0;
      for (const name of readdirSync(stagingRoot)) {
        if (!abandoned(stagingRoot, name, now)) continue;
        rmSync(join(stagingRoot, name), { recursive: true, force: true });
        removed++;
      }
      return removed;
    },
    { write: true },
  );
}

export interface Staging {
  readonly dir: string;
  /** Removes the staging directory and everything in it. */
  dispose(): void;
}

/** Creates a fresh private staging directory owned by this process in the store at `storeRoot`. */
export function createStaging(storeRoot: string): Staging {
  const name = `${hostTag()}-${process.pid}-${randomBytes(8).toString("hex")}`;
  withDirIn(storeRoot, STAGING, (stagingRoot) => mkdirSync(join(stagingRoot, name), { mode: 0o700 }), { write: true });
  return { dir: join(storeRoot, STAGING, name), dispose: () => removeIn(storeRoot, STAGING, name) };
}
