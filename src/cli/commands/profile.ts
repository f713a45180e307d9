import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { decodeUtf8, ioError } from "../../core/index.ts";
import { NOT_ACTED_UPON, parseProfileText, profileDigest, profileToModel, refString, type Profile } from "../../strata/index.ts";
import type { Context } from "../main.ts";
import { printJson } from "../output.ts";

/** Reads and parses a profile file strictly. */
export function readProfile(path: string): Profile {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (cause) {
    throw ioError(path, cause);
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
