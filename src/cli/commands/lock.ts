import type { Command } from "commander";
import { CairnError, formatBytes, readSigningKey, readVerifyingKey, writeFileAtomic } from "../../core/index.ts";
import {
  convertV1LockfileFile,
  environmentId,
  explainLock,
  explainScope,
  explainText,
  type LockExplained,
  lockExplainHtml,
  readLockfile,
  strataEnvironmentId,
  writeLockfile,
  signLockfile,
} from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { outputPath, printable, printJson } from "../output.ts";
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
    .description(
      "what the EnvironmentID covers and what it does not; given a lockfile, its layers in mount order with sizes and why each is there (the profile ref it satisfies, its formation, the requirements it provides), its package sets, and what its ID cannot promise",
    )
    .argument("[lock]", "lockfile")
    .option("--json", "print the result as JSON")
    .option(
      "--html <out>",
      "also write LOCK explained as one self-contained HTML page (the layer stack in mount order with sizes, why each layer is there; no script, nothing loaded)",
    )
    .action((path: string | undefined, opts: { json?: boolean; html?: string }) => {
      if (opts.html !== undefined && path === undefined)
        throw new CairnError("USAGE", "--html needs a lockfile to explain", { path: "--html", hint: "cairn lock explain LOCK --html OUT" });
      const html = opts.html !== undefined && path !== undefined ? outputPath(ctx.cwd, "--html", opts.html, [path]) : undefined;
      const read = path !== undefined ? readLockfile(path) : undefined;
      const explained = read ? explainLock(read.lock) : undefined;
      // written atomically (a temporary file renamed into place): a reader finds the whole page or none
      if (html !== undefined && explained !== undefined) writeFileAtomic(html, lockExplainHtml(explained, path!), { mode: 0o644 });
      if (opts.json) {
        // the scope's own `schema` is the identity it explains (cairn.environment/N): printed as `identity`
        const { schema: identity, ...scope } = explainScope();
        printJson(ctx.io, "cairn.cli.lock-explain/1", {
          identity,
          ...scope,
          ...(explained ? { lockfile: explained, environment_id: explained.environment_id, frozen: explained.frozen, caveats: explained.caveats } : {}),
        });
        return;
      }
      const lines = [explainText()];
      // names, refs and caveats come from the lockfile: one printed line each, escaped
      if (explained) lines.push("", ...lockLines(explained).map(printable));
      ctx.io.out(lines.join("\n"));
    });
  registerLockProvenance(lock, ctx);
  registerLockExport(lock, ctx);
}

/** One lockfile explained, for a person: its layers in mount order with sizes and reasons, its formations and package sets, its caveats. */
function lockLines(e: LockExplained): string[] {
  const lines = [`this lockfile: ${e.environment_id ?? "unfrozen, no EnvironmentID"}`];
  lines.push(`  base ${e.base.name} ${e.base.arch} (${e.base.source})${e.base.provides.length ? `: ${e.base.provides.join(", ")}` : ""}`);
  lines.push(`layers, bottom (mount 1) to top: ${e.layers.length}, ${formatBytes(e.total_size)} in all`);
  for (const x of e.layers) {
    lines.push(`  ${x.mount_order}. ${x.name} ${x.version}  ${formatBytes(x.size)}  ${x.sha256 ?? "(no digest)"}`);
    for (const w of x.why) lines.push(`       why: ${w}`);
    if (x.provides.length) lines.push(`       provides: ${x.provides.join(", ")}`);
    for (const r of x.requires) lines.push(`       requires ${r.requirement}: ${r.providers.length ? r.providers.join(", ") : "no provider in this lockfile"}`);
  }
  for (const f of e.formations)
    lines.push(`formation ${f.name}${f.version ? `@${f.version}` : ""}: ${f.members.join(", ") || "no member layer in this lockfile"}`);
  for (const s of e.package_sets) {
    lines.push(`packages ${s.set} (${s.state}${s.target ? `, for ${s.target}` : ""}): ${s.packages.length}`);
    for (const p of s.packages) lines.push(`  ${p.name}${p.version !== null ? `==${p.version}` : ""}${p.sha256 !== null ? `  ${p.sha256}` : ""}`);
  }
  lines.push("what this lockfile's ID cannot promise:", ...(e.caveats.length ? e.caveats.map((c) => `  ! ${c}`) : ["  no caveats beyond the general ones"]));
  return lines;
}
