import { resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { readSigningKey } from "../../core/index.ts";
import { environmentId, lockfileCaveats, notActedUpon, requireLayerBlobs, writeLockfile, type Lockfile } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { resolveWithFlags, withResolveFlags, type ResolveFlags } from "../resolve-flags.ts";

interface ResolveOpts extends ResolveFlags {
  sign?: string;
  out: string;
  json?: boolean;
}

/** `cairn resolve P --registry REG [--base …] [--allow-unsigned-offline] [--sign KEY] --out LOCK`. */
export function registerResolve(program: Command, ctx: Context): void {
  withResolveFlags(program.command("resolve"))
    .description("resolve a profile against layer registries into a (signed) lockfile")
    .argument("<profile>", "profile YAML file")
    .option("--sign <key>", "sign the lockfile with this Ed25519 private key (writes LOCK.dsse.json)")
    .requiredOption("--out <lock>", "where to write the lockfile")
    .option("--json", "print the result as JSON")
    .action(async (path: string, opts: ResolveOpts) => {
      const { profile, lock, registries: regs } = await resolveWithFlags(ctx, path, opts);
      const key = opts.sign !== undefined ? readSigningKey(opts.sign) : undefined;
      const out = resolvePath(ctx.cwd, opts.out);
      // a signature attests that every chosen layer can be fetched as pinned: its blob must be there, intact
      if (key !== undefined)
        await requireLayerBlobs(
          lock,
          regs.map((r) => r.registry),
          ctx.progress,
        );
      const written = writeLockfile(out, lock, key);
      const id = environmentId(lock);
      const ignored = notActedUpon(profile);
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.resolve/1", {
          lockfile: out,
          environment_id: id,
          verification_policy: lock.verification_policy,
          base: { name: lock.base.name, source: lock.base.source },
          layers: lock.layers.map((l) => ({ id: l.id, mount_order: l.mount_order, from_formation: l.from_formation ?? null })),
          signature: written.signature ?? null,
          not_acted_upon: ignored,
          warnings: hostWarning(lock),
        });
        return;
      }
      const lines = [
        `resolved ${profile.name}: ${lock.layers.length} layer(s) on ${lock.base.name} ${lock.base.arch} (base ${lock.base.source === "declared" ? "declared, not probed" : `probed from ${lock.base.source}`})`,
        ...lock.layers.map((l) => `  ${l.mount_order}  ${l.id}${l.from_formation ? `  (formation ${l.from_formation})` : ""}`),
        `policy      ${lock.verification_policy}`,
        `environment ${id}`,
        `wrote ${out}${written.signature ? ` and ${out}.dsse.json (signed by ${written.signature.keyid})` : " (unsigned: pass --sign KEY to sign it)"}`,
      ];
      if (ignored.length > 0) lines.push(`recorded, not acted upon: ${ignored.join(", ")}`);
      ctx.io.out(lines.join("\n"));
      for (const w of hostWarning(lock)) ctx.io.err(`warning: ${w}`);
    });
}

/** The resolver's warning for requires_host: recorded in the lockfile, never checked against a host. */
function hostWarning(lock: Lockfile): string[] {
  return lockfileCaveats(lock).filter((c) => c.startsWith("host requirements"));
}
