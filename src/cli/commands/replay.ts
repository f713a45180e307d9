import type { Command } from "commander";
import { resolve } from "node:path";
import { loadManifestOrDevcontainer } from "../../manifest/index.ts";
import { defaultStoreDir } from "../../store/index.ts";
import { defaultRunsDir, kitDir, localRun, recordedFailure, replayKit, replayRun, verdictLine } from "../../vm/index.ts";
import { defaultKeysDir } from "../../workload/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { remoteFlags, remoteOptions, type RemoteFlags } from "../remote-flags.ts";
import { parseTimeout } from "../flags.ts";
import { printStreams, type Streams } from "../workload-output.ts";

export function registerReplay(program: Command, ctx: Context): void {
  remoteFlags(program.command("replay"))
    .description("verify a recorded run's whole closure, replay it passively under QEMU and compare events, assertions and outcome exactly")
    .argument(
      "<run>",
      "a run directory written by `cairn run`, a bundle written by `cairn bundle`, or oci://HOST/REPO@sha256:… from `cairn bundle push` (imported into this store, kit and runs directory first; from a registry, only the members this node lacks are fetched)",
    )
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--kit <dir>", "guest kit (default $CAIRN_KIT, $CAIRN_HOME/kit or $XDG_CACHE_HOME/cairn/kit)")
    .option("--environment <manifest>", "the environment manifest (or devcontainer.json) offered for the replay; required when the run recorded one")
    .option("--allow-unpinned", "with --environment: accept an unpinned pair with equal addresses (recorded in the output)")
    .option("--runs <dir>", "a bundle or registry reference only: where its run directory goes (default $CAIRN_HOME/runs or $XDG_DATA_HOME/cairn/runs)")
    .option("--timeout <seconds>", "wall-clock limit for QEMU; the process group is killed after it")
    .option(
      "--allow-failed",
      "reproducing a failed run on purpose: exit 0 when the replay matches, even though the recorded run failed (recorded in the output)",
    )
    .option("--include-private-streams", "put the exact output streams into a mismatch's failure bundle (local use only)")
    .option("--keys <dir>", "verify memo key directory (default $CAIRN_HOME/keys or $XDG_DATA_HOME/cairn/keys)")
    .option("--full", "re-derive the workload from its raw closure even when this machine's memo of an earlier verify holds")
    .option("--json", "print the result as JSON")
    .action(
      async (
        input: string,
        opts: RemoteFlags & {
          store?: string;
          kit?: string;
          runs?: string;
          environment?: string;
          allowUnpinned?: boolean;
          timeout?: string;
          includePrivateStreams?: boolean;
          allowFailed?: boolean;
          keys?: string;
          full?: boolean;
          json?: boolean;
        },
      ) => {
        const dir = kitDir(ctx.env, ctx.cwd, opts.kit);
        const storeDir = defaultStoreDir(ctx.env, ctx.cwd, opts.store);
        // a run directory, a bundle file (imported) or oci://HOST/REPO@sha256:… (fetched, what this node lacks, and imported)
        const local = await localRun(input, {
          storeDir,
          kitDir: dir,
          runsDir: defaultRunsDir(ctx.env, ctx.cwd, opts.runs),
          remote: remoteOptions(ctx, opts),
          cwd: ctx.cwd,
          log: (line) => ctx.io.err(`cairn replay: ${line}`),
        });
        const runDir = local.runDir;
        if (local.inputs === "left-out")
          ctx.io.err(
            "cairn replay: the bundle leaves the run's inputs out (made without --include-inputs): the replay needs them in this store, as the recording host has them",
          );
        // what this run names, by digest: an imported run's kit holds its modules only
        const kit = replayKit(dir, runDir);
        let replayed: Streams | undefined;
        const run = replayRun({
          runDir,
          storeDir,
          kit,
          timeoutMs: parseTimeout(opts.timeout),
          includePrivateStreams: opts.includePrivateStreams === true,
          ...(opts.environment !== undefined ? { offeredEnvironment: loadManifestOrDevcontainer(resolve(ctx.cwd, opts.environment)).manifest } : {}),
          allowUnpinned: opts.allowUnpinned === true,
          verify: { memoKeyDir: defaultKeysDir(ctx.env, ctx.cwd, opts.keys), full: opts.full === true, progress: ctx.progress },
          log: (line) => ctx.io.err(`cairn replay: ${line}`),
          progress: ctx.progress,
          onStreams: (streams) => void (replayed = streams),
        });
        const r = await run.catch((e: unknown) => {
          // a replay that ran but did not match: its output still helps to see why (the error follows it)
          if (!opts.json && replayed !== undefined) printStreams(ctx.io, replayed);
          throw e;
        });
        // two facts, both stated: the replay matches the record, and what the record was (replay-verdict.ts)
        const failure = opts.allowFailed === true ? undefined : recordedFailure(r.verdict, runDir);
        const verdict = {
          ...r.verdict,
          allow_failed: opts.allowFailed === true,
          outcome: r.evaluation.outcome,
          status: r.evaluation.status,
          replay_dir: r.replayDir,
          qemu_ms: Math.round(r.qemuMs),
        };
        if (opts.json) {
          // one JSON document: the error (as every --json failure) and the verdict
          printJson(ctx.io, "cairn.cli.replay/1", failure ? { error: failure.toJSON(), replay: verdict } : verdict);
          if (failure) ctx.exitCode = failure.exitCode;
          return;
        }
        ctx.io.out(
          [
            `replay   ${r.manifest.run_id}  ${verdictLine(r.verdict)}`,
            `outcome  ${r.evaluation.outcome}`,
            `events   ${r.evaluation.events.length} identical, assertions ${r.evaluation.assertions.length} identical`,
            `replayed in ${(r.qemuMs / 1000).toFixed(1)} s (${r.replayDir})`,
            ...(opts.allowFailed === true && r.verdict.recorded_failed ? ["--allow-failed: a faithful replay of a failed run exits 0"] : []),
          ].join("\n"),
        );
        // the workload's replayed output, as `cairn run` prints it (also in the replay directory's streams/)
        printStreams(ctx.io, r.streams);
        if (failure) throw failure;
      },
    );
}
