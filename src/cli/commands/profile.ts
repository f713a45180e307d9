import type { Command } from "commander";
import { notActedUpon, profileDigest, profileToModel, readProfileFile, refString, trustNotes } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

/** `cairn profile validate P`. */
export function registerProfile(program: Command, ctx: Context): void {
  const profile = program.command("profile").description("layered-environment profiles (YAML)");
  profile
    .command("validate")
    .description("parse a profile strictly and report every problem with its field path")
    .argument("<profile>", "profile YAML file")
    .option("--json", "print the result as JSON")
    .action((path: string, opts: { json?: boolean }) => {
      const p = readProfileFile(path);
      const ignored = notActedUpon(p);
      const trust = trustNotes(p);
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.profile-validate/1", {
          valid: true,
          profile_sha256: profileDigest(p),
          profile: profileToModel(p),
          not_acted_upon: ignored,
          trust_refused_by_resolve: trust,
        });
        return;
      }
      const lines = [
        `${path}: valid profile ${p.name}${p.version ? `@${p.version}` : ""}`,
        `base      ${p.base.os} ${p.base.arch}`,
        `software  ${p.software.map(refString).join(", ") || "(none)"}`,
        `digest    ${profileDigest(p)}`,
      ];
      if (ignored.length > 0) lines.push(`recorded, not acted upon: ${ignored.join(", ")}`);
      lines.push(...trust);
      ctx.io.out(lines.join("\n"));
    });
}
