import type { Command } from "commander";
import { checkWorkloadRun } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { inputsRootFlag, INPUTS_ROOT_HELP } from "../flags.ts";
import { printJson } from "../output.ts";

/** A path as one line: one with a control character (a newline could forge a line) is printed JSON-quoted. */
function printable(s: string): string {
  return /[\u0000-\u001f\u007f]/.test(s) ? JSON.stringify(s) : s;
}

export function registerWorkloadCheck(parent: Command, ctx: Context): void {
  parent
    .command("check")
    .description(
      "list every problem of a workload's image and run section in one pass (what run would refuse, with the policy that would admit each); assembles nothing, writes nothing to the store",
    )
    .argument("<spec>", "workload spec (cairn.workload/1, YAML or JSON) naming a local OCI layout or a binary")
    .option("--inputs-root <dir>", INPUTS_ROOT_HELP)
    .option("--json", "print the result as JSON")
    .action(async (spec: string, opts: { json?: boolean; inputsRoot?: string }) => {
      const r = await checkWorkloadRun({
        specPath: spec,
        ...(opts.inputsRoot !== undefined ? { inputsRoot: inputsRootFlag(ctx.cwd, opts.inputsRoot) } : {}),
      });
      ctx.exitCode = r.problemCount === 0 ? 0 : 1;
      const omitted = r.problemCount - r.problems.length;
      const first = r.problems[0];
      if (opts.json)
        return printJson(ctx.io, "cairn.cli.workload-check/1", {
          // a failure under --json carries the error object every command prints (the first problem's code and path)
          ...(first === undefined
            ? {}
            : {
                error: {
                  code: first.code,
                  message: `${r.problemCount} problem(s); the first: ${first.message}`,
                  path: first.path,
                  hint: r.admissible ? "every problem is admitted by the suggested policy" : "some problems are admitted by no policy: fix the image",
                },
              }),
          source_kind: r.kind,
          ok: r.problemCount === 0,
          problems: r.problems,
          problem_count: r.problemCount,
          ...(omitted > 0 ? { problems_omitted: omitted } : {}),
          admissible: r.admissible,
          suggested_policy: r.suggested,
          skipped: r.skipped,
          dropped_xattrs: r.droppedXattrs,
        });
      const lines: string[] = [];
      if (r.problemCount === 0)
        lines.push(
          `no problems: the ${r.kind} workload assembles as the spec stands, and its run section and guest size pass run's checks (not checked here: the kit's own bytes, the host's free space)`,
        );
      else lines.push(`${r.problemCount} problem(s):`);
      for (const p of r.problems)
        lines.push(
          `  ${p.code.padEnd(20)} ${printable(p.path || "/")}: ${printable(p.message)}${p.policy ? `  [admitted by policy ${p.policy}]` : ""}${p.fatal ? "  [rest of layer not read]" : ""}`,
        );
      if (omitted > 0) lines.push(`  … and ${omitted} more`);
      const keys = Object.entries(r.suggested);
      if (r.problemCount > 0 && keys.length > 0) {
        lines.push(
          `${r.admissible ? "all of them are admitted by" : "policies that admit some of them"}: policy: {${keys.map(([k, v]) => `${k}: ${v}`).join(", ")}}`,
        );
      }
      if (r.skipped.length > 0) lines.push(`the spec's policy leaves out ${r.skipped.length} device node(s) and FIFO(s)`);
      if (r.droppedXattrs.length > 0) lines.push(`the spec's policy drops the xattrs of ${r.droppedXattrs.length} member(s)`);
      ctx.io.out(lines.join("\n"));
    });
}
