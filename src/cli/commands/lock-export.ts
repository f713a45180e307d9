import type { Command } from "commander";
import { resolve } from "node:path";
import { checkRefName } from "../../oci/index.ts";
import { DEFAULT_EXPORT_LAUNCH, exportLock } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { clock, exportBaseFlag, launchArgv, lockVerifyOptions, withLockVerifyFlags, type LockVerifyFlags } from "../flags.ts";
import { remoteFlags } from "../remote-flags.ts";

interface ExportFlags extends LockVerifyFlags {
  oci: string;
  tag?: string;
  user?: string;
  workdir?: string;
  cmd?: string[];
  index?: string;
  condaChannel?: string;
  cranRepo?: string;
  json?: boolean;
}

/** `cairn lock export LOCK --oci LAYOUT`: the verified lockfile as a deterministic OCI image layout. */
export function registerLockExport(lock: Command, ctx: Context): void {
  const cmd = lock
    .command("export")
    .description(
      "verify a lockfile as `lock verify` does, then write its environment as an OCI image layout: the base, each layer in mount order, env and launch config (the same lockfile and base give the same manifest digest on any host)",
    )
    .argument("<lock>", "lockfile (its signature is LOCK.dsse.json)")
    .argument("[command...]", "after --, the image's Cmd: an absolute program path and its arguments, any of which may start with -")
    .requiredOption("--oci <layout>", "the OCI image layout directory to write (must not exist)");
  withLockVerifyFlags(remoteFlags(cmd), true)
    .option(
      "--tag <name>",
      "name the image in the layout (org.opencontainers.image.ref.name), so `umoci --image LAYOUT:NAME` and `skopeo oci:LAYOUT:NAME` find it",
    )
    .option("--user <uid:gid>", "the image's numeric User (default 1000:1000; root is refused)")
    .option("--workdir <dir>", "the image's WorkingDir (default /)")
    .option("--cmd <argv...>", "the image's Cmd: an absolute program path and its arguments (last option)")
    .option("--index <dir-or-url>", "read the pinned pip archives from this mirror of the index the lockfile recorded")
    .option("--conda-channel <dir-or-url>", "read the pinned conda archives from this mirror of the recorded channel")
    .option("--cran-repo <dir-or-url>", "read the pinned CRAN archives from this mirror of the recorded repository")
    .option("--json", "print the result as JSON")
    .action(async (path: string, afterDashes: string[], opts: ExportFlags) => {
      const argv = launchArgv(opts.cmd, afterDashes);
      if (opts.tag !== undefined) checkRefName(opts.tag, "--tag");
      const now = clock(ctx.env);
      const r = await exportLock({
        lockPath: resolve(ctx.cwd, path),
        verify: await lockVerifyOptions(ctx, opts, now),
        base: exportBaseFlag(ctx, opts.base),
        contents: opts.contents === true,
        launch: {
          user: opts.user ?? DEFAULT_EXPORT_LAUNCH.user,
          workdir: opts.workdir ?? DEFAULT_EXPORT_LAUNCH.workdir,
          ...(argv !== undefined ? { argv } : {}),
        },
        outDir: resolve(ctx.cwd, opts.oci),
        ...(opts.tag !== undefined ? { refName: opts.tag } : {}),
        packageIndexes: {
          ...(opts.index !== undefined ? { pip: opts.index } : {}),
          ...(opts.condaChannel !== undefined ? { conda: opts.condaChannel } : {}),
          ...(opts.cranRepo !== undefined ? { cran: opts.cranRepo } : {}),
        },
        cwd: ctx.cwd,
      });
      if (opts.json) {
        printJson(ctx.io, {
          layout: r.layout.dir,
          manifest: r.layout.manifest.digest,
          ...(opts.tag !== undefined ? { tag: opts.tag } : {}),
          config: r.layout.config.digest,
          layers: r.layout.layers,
          layer_bytes: r.layout.layerBytes,
          environment_id: r.environmentId,
          lockfile_sha256: r.lockfileSha256,
          added: r.added.map((a) => ({ kind: a.kind, digest: a.digest, size: a.size })),
          caveats: r.caveats,
        });
        return;
      }
      ctx.io.out(
        [
          `exported   ${r.layout.dir}`,
          `manifest   ${r.layout.manifest.digest}`,
          ...(opts.tag !== undefined ? [`tag        ${opts.tag}`] : []),
          `environment ${r.environmentId}`,
          `lockfile   ${r.lockfileSha256}`,
          `layers     ${r.layout.layers}: ${r.layout.layers - r.report.lock.layers.length - r.added.length} base, ${r.report.lock.layers.length} strata in mount order${r.added.map((a) => `, ${a.kind}`).join("")}; ${r.layout.layerBytes} bytes`,
          ...r.caveats.map((c) => `  ! ${c}`),
        ].join("\n"),
      );
    });
}
