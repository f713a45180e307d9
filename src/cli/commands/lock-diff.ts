import type { Command } from "commander";
import { diffLocks, readLockfile } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

export function registerLockDiff(lock: Command, ctx: Context): void {
  lock
    .command("diff")
    .description("field-level differences between two lockfiles (exit 0 same EnvironmentID, 1 different); env values are never shown")
    .argument("<a>", "lockfile")
    .argument("<b>", "lockfile")
    .option("--json", "print the result as JSON")
    .action((a: string, b: string, opts: { json?: boolean }) => {
      const d = diffLocks(readLockfile(a).lock, readLockfile(b).lock);
      ctx.exitCode = d.same_id ? 0 : 1;
      if (opts.json) {
        printJson(ctx.io, d);
        return;
      }
      const mark = { added: "+", removed: "-", changed: "~" } as const;
      const lines = [`a: ${d.id_a ?? "unfrozen"}`, `b: ${d.id_b ?? "unfrozen"}`, d.same_id ? "same EnvironmentID" : "different EnvironmentID"];
      for (const c of d.changes) {
        lines.push(`${mark[c.change]} ${c.path}${c.change === "changed" ? `: ${c.a} → ${c.b}` : `: ${c.a ?? c.b}`}`);
      }
      ctx.io.out(lines.join("\n"));
    });
}
