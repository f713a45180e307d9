import type { Command } from "commander";
import { resolve } from "node:path";
import { readSigningKey, readVerifyingKey } from "../../core/index.ts";
import { signReceipt, verifyReceipt } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

/** `cairn receipt sign|verify`: in-toto run receipts in DSSE (vm/run-receipt.ts). */
export function registerReceipt(program: Command, ctx: Context): void {
  const receipt = program.command("receipt").description("signed run receipts: an in-toto Statement v1 in DSSE binding a run's identities, outcome and cost");
  receipt
    .command("sign")
    .description("sign a run directory's receipt (default RUNDIR/receipt.dsse.json)")
    .argument("<run-dir>", "a run directory written by `cairn run`")
    .requiredOption("--key <key>", "the Ed25519 private key to sign with")
    .option("--out <file>", "where to write the receipt")
    .option("--json", "print the result as JSON")
    .action((runDir: string, opts: { key: string; out?: string; json?: boolean }) => {
      const key = readSigningKey(opts.key);
      const r = signReceipt(resolve(ctx.cwd, runDir), [key], opts.out !== undefined ? resolve(ctx.cwd, opts.out) : undefined);
      if (opts.json) printJson(ctx.io, "cairn.cli.receipt-sign/1", { receipt: r.file, signed_by: key.keyId, subject: r.statement.subject });
      else ctx.io.out(`wrote ${r.file}\nsigned by ${key.keyId}`);
    });
  receipt
    .command("verify")
    .description("check a receipt's signature and, with --run, that every digest matches the run directory (exit 1 naming the first field that differs)")
    .argument("<receipt>", "a receipt file (DSSE envelope)")
    .requiredOption("--pub <key>", "the Ed25519 public key the receipt must be signed by")
    .option("--run <run-dir>", "the run directory the receipt must describe")
    .option("--json", "print the result as JSON")
    .action((file: string, opts: { pub: string; run?: string; json?: boolean }) => {
      const v = verifyReceipt(resolve(ctx.cwd, file), [readVerifyingKey(opts.pub)], opts.run !== undefined ? resolve(ctx.cwd, opts.run) : undefined);
      const predicate = v.statement.predicate as { run_id: string; status: string };
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.receipt-verify/1", {
          verified: true,
          signed_by: v.keyId,
          run_checked: v.runChecked,
          run_id: predicate.run_id,
          status: predicate.status,
        });
        return;
      }
      ctx.io.out(
        [
          `verified ${file}`,
          `signed by ${v.keyId}`,
          `run       ${predicate.run_id}  ${predicate.status}`,
          v.runChecked ? "every field matches the run directory" : "signature only (give --run RUNDIR to check the run's digests)",
        ].join("\n"),
      );
    });
}
