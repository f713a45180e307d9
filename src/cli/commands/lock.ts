import type { Command } from "commander";
import { readSigningKey, readVerifyingKey } from "../../core/index.ts";
import {
  convertV1LockfileFile,
  environmentId,
  explainScope,
  explainText,
  isFrozen,
  lockfileCaveats,
  readLockfile,
  strataEnvironmentId,
  writeLockfile,
  signLockfile,
} from "../../strata/index.ts";
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
    .description(
      "print a lockfile's two identities: Strata's EnvironmentID (bare hex, as Strata computes it) on the first line, cairn's content identity (sha256:…, which also covers layer ids and sizes, defaults, the mutable layer and host requirements) on the second; an unfrozen lockfile has neither (exit 1)",
    )
    .argument("<lock>", "lockfile")
    .option("--pub <key>", "verify the lockfile's signature with this public key first")
    .option("--json", "print the result as JSON")
    .action((path: string, opts: { pub?: string; json?: boolean }) => {
      const read = readLockfile(path, opts.pub !== undefined ? [readVerifyingKey(opts.pub)] : undefined);
      const content = environmentId(read.lock); // LOCK_UNFROZEN for an unfrozen lockfile
      const strata = strataEnvironmentId(read.lock.spec);
      if (opts.json)
        printJson(ctx.io, "cairn.cli.lock-id/1", { strata_environment_id: strata, environment_id: content, signature_checked: opts.pub !== undefined });
      else ctx.io.out(`${strata}  EnvironmentID (Strata)\n${content}  content identity (cairn)`);
    });
  lock
    .command("convert")
    .description(
      "convert a lockfile in cairn's earlier format (cairn.lock/1) into Strata's format, with cairn's records beside it (written unsigned unless --sign)",
    )
    .argument("<old>", "lockfile in the earlier format")
    .requiredOption("--out <lock>", "where to write the converted lockfile (and OUT.cairn.json)")
    .option("--sign <key>", "sign the converted lockfile (the old signature covered other bytes)")
    .action((path: string, opts: { out: string; sign?: string }) => {
      const { lock: converted, dropped } = convertV1LockfileFile(path);
      writeLockfile(opts.out, converted, opts.sign !== undefined ? readSigningKey(opts.sign) : undefined);
      ctx.io.out(`converted ${path} → ${opts.out}${opts.sign ? " (signed)" : " (unsigned: sign it with cairn lock sign)"}`);
      for (const d of dropped) ctx.io.out(`  dropped ${d}: recorded, never acted upon; Strata's lockfile has no place for it`);
    });
  lock
    .command("sign")
    .description("sign a lockfile as it is (Validate first): writes LOCK.dsse.json over its exact bytes, e.g. for a lockfile Strata wrote")
    .argument("<lock>", "lockfile")
    .requiredOption("--key <key>", "Ed25519 private key (PKCS#8 PEM)")
    .action((path: string, opts: { key: string }) => {
      const sig = signLockfile(path, readSigningKey(opts.key));
      ctx.io.out(`signed ${path} (key ${sig.keyid})`);
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
        // the scope's own `schema` is the identity it explains (cairn.environment/N): printed as `identity`
        const { schema: identity, ...scope } = explainScope();
        printJson(ctx.io, "cairn.cli.lock-explain/1", { identity, ...scope, ...(read ? { environment_id: id, frozen: isFrozen(read.lock), caveats } : {}) });
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
