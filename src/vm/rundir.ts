/**
 * The run directory (0700):
 *
 *   run.json             run manifest: identities only (shareable)
 *   events.json          normalized events (shareable)
 *   assertions.json      assertion results (shareable)
 *   replay-command.txt   the exact command that replays this run
 *   replay.log           QEMU's record/replay log (private, 0600)
 *   lock.json            the workload lock (private, 0600)
 *   console.log          guest console (private)
 *   protocol.bin         the raw protocol stream, holding output bytes (private)
 *   streams/N.stdout|stderr   exact output per invocation (private)
 *   failure-bundle.json  only when the run did not pass (shareable)
 *   replays/N/           one directory per replay, same layout for its outputs (streams/ included)
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statfsSync } from "node:fs";
import { join } from "node:path";
import { CairnError, formatBytes, mkdirPrivate, withDirIn, writeFileAtomic } from "../core/index.ts";
import type { Evaluation } from "./guest.ts";
import { RUN_MIN_FREE_BYTES } from "./sizing.ts";

export const RUN_FILES = {
  manifest: "run.json",
  events: "events.json",
  assertions: "assertions.json",
  replayCommand: "replay-command.txt",
  replayLog: "replay.log",
  lock: "lock.json",
  streams: "streams",
  replays: "replays",
} as const;

export function writeJsonPublic(path: string, value: unknown): void {
  writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o644 });
}

export function writeEvaluation(dir: string, ev: Evaluation): void {
  writeJsonPublic(join(dir, RUN_FILES.events), ev.events);
  writeJsonPublic(join(dir, RUN_FILES.assertions), ev.assertions);
}

export function writeStreams(dir: string, streams: ReadonlyMap<number, { stdout: Buffer; stderr: Buffer }>): void {
  const sdir = join(dir, RUN_FILES.streams);
  mkdirPrivate(sdir);
  for (const [inv, s] of streams) {
    writeFileAtomic(join(sdir, `${inv}.stdout`), s.stdout, { mode: 0o600 });
    writeFileAtomic(join(sdir, `${inv}.stderr`), s.stderr, { mode: 0o600 });
  }
}

/**
 * A fresh private directory for the next replay of a run: replays/1,
 * replays/2, ... `replays` is reached without following a symlink
 * (core/owned-root.ts): a run directory is hostile input, and a planted
 * `replays` link must not make replay write into (or chmod) its target.
 */
export function nextReplayDir(runDir: string): string {
  return withDirIn(
    runDir,
    RUN_FILES.replays,
    (base) => {
      const used = readdirSync(base)
        .filter((n) => /^[1-9][0-9]*$/.test(n))
        .map(Number);
      for (let n = used.length === 0 ? 1 : Math.max(...used) + 1; ; n++) {
        try {
          mkdirSync(join(base, String(n)), { mode: 0o700 });
          return join(runDir, RUN_FILES.replays, String(n));
        } catch (e) {
          if ((e as { code?: string }).code !== "EEXIST") throw e;
        }
      }
    },
    { create: true, mode: 0o700 },
  );
}

/**
 * The root cause when the file system holding `dir` is (nearly) full, else
 * undefined. Called while the guest image is still in `dir` (it is what
 * filled the disk alongside the log, and dropping it would free the room
 * again).
 */
export function diskFullError(dir: string, cause?: unknown, shown = dir): CairnError | undefined {
  let free: number;
  try {
    const st = statfsSync(dir);
    free = Number(st.bavail) * Number(st.bsize);
  } catch {
    return undefined;
  }
  if (free >= RUN_MIN_FREE_BYTES) return undefined;
  return new CairnError(
    "IO_ERROR",
    `the file system holding ${shown} is full (${formatBytes(free)} free, run.min_free_bytes is ${formatBytes(RUN_MIN_FREE_BYTES)}): QEMU's replay log and protocol stream may be cut short, so the run was not recorded`,
    {
      path: shown,
      cause,
      hint: "free space there, or pass --runs on a file system with room for the guest image and the replay log",
    },
  );
}

/** Removes the initramfs and root disk copies a boot left behind (replay rebuilds them from the store). */
export function dropImage(dir: string): void {
  rmSync(join(dir, "initramfs.img"), { force: true });
  rmSync(join(dir, "root.erofs"), { force: true });
}

export function readIfExists(path: string): Buffer | undefined {
  return existsSync(path) ? readFileSync(path) : undefined;
}

/** POSIX shell quoting for the replay command. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=+-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}
