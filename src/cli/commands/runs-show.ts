import type { Command } from "commander";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { defaultRunsDir, describeRun } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

export function registerRunsShow(runs: Command, ctx: Context): void {
  runs
    .command("show")
    .description("describe one run: status, identities, guest root and RAM, replays")
    .argument("<run>", "a run directory, or a run id under --runs")
    .option("--runs <dir>", "the runs directory a run id is looked up in (default $CAIRN_HOME/runs or $XDG_DATA_HOME/cairn/runs)")
    .option("--json", "print the description as JSON")
    .action((run: string, opts: { runs?: string; json?: boolean }) => {
      const asDir = resolve(ctx.cwd, run);
      const dir = existsSync(asDir) ? asDir : join(defaultRunsDir(ctx.env, ctx.cwd, opts.runs), run);
      const r = describeRun(dir);
      if (opts.json) {
        printJson(ctx.io, r);
        return;
      }
      const replays =
        r.replays.length === 0
          ? "none"
          : r.replays.map((m, i) => `${i + 1}: ${m === true ? "matched" : m === false ? "did not match" : "no result"}`).join(", ");
      ctx.io.out(
        [
          `run       ${r.run_id}`,
          `status    ${r.status}`,
          `recorded  ${r.recorded_at}`,
          `workload  ${r.source_kind} ${r.workload}`,
          `vm        ${r.vm_digest} (${r.root} root, ${r.memory_mib} MiB)`,
          `outcome   ${r.outcome}`,
          ...(r.inputs !== null ? [`inputs    ${r.inputs} (run.inputs tree)`] : []),
          `replays   ${replays}`,
          `dir       ${r.dir}`,
        ].join("\n"),
      );
    });
}
