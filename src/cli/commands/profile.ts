import { closeSync, constants, fstatSync, openSync } from "node:fs";
import type { Command } from "commander";
import { CairnError, checkLimit, decodeUtf8, FIXED_LIMIT_HINT, ioError, readPrefix } from "../../core/index.ts";
import { NOT_ACTED_UPON, parseProfileText, profileDigest, profileToModel, refString, type Profile } from "../../strata/index.ts";
import type { Context } from "../main.ts";
import { printJson } from "../output.ts";

/** profile.max_bytes: a profile is a short declaration; anything larger is refused before it is read. */
export const MAX_PROFILE_BYTES = 1024 * 1024;

/** Reads (bounded, regular files only) and parses a profile file strictly. */
export function readProfile(path: string): Profile {
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

export function notActedUpon(p: Profile): string[] {
  return NOT_ACTED_UPON.filter((k) => p[k] !== undefined);
}

/** `cairn profile validate P`. */
export function registerProfile(program: Command, ctx: Context): void {
  const profile = program.command("profile").description("layered-environment profiles (YAML)");
  profile
    .command("validate")
    .description("parse a profile strictly and report every problem with its field path")
    .argument("<profile>", "profile YAML file")
    .option("--json", "print the result as JSON")
    .action((path: string, opts: { json?: boolean }) => {
      const p = readProfile(path);
      const ignored = notActedUpon(p);
      if (opts.json) {
        printJson(ctx.io, { valid: true, profile_sha256: profileDigest(p), profile: profileToModel(p), not_acted_upon: ignored });
        return;
      }
      const lines = [
        `${path}: valid profile ${p.name}${p.version ? `@${p.version}` : ""}`,
        `base      ${p.base.os} ${p.base.arch}`,
        `software  ${p.software.map(refString).join(", ") || "(none)"}`,
        `digest    ${profileDigest(p)}`,
      ];
      if (ignored.length > 0) lines.push(`recorded, not acted upon: ${ignored.join(", ")}`);
      ctx.io.out(lines.join("\n"));
    });
}
