import type { Command } from "commander";
import { resolve } from "node:path";
import { checkRefName } from "../../oci/index.ts";
import { CairnError } from "../../core/index.ts";
import { DEFAULT_EXPORT_LAUNCH, EXPORT_FORMATS, exportLock, type ExportFormat } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { clock, exportBaseFlag, launchArgv, lockVerifyOptions, withLockVerifyFlags, type LockVerifyFlags } from "../flags.ts";
import { remoteFlags } from "../remote-flags.ts";

interface ExportFlags extends LockVerifyFlags {
  oci?: string;
  out?: string;
  format?: string;
  tag?: string;
  user?: string;
  workdir?: string;
  cmd?: string[];
  index?: string;
  condaChannel?: string;
  cranRepo?: string;
  json?: boolean;
}

/** `--format` and where to write: `--oci DIR` (a layout) or `--out PATH` (a layout, or with `--format oci-archive` a tar file), exactly one. */
function exportTarget(opts: ExportFlags): { format: ExportFormat; out: string } {
  const unsafeFormat = opts.format ?? "oci";
  const format = EXPORT_FORMATS.find((f) => f === unsafeFormat);
  if (format === undefined)
    throw new CairnError("USAGE", `--format ${JSON.stringify(unsafeFormat.slice(0, 60))} is not one of ${EXPORT_FORMATS.join(", ")}`, { path: "--format" });
  if (opts.oci !== undefined && format !== "oci")
    throw new CairnError("USAGE", "--oci names a layout directory; an oci-archive is written with --out FILE", { path: "--oci" });
  if ((opts.oci === undefined) === (opts.out === undefined))
    throw new CairnError("USAGE", "give one of --oci LAYOUT or --out PATH (with --format oci-archive, a tar file)", { path: "--out" });
  return { format, out: (opts.oci ?? opts.out)! };
}

/** `cairn lock export LOCK --oci LAYOUT | --format oci-archive --out FILE`: the verified lockfile as a deterministic OCI image layout or archive. */
export function registerLockExport(lock: Command, ctx: Context): void {
  const cmd = lock
    .command("export")
    .description(
      "verify a lockfile as `lock verify` does, then write its environment as an OCI image layout: the base, each layer in mount order, env and launch config (the same lockfile and base give the same manifest digest on any host)",
    )
    .argument("<lock>", "lockfile (its signature is LOCK.dsse.json)")
    .argument("[command...]", "after --, the image's Cmd: an absolute program path and its arguments, any of which may start with -")
    .option("--oci <layout>", "the OCI image layout directory to write (must not exist)")
    .option("--format <format>", "oci (an image layout directory, the default) or oci-archive (one deterministic tar of it, as skopeo's oci-archive: reads)")
    .option("--out <path>", "where to write: the layout directory, or with --format oci-archive the tar file (must not exist)");
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
      const target = exportTarget(opts);
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
        outDir: resolve(ctx.cwd, target.out),
        format: target.format,
        ...(opts.tag !== undefined ? { refName: opts.tag } : {}),
        packageIndexes: {
          ...(opts.index !== undefined ? { pip: opts.index } : {}),
          ...(opts.condaChannel !== undefined ? { conda: opts.condaChannel } : {}),
          ...(opts.cranRepo !== undefined ? { cran: opts.cranRepo } : {}),
        },
        cwd: ctx.cwd,
      });
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.lock-export/1", {
          ...(r.archive !== undefined ? { archive: r.archive } : { layout: r.layout.dir }),
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
          `exported   ${r.layout.dir}${r.archive !== undefined ? ` (oci-archive, ${r.archive.size} bytes, ${r.archive.sha256})` : ""}`,
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
