import { resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { readSigningKey, readVerifyingKey } from "../../core/index.ts";
import { environmentId, freezeLock, isFrozen, lockfileCaveats, readLockfile, writeLockfile } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { remoteLimitFlags, remoteLimitsFrom } from "../remote-flags.ts";

interface FreezeOpts {
  index?: string;
  condaChannel?: string;
  cranRepo?: string;
  python?: string;
  r?: string;
  pre?: boolean;
  pub?: string;
  sign?: string;
  out?: string;
  json?: boolean;
}

/** `cairn freeze LOCK [--index DIR_OR_URL] [--conda-channel …] [--cran-repo …] [--out LOCK] [--sign KEY]`. */
export function registerFreeze(program: Command, ctx: Context): void {
  remoteLimitFlags(program.command("freeze"))
    .description("pin a lockfile's package requests (pip, conda, cran) to exact archives by sha256, from an index")
    .argument("<lock>", "lockfile")
    .option("--index <dir-or-url>", "a PEP 503 simple index for the pip packages (directory, or https / loopback http URL)")
    .option("--conda-channel <dir-or-url>", "a conda channel (SUBDIR/repodata.json and noarch/repodata.json) for the conda packages")
    .option("--cran-repo <dir-or-url>", "a CRAN repository (src/contrib/PACKAGES) for the cran packages")
    .option("--python <X.Y>", "freeze for this Python (default: the lockfile's python capability or layer)")
    .option("--r <X.Y>", "freeze for this R (default: the lockfile's r capability or layer)")
    .option("--pre", "admit pip pre-releases everywhere (default: only where a requirement names one)")
    .option("--pub <key>", "verify the lockfile's signature with this public key first")
    .option("--sign <key>", "sign the frozen lockfile with this Ed25519 private key (writes OUT.dsse.json)")
    .option("--out <lock>", "where to write the frozen lockfile (default: replace LOCK; its old signature is removed unless --sign)")
    .option("--json", "print the result as JSON")
    .action(async (path: string, opts: FreezeOpts) => {
      const read = readLockfile(path, opts.pub !== undefined ? [readVerifyingKey(opts.pub)] : undefined);
      const key = opts.sign !== undefined ? readSigningKey(opts.sign) : undefined;
      const result = await freezeLock(read.lock, {
        indexes: {
          ...(opts.index !== undefined ? { pip: opts.index } : {}),
          ...(opts.condaChannel !== undefined ? { conda: opts.condaChannel } : {}),
          ...(opts.cranRepo !== undefined ? { cran: opts.cranRepo } : {}),
        },
        ...(opts.python !== undefined ? { python: opts.python } : {}),
        ...(opts.r !== undefined ? { r: opts.r } : {}),
        prereleases: opts.pre === true,
        cwd: ctx.cwd,
        remote: remoteLimitsFrom(ctx, opts),
        progress: ctx.progress,
      });
      const out = resolvePath(ctx.cwd, opts.out ?? path);
      const written = writeLockfile(out, result.lock, key);
      const id = isFrozen(result.lock) ? environmentId(result.lock) : null;
      const sets = result.lock.packages.map((s) => ({
        manager: s.manager,
        pinned: s.frozen !== undefined,
        target: s.frozen ? Object.fromEntries(s.frozen.target) : null,
        pins: (s.frozen?.pins ?? []).map((p) => ({ name: p.name, version: p.version, kind: p.kind, filename: p.filename, sha256: p.sha256 })),
      }));
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.freeze/1", {
          lockfile: out,
          environment_id: id,
          packages: sets,
          unpinned: result.unpinned,
          signature: written.signature ?? null,
          caveats: lockfileCaveats(result.lock),
        });
        return;
      }
      const lines: string[] = [];
      for (const s of sets) {
        if (!s.pinned) {
          lines.push(`${s.manager}: unpinned (no index given)`);
          continue;
        }
        lines.push(
          `${s.manager}: ${s.pins.length} archive(s) pinned for ${Object.entries(s.target!)
            .map(([k, v]) => `${k} ${v}`)
            .join(", ")}`,
        );
        for (const p of s.pins) lines.push(`  ${p.name} ${p.version}  ${p.kind}  ${p.sha256}`);
      }
      lines.push(`environment ${id ?? "unfrozen layers: no EnvironmentID"}`);
      lines.push(
        `wrote ${out}${written.signature ? ` and ${out}.dsse.json (signed by ${written.signature.keyid})` : " (unsigned: pass --sign KEY to sign it)"}`,
      );
      ctx.io.out(lines.join("\n"));
    });
}
