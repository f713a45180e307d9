import type { Command } from "commander";
import { readVerifyingKey } from "../../core/index.ts";
import { environmentId, explainScope, explainText, isFrozen, lockfileCaveats, readLockfile } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { registerLockVerify } from "./lock-verify.ts";
import { registerLockExport } from "./lock-export.ts";
import { registerLockDiff } from "./lock-diff.ts";
import { registerLockProvenance } from "./lock-provenance.ts";

/** `cairn lock verify|id|diff|explain|provenance|export`. */
export function registerLock(program: Command, ctx: Context): void {
  const lock = program.command("lock").description("layered-environment lockfiles: verify, identify, compare, explain, cite, export");
  registerLockVerify(lock, ctx);
  lock
    .command("id")
    .description("print the EnvironmentID of a lockfile (an unfrozen lockfile has none: exit 1)")
    .argument("<lock>", "lockfile")
    .option("--pub <key>", "verify the lockfile's signature with this public key first")
    .option("--json", "print the result as JSON")
    .action((path: string, opts: { pub?: string; json?: boolean }) => {
      const read = readLockfile(path, opts.pub !== undefined ? [readVerifyingKey(opts.pub)] : undefined);
      const id = environmentId(read.lock);
      if (opts.json) printJson(ctx.io, { environment_id: id, signature_checked: opts.pub !== undefined });
      else ctx.io.out(id);
    });
  registerLockDiff(lock, ctx);
  lock
    .command("explain")
    .description("what the EnvironmentID covers and what it does not (and, given a lockfile, what its ID cannot promise)")
    .argument("[lock]", "lockfile")
    .option("--json", "print the result as JSON")
    .action((path: string | undefined, opts: { json?: boolean }) => {
      const read = path !== undefined ? readLockfile(path) : undefined;
      const caveats = read ? lockfileCaveats(read.lock) : [];
      const id = read && isFrozen(read.lock) ? environmentId(read.lock) : null;
      if (opts.json) {
        printJson(ctx.io, { ...explainScope(), ...(read ? { environment_id: id, frozen: isFrozen(read.lock), caveats } : {}) });
        return;
      }
      const lines = [explainText()];
      if (read) {
        lines.push("", `this lockfile: ${id ?? "unfrozen, no EnvironmentID"}`);
        lines.push(...(caveats.length ? caveats.map((c) => `  ! ${c}`) : ["  no caveats beyond the general ones"]));
      }
      ctx.io.out(lines.join("\n"));
    });
  registerLockProvenance(lock, ctx);
  registerLockExport(lock, ctx);
}
