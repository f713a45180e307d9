import type { Command } from "commander";
import { CairnError } from "../../core/index.ts";
import { defaultStoreDir } from "../../store/index.ts";
import { defaultRunsDir, ensureKit, kitDir, recordRun } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { CAIRN_VERSION } from "../cairn-version.ts";
import { parseTimeout } from "../flags.ts";

export function registerRun(program: Command, ctx: Context): void {
  program
    .command("run")
    .description("record a workload run under QEMU record/replay and write a replayable run directory")
    .argument("<spec-or-lock>", "a workload spec (assembled first) or a workload lock")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--runs <dir>", "where run directories go (default $CAIRN_HOME/runs or $XDG_DATA_HOME/cairn/runs)")
    .option("--kit <dir>", "guest kit (default $CAIRN_KIT, $CAIRN_HOME/kit or $XDG_CACHE_HOME/cairn/kit)")
    .option("--timeout <seconds>", "wall-clock limit for QEMU; the process group is killed after it")
    .option("--include-private-streams", "put the exact output streams into the failure bundle (local use only)")
    .option("--json", "print the result as JSON")
    .action(async (input: string, opts: { store?: string; runs?: string; kit?: string; timeout?: string; includePrivateStreams?: boolean; json?: boolean }) => {
      const log = (line: string) => ctx.io.err(`cairn run: ${line}`);
      const kit = await ensureKit({ dir: kitDir(ctx.env, ctx.cwd, opts.kit), isRoot: process.getuid?.() === 0, log });
      const r = await recordRun({
        input,
        storeDir: defaultStoreDir(ctx.env, ctx.cwd, opts.store),
        runsDir: defaultRunsDir(ctx.env, ctx.cwd, opts.runs),
        kit,
        cairnVersion: CAIRN_VERSION,
        timeoutMs: parseTimeout(opts.timeout),
        includePrivateStreams: opts.includePrivateStreams === true,
        log,
      });
      const failed = r.evaluation.assertions.filter((a) => !a.ok).length;
      const summary = {
        run_dir: r.runDir,
        run_id: r.manifest.run_id,
        status: r.manifest.status,
        outcome: r.manifest.outcome,
        vm: r.manifest.vm_digest,
        workload: r.manifest.workload.workload,
        assertions: { total: r.evaluation.assertions.length, failed },
        replay_command: r.replayCommand,
        qemu_ms: Math.round(r.durations.qemuMs),
      };
      const failure =
        r.manifest.status === "passed"
          ? undefined
          : new CairnError(
              r.manifest.status === "assertions-failed"
                ? "ASSERTION_FAILED"
                : r.manifest.status === "launch-failed"
                  ? "RUN_LAUNCH_FAILED"
                  : "RUN_INFRASTRUCTURE",
              `the run was recorded but did not pass: ${r.manifest.status}`,
              { path: r.runDir, hint: "see failure-bundle.json in the run directory (shareable) and streams/ (private); the run still replays" },
            );
      if (opts.json) {
        // one JSON document: the error (as every --json failure) and the recorded run
        printJson(ctx.io, failure ? { error: failure.toJSON(), run: summary } : summary);
        if (failure) ctx.exitCode = failure.exitCode;
        return;
      }
      ctx.io.out(
        [
          `run      ${r.manifest.run_id}  ${r.manifest.status}`,
          `dir      ${r.runDir}`,
          `workload ${r.manifest.workload.workload}`,
          `vm       ${r.manifest.vm_digest}`,
          `outcome  ${r.manifest.outcome}`,
          `asserts  ${r.evaluation.assertions.length - failed}/${r.evaluation.assertions.length} passed`,
          `recorded in ${(r.durations.qemuMs / 1000).toFixed(1)} s; replay with:`,
          `  ${r.replayCommand}`,
        ].join("\n"),
      );
      // then the workload's own output, each stream to its own (the recording is already written; printing changes nothing in it)
      for (const [inv, s] of [...r.streams].sort((a, b) => a[0] - b[0])) {
        if (s.stdout.length > 0) ctx.io.out(`--- invocation ${inv} stdout (${s.stdout.length} bytes) ---\n${s.stdout.toString("utf8")}`);
        if (s.stderr.length > 0) ctx.io.err(`--- invocation ${inv} stderr (${s.stderr.length} bytes) ---\n${s.stderr.toString("utf8")}`);
      }
      if (failure) throw failure;
    });
}
