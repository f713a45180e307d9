import type { Command } from "commander";
import { diffLocks, readLockfileUnvalidated } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { DIFF_DIFFERENT, DIFF_EQUAL, DIFF_EXIT_HELP, DIFF_TROUBLE, diffExitCodes } from "../diff-exit.ts";

export function registerLockDiff(lock: Command, ctx: Context): void {
  lock
    .command("diff")
    .description(
      `field-level differences between two lockfiles (${DIFF_EXIT_HELP}; equal means the same EnvironmentID, and a lockfile that breaks a rule is shown with its problems and exits 2); env values are never shown`,
    )
    .argument("<a>", "lockfile")
    .argument("<b>", "lockfile")
    .option("--json", "print the result as JSON")
    .action((a: string, b: string, opts: { json?: boolean }) => {
      diffExitCodes(ctx);
      // Parsed without Validate, so a lockfile that breaks a rule is shown with its problems instead of refused.
      const la = readLockfileUnvalidated(a);
      const lb = readLockfileUnvalidated(b);
      const d = diffLocks(la.lock, lb.lock, la.problems, lb.problems);
      // An invalid lockfile has no EnvironmentID to compare: trouble, though the diff is shown.
      ctx.exitCode = d.problems_a.length + d.problems_b.length > 0 ? DIFF_TROUBLE : d.same_id ? DIFF_EQUAL : DIFF_DIFFERENT;
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.lock-diff/1", d);
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
