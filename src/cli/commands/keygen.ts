import type { Command } from "commander";
import { generateSigningKey, writeKeyPair } from "../../core/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

export function registerKeygen(program: Command, ctx: Context): void {
  program
    .command("keygen")
    .description("generate an Ed25519 key pair: PREFIX.key (PKCS#8, 0600) and PREFIX.pub (SPKI)")
    .requiredOption("--out <prefix>", "path prefix for the key files")
    .option("--force", "overwrite existing key files")
    .option("--json", "print the result as JSON")
    .action((opts: { out: string; force?: boolean; json?: boolean }) => {
      const key = generateSigningKey();
      const { keyPath, pubPath } = writeKeyPair(opts.out, key, opts.force === true);
      if (opts.json) printJson(ctx.io, "cairn.cli.keygen/1", { key: keyPath, pub: pubPath, key_id: key.keyId });
      else ctx.io.out(`wrote ${keyPath} (private, 0600) and ${pubPath}\nkey id ${key.keyId}`);
    });
}
