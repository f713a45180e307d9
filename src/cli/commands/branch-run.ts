import type { Command } from "commander";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadManifestOrDevcontainer } from "../../manifest/index.ts";
import { defaultStoreDir } from "../../store/index.ts";
import { defaultRunsDir, kitDir, recordBranch, replayKit, runStatusFailure } from "../../vm/index.ts";
import { defaultKeysDir } from "../../workload/index.ts";
import { CAIRN_VERSION } from "../cairn-version.ts";
import type { Context } from "../context.ts";
import { parseTimeout } from "../flags.ts";
import { printJson } from "../output.ts";
import { runOutputModel, runOutputText } from "../run-output.ts";
import { printStreams } from "../workload-output.ts";

interface BranchFlags {
  at: string;
  scenario: string;
  store?: string;
  runs?: string;
  kit?: string;
  environment?: string;
  serve?: string;
  allowUnpinned?: boolean;
  timeout?: string;
  includePrivateStreams?: boolean;
  keys?: string;
  full?: boolean;
  json?: boolean;
}

/**
 * `cairn branch RUN --at CHECKPOINT --scenario FILE` (issue 35 item 3): records
 * a new run from a parent run's checkpoint with another scenario tail
 * (vm/branch.ts `recordBranch`), and prints it as `cairn run` prints a run,
 * with the parent and the checkpoint. A branch that does not pass is a
 * failure (its exit code is the run status's), as for `cairn run`.
 */
export function registerBranch(program: Command, ctx: Context): void {
  program
    .command("branch")
    .description(
      "record a new run from a recorded run's checkpoint with another scenario tail (the steps after it); the branch is a run directory like any other, replayed by `cairn replay`",
    )
    .argument("<run>", "the parent: a run directory recorded with run.checkpoints, or a run id under --runs")
    .requiredOption("--at <checkpoint>", "the checkpoint to start from (one the parent took: `cairn runs show RUN` lists them)")
    .requiredOption("--scenario <file>", "the scenario tail (YAML or JSON: steps, and optionally expect), continuing where the parent's agent stood")
    .option("--runs <dir>", "where the branch's run directory goes, and where a run id is looked up (default $CAIRN_HOME/runs or $XDG_DATA_HOME/cairn/runs)")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--kit <dir>", "guest kit (default $CAIRN_KIT, $CAIRN_HOME/kit or $XDG_CACHE_HOME/cairn/kit)")
    .option("--serve <dir>", "the directory the parent's http responder served (run.network.http.root); needed when it had one")
    .option("--environment <manifest>", "the environment manifest (or devcontainer.json) offered to resume in; required when the parent recorded one")
    .option("--allow-unpinned", "with --environment: accept an unpinned pair with equal addresses")
    .option("--timeout <seconds>", "wall-clock limit for QEMU; the process group is killed after it")
    .option("--include-private-streams", "put the exact output streams into the failure bundle (local use only)")
    .option("--keys <dir>", "verify memo key directory (default $CAIRN_HOME/keys or $XDG_DATA_HOME/cairn/keys)")
    .option("--full", "re-derive the workload from its raw closure even when this machine's memo holds")
    .option("--json", "print the result as JSON")
    .action(async (run: string, opts: BranchFlags) => {
      const log = (line: string) => ctx.io.err(`cairn branch: ${line}`);
      const runsDir = defaultRunsDir(ctx.env, ctx.cwd, opts.runs);
      const asDir = resolve(ctx.cwd, run);
      const parentDir = existsSync(asDir) ? asDir : join(runsDir, run);
      const timeoutMs = parseTimeout(opts.timeout);
      const r = await recordBranch({
        runDir: parentDir,
        checkpoint: opts.at,
        scenario: resolve(ctx.cwd, opts.scenario),
        storeDir: defaultStoreDir(ctx.env, ctx.cwd, opts.store),
        runsDir,
        // the kit the parent names, by digest (as its replay takes it): asked for only once the parent and the tail are checked
        kit: async () => replayKit(kitDir(ctx.env, ctx.cwd, opts.kit), parentDir),
        cairnVersion: CAIRN_VERSION,
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        ...(opts.serve !== undefined ? { served: resolve(ctx.cwd, opts.serve) } : {}),
        ...(opts.environment !== undefined ? { offeredEnvironment: loadManifestOrDevcontainer(resolve(ctx.cwd, opts.environment)).manifest } : {}),
        allowUnpinned: opts.allowUnpinned === true,
        verify: { memoKeyDir: defaultKeysDir(ctx.env, ctx.cwd, opts.keys), full: opts.full === true, progress: ctx.progress },
        includePrivateStreams: opts.includePrivateStreams === true,
        log,
      });
      const summary = { ...runOutputModel(r), parent_dir: parentDir };
      const failure = runStatusFailure(r.manifest.status, r.runDir, r.unfinished?.message);
      if (opts.json) {
        // one JSON document: the error (as every --json failure) and the recorded branch, under `run` as `cairn run` puts it
        printJson(ctx.io, "cairn.cli.branch/1", failure ? { error: failure.toJSON(), run: summary } : summary);
        if (failure) ctx.exitCode = failure.exitCode;
        return;
      }
      ctx.io.out(runOutputText(r));
      printStreams(ctx.io, r.streams);
      if (failure) throw failure;
    });
}
