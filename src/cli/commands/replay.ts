import type { Command } from "commander";
import { resolve } from "node:path";
import { CairnError } from "../../core/index.ts";
import { defaultStoreDir } from "../../store/index.ts";
import { kitDir, loadKit, replayRun } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { parseTimeout } from "../flags.ts";

export function registerReplay(program: Command, ctx: Context): void {
  program
    .command("replay")
    .description("verify a recorded run's whole closure, replay it passively under QEMU and compare events, assertions and outcome exactly")
    .argument("<run-dir>", "a run directory written by `cairn run`")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--kit <dir>", "guest kit (default $CAIRN_KIT, $CAIRN_HOME/kit or $XDG_CACHE_HOME/cairn/kit)")
    .option("--timeout <seconds>", "wall-clock limit for QEMU; the process group is killed after it")
    .option("--include-private-streams", "put the exact output streams into a mismatch's failure bundle (local use only)")
    .option("--json", "print the result as JSON")
    .action(async (runDir: string, opts: { store?: string; kit?: string; timeout?: string; includePrivateStreams?: boolean; json?: boolean }) => {
      const dir = kitDir(ctx.env, ctx.cwd, opts.kit);
      const kit = loadKit(dir);
      if (kit === undefined) {
        throw new CairnError("PREREQUISITE_MISSING", `no guest kit at ${dir}`, { path: dir, hint: "run `cairn setup` first (or pass --kit)" });
      }
      const r = await replayRun({
        runDir: resolve(ctx.cwd, runDir),
        storeDir: defaultStoreDir(ctx.env, ctx.cwd, opts.store),
        kit,
        timeoutMs: parseTimeout(opts.timeout),
        includePrivateStreams: opts.includePrivateStreams === true,
        log: (line) => ctx.io.err(`cairn replay: ${line}`),
      });
      if (opts.json) {
        printJson(ctx.io, {
          run_id: r.manifest.run_id,
          matches: true,
          outcome: r.evaluation.outcome,
          status: r.evaluation.status,
          replay_dir: r.replayDir,
          qemu_ms: Math.round(r.qemuMs),
        });
      } else {
        ctx.io.out(
          [
            `replay   ${r.manifest.run_id}  matches the record`,
            `outcome  ${r.evaluation.outcome}`,
            `events   ${r.evaluation.events.length} identical, assertions ${r.evaluation.assertions.length} identical`,
            `replayed in ${(r.qemuMs / 1000).toFixed(1)} s (${r.replayDir})`,
          ].join("\n"),
        );
      }
    });
}
