import type { Command } from "commander";
import { readVerifyingKey } from "../../core/index.ts";
import { readManifestFile, verifyManifestSignature } from "../../manifest/index.ts";
import type { Context } from "../main.ts";
import { printJson } from "../output.ts";
import { manifestSummary } from "./manifest-show.ts";

export function registerManifestVerify(manifest: Command, ctx: Context): void {
  manifest
    .command("verify")
    .description("recompute a manifest's address and labels from its core and check its signature (exit 1 on any mismatch)")
    .argument("<file>", "a manifest written by `cairn manifest ingest`")
    .requiredOption("--pub <file>", "the signer's Ed25519 public key (PEM)")
    .option("--json", "print the result as JSON")
    .action((file: string, opts: { pub: string; json?: boolean }) => {
      const key = readVerifyingKey(opts.pub);
      const m = readManifestFile(file);
      verifyManifestSignature(m, key);
      if (opts.json) {
        printJson(ctx.io, {
          verified: true,
          address: m.address,
          pinned: m.pinned,
          image_pinned: m.image_pinned,
          unpinned: m.unpinned,
          key_id: key.keyId,
          not_covered: m.not_covered,
        });
        return;
      }
      ctx.io.out([`verified  address recomputed from the core; signature good`, ...manifestSummary(m)].join("\n"));
    });
}
