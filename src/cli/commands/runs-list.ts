import type { Command } from "commander";
import { defaultRunsDir, listRuns } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

export function registerRunsList(runs: Command, ctx: Context): void {
  runs
    .command("list")
    .description("list the run directories: id, status, replays (+ matched, - did not, ? no result), root, workload")
    .option("--runs <dir>", "the runs directory (default $CAIRN_HOME/runs or $XDG_DATA_HOME/cairn/runs)")
    .option("--json", "print the list as JSON")
    .action((opts: { runs?: string; json?: boolean }) => {
      const dir = defaultRunsDir(ctx.env, ctx.cwd, opts.runs);
      const { runs: list, unreadable } = listRuns(dir);
      if (opts.json) {
        printJson(ctx.io, { runs_dir: dir, runs: list, unreadable });
        return;
      }
      if (list.length === 0 && unreadable.length === 0) {
        ctx.io.out(`no runs in ${dir}`);
        return;
      }
      for (const r of list) {
        const replays = r.replays.map((m) => (m === true ? "+" : m === false ? "-" : "?")).join("") || "none";
        ctx.io.out(`${r.run_id}  ${r.status.padEnd(22)}  replays ${replays.padEnd(6)}  ${r.root.padEnd(9)}  ${r.source_kind} ${r.workload}`);
      }
      for (const u of unreadable) ctx.io.out(`${u.dir}  unreadable (${u.error})`);
    });
}
