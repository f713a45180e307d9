/**
 * A run's writes on a full file system, said as what they are. Apart from
 * rundir.ts so that the guest image writer (boot-image.ts) can use it
 * without importing the run directory's evaluation types: boot-image ->
 * rundir -> guest -> boot-image was an import cycle.
 */
import { dirname } from "node:path";
import { statfsSync } from "node:fs";
import { CairnError, formatBytes, mediaErrno } from "../core/index.ts";

/**
 * A failed write on a full file system (ENOSPC, EDQUOT), said as what it
 * is: the file that could not be written and the file system that is full.
 * Without this, a guest image written from the store while the disk filled
 * was reported as "cannot read" the store object being copied. Any other
 * error is returned unchanged.
 */
export function withNoSpaceNamed(e: unknown, file: string, fsDir = dirname(file)): unknown {
  const errno = mediaErrno(e);
  if (errno !== "ENOSPC" && errno !== "EDQUOT") return e;
  let free = "";
  try {
    const st = statfsSync(fsDir);
    free = `, ${formatBytes(Number(st.bavail) * Number(st.bsize))} free`;
  } catch {
    // the directory is gone (staging removed): the errno says enough
  }
  return new CairnError("IO_ERROR", `cannot write ${file}: the file system holding ${fsDir} is full (${errno}${free})`, {
    path: file,
    cause: e,
    hint: "free space there, or pass --runs on a file system with room for the guest image and the replay log",
  });
}
