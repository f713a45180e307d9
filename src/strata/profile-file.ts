/**
 * Reading a profile from a file: a regular file only (a FIFO or a device
 * would hang or stream forever) and never a symlink, read by core's bounded
 * reader (opened non-blocking, growth while read refused), its size checked against
 * profile.max_bytes before a byte is read, then decoded as strict UTF-8 and
 * parsed strictly (profile-model.ts). A profile is a short declaration, so an
 * oversized or special file is refused instead of read into memory.
 */
import { decodeUtf8, FIXED_LIMIT_HINT, readFileBounded } from "../core/index.ts";
import { parseProfileText, type Profile } from "./profile-model.ts";

/** profile.max_bytes: a profile is a short declaration; anything larger is refused before it is read. */
export const MAX_PROFILE_BYTES = 1024 * 1024;

/** Reads (bounded, regular files only, no symlink at the path) and parses a profile file strictly. */
export function readProfileFile(path: string): Profile {
  const bytes = readFileBounded(path, MAX_PROFILE_BYTES, "profile.max_bytes", { limitHint: FIXED_LIMIT_HINT });
  return parseProfileText(decodeUtf8(bytes, path), path);
}
