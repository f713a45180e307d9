import type { Command } from "commander";
import { defaultStoreDir } from "../../store/index.ts";
import { defaultKeysDir, verifyWorkloadLock } from "../../workload/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

export function registerWorkloadVerify(parent: Command, ctx: Context): void {
  parent
    .command("verify")
    .description(
      "re-verify a workload lock against the store: every raw object, the reparsed spec and OCI graph, the rebuilt tree and every identity (a second verify of an OCI lock on this machine hashes every raw object and the derived entry again but does not re-derive them, under a memo of the first)",
    )
    .argument("<lock>", "workload lock written by `cairn workload assemble`")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--keys <dir>", "verify memo key directory (default $CAIRN_HOME/keys or $XDG_DATA_HOME/cairn/keys)")
    .option("--full", "re-derive from the raw closure even when this machine's memo of an earlier verify holds")
    .option("--json", "print the result as JSON")
    .action(async (lockPath: string, opts: { store?: string; keys?: string; full?: boolean; json?: boolean }) => {
      const started = performance.now();
      const w = await verifyWorkloadLock(lockPath, defaultStoreDir(ctx.env, ctx.cwd, opts.store), {
        memoKeyDir: defaultKeysDir(ctx.env, ctx.cwd, opts.keys),
        full: opts.full === true,
        progress: ctx.progress,
      });
      const ms = Math.round(performance.now() - started);
      if (opts.json) {
        return printJson(ctx.io, "cairn.cli.workload-verify/1", {
          verified: true,
          source_kind: w.kind,
          workload: w.identities.workload,
          fs: w.identities.fs,
          launch: w.identities.launch,
          repaired: w.repaired,
          derivation: w.derivation.how,
          ...(w.derivation.how === "memo"
            ? { memo_of: w.derivation.derivedBy, memo_verified_at: w.derivation.verifiedAt, pack_body: w.derivation.packBody, tree: w.derivation.tree }
            : {
                memo_written: w.derivation.memoWritten,
                ...(w.derivation.why !== undefined ? { memo_not_used: w.derivation.why } : {}),
                ...(w.derivation.memoSkipped !== undefined ? { memo_skipped: w.derivation.memoSkipped } : {}),
              }),
          duration_ms: ms,
        });
      }
      const how =
        w.derivation.how === "memo"
          ? `and the derived entry hashed, pack ${w.derivation.packBody === "hashed" ? "contents hashed" : "index checked (file unchanged since then; every content is checked as it is read)"}, under this machine's memo of ${w.derivation.derivedBy === "assemble" ? "the lock's assembly" : "the full verify"} at ${w.derivation.verifiedAt}: the tree was not derived again, in ${ms} ms (--full re-derives)`
          : `hashed, ${w.entries} tree entries re-derived in ${ms} ms${w.derivation.why !== undefined ? ` (${w.derivation.why})` : ""}${w.derivation.memoWritten ? "; memo written for the next verify on this machine" : ""}${w.derivation.memoSkipped !== undefined ? `; no memo written (${w.derivation.memoSkipped})` : ""}`;
      ctx.io.out(`verified ${w.kind} workload ${w.identities.workload}\n${w.lock.raw.length} raw objects ${how}`);
      for (const r of w.repaired) ctx.io.out(`repaired ${r}: it was missing or did not match, and was rebuilt from the verified raw objects`);
    });
}
