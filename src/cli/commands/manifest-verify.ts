import type { Command } from "commander";
import { CairnError, readVerifyingKey } from "../../core/index.ts";
import { readManifestFile, verifyManifestSignature } from "../../manifest/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { manifestSummary } from "../manifest-summary.ts";

interface VerifyOptions {
  pub?: string;
  allowUnsigned?: boolean;
  json?: boolean;
}

export function registerManifestVerify(manifest: Command, ctx: Context): void {
  manifest
    .command("verify")
    .description("recompute a manifest's address and labels from its core and check its signature (exit 1 on any mismatch)")
    .argument("<file>", "a manifest written by `cairn manifest ingest`")
    .option("--pub <file>", "the signer's Ed25519 public key (PEM); required unless --allow-unsigned")
    .option("--allow-unsigned", "check only the address and labels, not who signed it (recorded in the output)")
    .option("--json", "print the result as JSON")
    .action((file: string, opts: VerifyOptions) => {
      // Closed by default: skipping the signature check must be asked for by name.
      if (opts.pub === undefined && opts.allowUnsigned !== true) {
        throw new CairnError("USAGE", "verify needs --pub PUB (or --allow-unsigned to check integrity only)");
      }
      const key = opts.pub === undefined ? undefined : readVerifyingKey(opts.pub);
      const m = readManifestFile(file);
      if (key) verifyManifestSignature(m, key);
      const signature = key ? `verified (${key.keyId})` : "NOT CHECKED (--allow-unsigned)";
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.manifest-verify/1", {
          verified: true,
          signature,
          address: m.address,
          pinned: m.pinned,
          image_pinned: m.image_pinned,
          unpinned: m.unpinned,
          key_id: key?.keyId ?? null,
          not_covered: m.not_covered,
        });
        return;
      }
      const head = key
        ? "verified  address recomputed from the core; signature good"
        : "verified  address recomputed from the core; signature NOT CHECKED (--allow-unsigned)";
      ctx.io.out([head, ...manifestSummary(m)].join("\n"));
    });
}
