import type { Command } from "commander";
import { resolve } from "node:path";
import { defaultStoreDir } from "../../store/index.ts";
import { kitDir, pushBundle } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { remoteFlags, remoteOptions, type RemoteFlags } from "../remote-flags.ts";

/** `cairn bundle push RUN_DIR|BUNDLE oci://HOST/REPO[:TAG]`: the bundle as an OCI artifact, one blob per member (vm/bundle-push.ts). */
export function registerBundlePush(bundle: Command, ctx: Context): void {
  remoteFlags(bundle.command("push"))
    .description(
      "push a run's replay bundle to an OCI registry, one blob per member (the registry's blobs are not sent again); prints oci://HOST/REPO@sha256:… for `cairn replay`",
    )
    .argument("<run>", "a run directory written by `cairn run`, or a bundle file written by `cairn bundle` (pushed as it is)")
    .argument("<ref>", "oci://HOST[:PORT]/REPO[:TAG] (without a tag the manifest is stored under its digest only)")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--kit <dir>", "guest kit (default $CAIRN_KIT, $CAIRN_HOME/kit or $XDG_CACHE_HOME/cairn/kit)")
    .option(
      "--include-private",
      "a run directory: also push the exact output streams, console log, protocol stream and checkpoints.qcow2 (as `cairn bundle --include-private`)",
    )
    .option("--include-inputs", "a run directory: also push the run's inputs (as `cairn bundle --include-inputs`)")
    .option("--json", "print the result as JSON")
    .action(
      async (
        run: string,
        ref: string,
        opts: RemoteFlags & { store?: string; kit?: string; includePrivate?: boolean; includeInputs?: boolean; json?: boolean },
      ) => {
        const r = await pushBundle({
          source: resolve(ctx.cwd, run),
          reference: ref,
          storeDir: defaultStoreDir(ctx.env, ctx.cwd, opts.store),
          kitDir: kitDir(ctx.env, ctx.cwd, opts.kit),
          remote: remoteOptions(ctx, opts),
          includePrivate: opts.includePrivate === true,
          includeInputs: opts.includeInputs === true,
          progress: ctx.progress,
        });
        if (opts.json === true)
          // named field by field, in the casing of every other document (the library's result says runId)
          return printJson(ctx.io, "cairn.cli.bundle-push/1", {
            reference: r.reference,
            digest: r.digest,
            tag: r.tag ?? null,
            run_id: r.runId,
            members: r.members,
            member_bytes: r.memberBytes,
            uploaded: r.uploaded,
            present: r.present,
            private: r.private,
            inputs: r.inputs,
          });
        ctx.io.out(
          [
            `pushed   ${r.reference}`,
            `run      ${r.runId}`,
            `members  ${r.members} (${r.memberBytes} bytes): ${r.uploaded} blobs uploaded, ${r.present} already in the registry`,
            ...(r.tag !== undefined ? [`tag      ${r.tag}`] : []),
            ...(r.private
              ? [
                  "private  the bundle holds private members (streams, console, protocol, checkpoints, the run's inputs, or a branch's start snapshot and stream prefix): mind who can pull it",
                ]
              : []),
            ...(r.inputs === "left-out"
              ? ["inputs   left out: a replay elsewhere refuses before launch unless its store holds them (push again with --include-inputs)"]
              : []),
            `replay   cairn replay ${r.reference}`,
          ].join("\n"),
        );
      },
    );
}
