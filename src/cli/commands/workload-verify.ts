import type { Command } from "commander";
import { defaultStoreDir } from "../../store/index.ts";
import { openVerifiedWorkload } from "../../workload/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

export function registerWorkloadVerify(parent: Command, ctx: Context): void {
  parent
    .command("verify")
    .description("re-verify a workload lock against the store: every raw object, the reparsed spec and OCI graph, the rebuilt tree and every identity")
    .argument("<lock>", "workload lock written by `cairn workload assemble`")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--json", "print the result as JSON")
    .action(async (lockPath: string, opts: { store?: string; json?: boolean }) => {
      const started = performance.now();
      const w = await openVerifiedWorkload(lockPath, defaultStoreDir(ctx.env, ctx.cwd, opts.store));
      const ms = Math.round(performance.now() - started);
      if (opts.json) {
        return printJson(ctx.io, {
          verified: true,
          source_kind: w.kind,
          workload: w.identities.workload,
          fs: w.identities.fs,
          launch: w.identities.launch,
          repaired: w.repaired,
          duration_ms: ms,
        });
      }
      ctx.io.out(`verified ${w.kind} workload ${w.identities.workload}\n${w.lock.raw.length} raw objects, ${w.tree.size} tree entries re-derived in ${ms} ms`);
      for (const r of w.repaired) ctx.io.out(`repaired ${r}: it was missing or did not match, and was rebuilt from the verified raw objects`);
    });
}
