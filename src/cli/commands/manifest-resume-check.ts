import type { Command } from "commander";
import { checkResume, loadManifestOrDevcontainer, snapshotRefOf } from "../../manifest/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

interface ResumeCheckOptions {
  allowUnpinned?: boolean;
  featuresDir?: string;
  json?: boolean;
}

export function registerManifestResumeCheck(manifest: Command, ctx: Context): void {
  manifest
    .command("resume-check")
    .alias("check-resume")
    .description("may a run suspended in SUSPENDED resume in OFFERED? (exit 0 yes; 1 different, or an unpinned pair without --allow-unpinned)")
    .argument("<suspended>", "the environment the run was suspended in: a manifest or devcontainer.json")
    .argument("<offered>", "the environment offered for the resume: a manifest or devcontainer.json")
    .option("--allow-unpinned", "accept an unpinned pair with equal addresses (same declaration, not a claim about bytes; recorded in the output)")
    .option("--features-dir <dir>", "pin the local features of each devcontainer.json input by their directories under DIR (cairn.fs/1)")
    .option("--json", "print the result as JSON")
    .action((suspended: string, offered: string, opts: ResumeCheckOptions) => {
      const load = { ...(opts.featuresDir === undefined ? {} : { featuresDir: opts.featuresDir }) };
      const snapshot = snapshotRefOf(loadManifestOrDevcontainer(suspended, undefined, load).manifest);
      const m = loadManifestOrDevcontainer(offered, undefined, load).manifest;
      // Throws RESUME_MISMATCH or RESUME_UNPINNED (exit 1) with every differing field named.
      const result = checkResume(snapshot, m, { allowUnpinned: opts.allowUnpinned === true });
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.manifest-resume-check/1", {
          resume: "ok",
          result,
          address: m.address,
          extension_address: m.extension_address,
          allow_unpinned: opts.allowUnpinned === true,
        });
        return;
      }
      ctx.io.out([`resume    ok: ${result}`, `address   ${m.address}`, `extension ${m.extension_address}`].join("\n"));
    });
}
