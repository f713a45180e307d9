/**
 * A run directory is whole or absent. Everything a run writes (the lock,
 * the guest image, QEMU's logs, events, run.json, ...) goes into a private
 * staging directory inside the runs directory, `.<run id>.<pid>.<hex>.tmp`
 * (0700; `runs list` skips dot names), which appears under the run id by one
 * rename only once `run.json` is in it. Attack stopped: a run killed,
 * interrupted or starved of disk half-way used to leave a directory without
 * `run.json` (9.7 MB of logs after a SIGINT) that `runs list` showed as
 * unreadable and `replay` called "not a run directory".
 *
 * Interrupted (SIGINT, SIGTERM, SIGHUP): the staging directory is removed
 * before the process ends as the signal asked. Killed (SIGKILL, a crash): it
 * stays hidden until the next writer of the runs directory removes it
 * (`removeDeadStaging`: its process is gone).
 */
import { mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fsyncDir, ioError, isCairnError, removeIn, tempSibling } from "../core/index.ts";
import { onInterrupt } from "./interrupt.ts";
import { withNoSpaceNamed } from "./no-space.ts";

export interface RunStaging {
  /** The private directory every file of the run is written into. */
  readonly dir: string;
  /** Where the run appears (`<runs>/<run id>`). */
  readonly runDir: string;
  /** Renames the staging directory to `runDir` (once `run.json` is in it). */
  publish(): void;
  /** Removes the staging directory (an unrecorded run leaves nothing). */
  discard(): void;
}

/** A staging directory for run `runId` in `runsDir` (already opened as a runs root), removed if the process is interrupted. */
export function stageRun(runsDir: string, runId: string): RunStaging {
  removeDeadStaging(runsDir);
  const runDir = join(runsDir, runId);
  const dir = tempSibling(runDir);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (cause) {
    throw withNoSpaceNamed(ioError(dir, cause, "create"), dir);
  }
  let done = false;
  // registered first, so run last when interrupted: QEMU and the responder are gone by then (interrupt.ts)
  const forgetInterrupt = onInterrupt(() => rmSync(dir, { recursive: true, force: true }));
  const stop = (): void => {
    done = true;
    forgetInterrupt();
  };
  return {
    dir,
    runDir,
    publish() {
      if (done) throw new Error("run staging already closed");
      try {
        renameSync(dir, runDir);
      } catch (cause) {
        throw isCairnError(cause) ? cause : ioError(runDir, cause, "write");
      }
      stop();
      fsyncDir(runsDir);
    },
    discard() {
      stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Staging left by a writer that is gone (`.<name>.<pid>.<hex>.tmp`, core's
 * tempSibling, whose pid no longer runs): a killed run or bundle import, or
 * a temporary file of an atomic write. Removed without following a symlink.
 */
export function removeDeadStaging(runsDir: string): void {
  let names: string[];
  try {
    names = readdirSync(runsDir);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^\..+\.([1-9][0-9]*)\.[0-9a-f]{12}\.tmp$/.exec(name);
    if (m === null) continue;
    const pid = Number(m[1]);
    if (!Number.isSafeInteger(pid) || pid === process.pid || isAlive(pid)) continue;
    removeIn(runsDir, "", name);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
}
