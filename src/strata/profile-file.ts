/**
 * Reading a profile from a file: a regular file only (a FIFO or a device
 * would hang or stream forever), opened non-blocking, its size checked against
 * profile.max_bytes before a byte is read, then decoded as strict UTF-8 and
 * parsed strictly (profile-model.ts). A profile is a short declaration, so an
 * oversized or special file is refused instead of read into memory.
 */
import { closeSync, constants, fstatSync, openSync } from "node:fs";
import { CairnError, checkLimit, decodeUtf8, FIXED_LIMIT_HINT, ioError, readPrefix } from "../core/index.ts";
import { parseProfileText, type Profile } from "./profile-model.ts";

/** profile.max_bytes: a profile is a short declaration; anything larger is refused before it is read. */
export const MAX_PROFILE_BYTES = 1024 * 1024;

/** Reads (bounded, regular files only) and parses a profile file strictly. */
export function readProfileFile(path: string): Profile {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (cause) {
    throw ioError(path, cause);
  }
  let bytes: Buffer;
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new CairnError("IO_ERROR", `${path} is not a regular file`, { path });
    checkLimit("profile.max_bytes", st.size, MAX_PROFILE_BYTES, path, "bytes", FIXED_LIMIT_HINT);
    bytes = readPrefix(fd, st.size);
  } finally {
    closeSync(fd);
  }
  return parseProfileText(decodeUtf8(bytes, path), path);
}
