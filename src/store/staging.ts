/**
 * Private staging for one store writer. Each writer works in
 * `staging/<pid>-<random>/` (0700); everything it publishes is written there
 * first, fsynced, then linked into place. A writer killed at any moment (even
 * by SIGKILL) leaves only its staging directory behind, never a partial
 * object: publication is a single link(2) or rename(2) of a complete file.
 *
 * The next writer removes staging directories whose owning process is gone.
 * A directory whose pid is alive is left alone, because it may be a
 * concurrent assembler; pid reuse can only delay a cleanup, never remove a
 * live writer's files.
 */
import { readdirSync, rmSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { mkdirPrivate } from "../core/index.ts";

const STAGING_NAME = /^([1-9][0-9]{0,9})-[0-9a-f]{16}$/;

function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM"; // exists, owned by someone else
  }
}

/** Removes leftovers of dead writers under `stagingRoot`; returns how many were removed. */
export function cleanStaging(stagingRoot: string): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(stagingRoot);
  } catch {
    return 0;
  }
  for (const name of names) {
    const m = STAGING_NAME.exec(name);
    if (m !== null && processAlive(Number(m[1]))) continue;
    // Anything else under staging/ is a leftover: either a dead writer's or not ours.
    rmSync(join(stagingRoot, name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}

export interface Staging {
  readonly dir: string;
  /** Removes the staging directory and everything in it. */
  dispose(): void;
}

/** Creates a fresh private staging directory owned by this process. */
export function createStaging(stagingRoot: string): Staging {
  const dir = join(stagingRoot, `${process.pid}-${randomBytes(8).toString("hex")}`);
  mkdirPrivate(dir);
  return { dir, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}
