import type { Command } from "commander";
import { defaultStoreDir } from "../../store/index.ts";
import { assembleWorkload } from "../../workload/index.ts";
import type { Context } from "../context.ts";
import { remoteFlags, remoteOptions, type RemoteFlags } from "../flags.ts";
import { printJson } from "../output.ts";
import { CAIRN_VERSION } from "../cairn-version.ts";

export function registerWorkloadAssemble(parent: Command, ctx: Context): void {
  remoteFlags(parent.command("assemble"))
    .description("assemble a workload spec into the content store and write its private workload lock")
    .argument("<spec>", "workload spec (cairn.workload/1, YAML or JSON)")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--lock-out <file>", "where to write the lock (default <spec name>.lock.json beside the spec)")
    .option("--json", "print the result as JSON")
    .action(async (spec: string, opts: RemoteFlags & { store?: string; lockOut?: string; json?: boolean }) => {
      const r = await assembleWorkload({
        specPath: spec,
        storeDir: defaultStoreDir(ctx.env, ctx.cwd, opts.store),
        lockOut: opts.lockOut,
        cairnVersion: CAIRN_VERSION,
        progress: ctx.io.tty && opts.json !== true ? (line) => ctx.io.err(line) : undefined,
        remote: remoteOptions(ctx, opts),
      });
      const result = {
        source_kind: r.kind,
        workload: r.identities.workload,
        identities: { source: r.identities.source, fs: r.identities.fs, launch: r.identities.launch },
        derived: r.derivedDigest,
        lock: r.lockPath,
        sizes: { entries: r.entries, files: r.files, tree_bytes: r.treeBytes, raw_bytes: r.rawBytes },
        duration_ms: r.durationMs,
      };
      if (opts.json) return printJson(ctx.io, result);
      ctx.io.out(
        [
          `assembled ${r.kind} workload`,
          `workload  ${r.identities.workload}`,
          `fs        ${r.identities.fs}`,
          `launch    ${r.identities.launch}`,
          `source    ${r.identities.source}`,
          `tree      ${r.entries} entries, ${r.files} files, ${r.treeBytes} bytes (raw closure ${r.rawBytes} bytes)`,
          `lock      ${r.lockPath}`,
          `took      ${r.durationMs} ms`,
        ].join("\n"),
      );
    });
}
