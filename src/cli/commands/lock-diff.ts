import type { Command } from "commander";
import { diffLocks, readLockfileUnvalidated } from "../../strata/index.ts";
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
      // Parsed without Validate, so a lockfile that breaks a rule is shown with its problems instead of refused.
      const la = readLockfileUnvalidated(a);
      const lb = readLockfileUnvalidated(b);
      const d = diffLocks(la.lock, lb.lock, la.problems, lb.problems);
      ctx.exitCode = d.same_id ? 0 : 1;
      if (opts.json) {
        printJson(ctx.io, d);
        return;
      }
      const mark = { added: "+", removed: "-", changed: "~" } as const;
      const label = (id: string | null, problems: readonly unknown[]): string => id ?? (problems.length > 0 ? "invalid (no EnvironmentID)" : "unfrozen");
      const lines = [`a: ${label(d.id_a, d.problems_a)}`, `b: ${label(d.id_b, d.problems_b)}`, d.same_id ? "same EnvironmentID" : "different EnvironmentID"];
      for (const [side, problems] of [
        ["a", d.problems_a],
        ["b", d.problems_b],
      ] as const) {
        for (const p of problems) lines.push(`! ${side} ${p.path}: [${p.code}] ${p.message}`);
      }
      for (const c of d.changes) {
        lines.push(`${mark[c.change]} ${c.path}${c.change === "changed" ? `: ${c.a} → ${c.b}` : `: ${c.a ?? c.b}`}`);
      }
      ctx.io.out(lines.join("\n"));
    });
}
