/**
 * Read-only media (issue 31): a store, kit or run directory on a file
 * system mounted read-only (EROFS), or one this user may not write (EACCES,
 * EPERM). Readers must work there without writing a byte; writers must say
 * what stopped them, naming the path and the file system, instead of
 * letting a raw errno escape as INTERNAL.
 *
 *  - `notWritable(dir)` asks the kernel (access(2) with W_OK: EROFS for a
 *    read-only mount, EACCES for permissions) before a reader would open
 *    anything for writing, so a verify on read-only media skips its
 *    bookkeeping writes instead of failing on the first one;
 *  - `writeRefusal(path, cause)` is the one error for a write the media
 *    refused: IO_ERROR naming the path, the errno and, for EROFS, the mount
 *    point and file system type read from /proc/self/mountinfo.
 */
import { accessSync, constants, readFileSync, realpathSync } from "node:fs";
import { dirname } from "node:path";
import { CairnError } from "./errors.ts";

/** The errnos that mean "this media or this user may not write here". */
const READ_ONLY_ERRNOS = new Set(["EROFS", "EACCES", "EPERM"]);
/** ... and those that mean "no room left" (the full-disk class of the same fault campaign). */
const FULL_ERRNOS = new Set(["ENOSPC", "EDQUOT", "EFBIG"]);

/** The errno of a write the media refused (read-only, not permitted, full), from a Node error or a CairnError wrapping one. */
export function mediaErrno(cause: unknown): string | undefined {
  for (let e = cause, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = errnoOf(e);
    if (code !== undefined && (READ_ONLY_ERRNOS.has(code) || FULL_ERRNOS.has(code))) return code;
  }
  return undefined;
}

function errnoOf(e: unknown): string | undefined {
  return (e as { code?: string } | null)?.code;
}

/** The mount point and file system type `path` lives on (the longest mount point above it), from /proc/self/mountinfo; undefined off Linux. */
export function mountOf(path: string): { mountPoint: string; fsType: string } | undefined {
  let real = path;
  for (let i = 0; i < 64; i++) {
    try {
      real = realpathSync(real);
      break;
    } catch {
      if (dirname(real) === real) break;
      real = dirname(real);
    }
  }
  let text: string;
  try {
    // procfs reports size 0, so the bounded reader cannot read it; the kernel writes it, not an input
    text = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return undefined;
  }
  let best: { mountPoint: string; fsType: string } | undefined;
  for (const line of text.split("\n")) {
    const fields = line.split(" ");
    const dash = fields.indexOf("-");
    if (fields.length < 5 || dash < 0) continue;
    const mountPoint = fields[4]!.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
    const under = mountPoint === "/" || real === mountPoint || real.startsWith(`${mountPoint}/`);
    if (under && (best === undefined || mountPoint.length >= best.mountPoint.length)) best = { mountPoint, fsType: fields[dash + 1] ?? "?" };
  }
  return best;
}

/** Why this process may not write into directory `dir` (EROFS, EACCES, EPERM), or undefined when it may (or `dir` is absent). */
export function notWritable(dir: string): string | undefined {
  try {
    accessSync(dir, constants.W_OK);
    return undefined;
  } catch (e) {
    const code = errnoOf(e);
    return code !== undefined && READ_ONLY_ERRNOS.has(code) ? code : undefined;
  }
}

/** What the media says, for messages: "the tmpfs file system mounted at /mnt is read-only (EROFS)", "… is full (ENOSPC)" or "this user may not write there (EACCES)". */
export function describeNotWritable(path: string, errno: string): string {
  if (errno === "EROFS" || FULL_ERRNOS.has(errno)) {
    const state = errno === "EROFS" ? "read-only" : errno === "EFBIG" ? "refusing a file that large" : "full";
    const m = mountOf(path);
    return m === undefined ? `its file system is ${state} (${errno})` : `the ${m.fsType} file system mounted at ${m.mountPoint} is ${state} (${errno})`;
  }
  return `this user may not write there (${errno})`;
}

/**
 * The error for a write that read-only media, permissions or a full file
 * system refused: IO_ERROR naming the path and the file system. The path is
 * the refused one when the cause names it (a CairnError's path), else `path`
 * (with `what`: "into the content store"). Any other `cause` is returned
 * unchanged.
 */
export function writeRefusal(path: string, cause: unknown, what: string): unknown {
  const errno = mediaErrno(cause);
  if (errno === undefined) return cause;
  const named = cause instanceof CairnError && cause.path?.startsWith("/") === true && !cause.path.startsWith("/proc/") ? cause.path : undefined;
  const at = named ?? path;
  return new CairnError("IO_ERROR", `cannot write ${named === undefined ? `${what} at ${path}` : at}: ${describeNotWritable(at, errno)}`, {
    path: at,
    cause,
    hint:
      errno === "EROFS"
        ? "this command writes; remount the file system read-write or point it at a writable directory (verify, show and replay read a read-only store)"
        : FULL_ERRNOS.has(errno)
          ? "free space on that file system (`cairn store gc` frees store space) or point the command at another one; nothing half-written was published"
          : "run it as the user that owns this directory, or point it at a directory you may write",
  });
}
