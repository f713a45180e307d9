import type { Command } from "commander";
import { readVerifyingKey } from "../../core/index.ts";
import { provenanceOf, provenanceText, readLockfile } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

export function registerLockProvenance(lock: Command, ctx: Context): void {
  lock
    .command("provenance")
    .description("print a citation-ready record of a signed lockfile (its signature is verified first)")
    .argument("<lock>", "lockfile")
    .requiredOption("--pub <key>", "the Ed25519 public key the lockfile is signed by")
    .option("--json", "print the record as JSON")
    .action((path: string, opts: { pub: string; json?: boolean }) => {
      const read = readLockfile(path, [readVerifyingKey(opts.pub)]);
      const record = provenanceOf(read.lock, read.signature!);
      if (opts.json) printJson(ctx.io, "cairn.cli.lock-provenance/1", record);
      else ctx.io.out(provenanceText(record));
    });
}
