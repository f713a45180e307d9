import type { Command } from "commander";
import { resolve } from "node:path";
import { CairnError, readSigningKey } from "../../core/index.ts";
import { defaultStoreDir } from "../../store/index.ts";
import { loadManifestOrDevcontainer, snapshotRefOf } from "../../manifest/index.ts";
import { DEFAULT_EXPORT_LAUNCH } from "../../strata/index.ts";
import { defaultKeysDir } from "../../workload/index.ts";
import {
  defaultRunsDir,
  ensureKit,
  isEnvironmentLockfile,
  kitDir,
  parseEnvAssignments,
  readLockfileSpec,
  recordLockfileRun,
  recordRun,
  runStatusFailure,
  signReceipt,
} from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { lineFollower, printStreams } from "../workload-output.ts";
import { runOutputModel, runOutputText } from "../run-output.ts";
import { CAIRN_VERSION } from "../cairn-version.ts";
import {
  clock,
  collect,
  exportBaseFlag,
  inputsRootFlag,
  INPUTS_ROOT_HELP,
  launchArgv,
  lockVerifyOptions,
  parseTimeout,
  withLockVerifyFlags,
  type LockVerifyFlags,
} from "../flags.ts";
import { remoteFlags, remoteOptions, type RemoteFlags } from "../remote-flags.ts";

interface RunFlags extends LockVerifyFlags, RemoteFlags {
  sign?: string;
  environment?: string;
  store?: string;
  runs?: string;
  kit?: string;
  timeout?: string;
  includePrivateStreams?: boolean;
  cmd?: string[];
  user?: string;
  workdir?: string;
  json?: boolean;
  follow?: boolean;
  keys?: string;
  full?: boolean;
  inputsRoot?: string;
  checkpointEvery?: string;
  env: string[];
}

export function registerRun(program: Command, ctx: Context): void {
  const cmd = remoteFlags(program.command("run"))
    .description("record a workload run under QEMU record/replay and write a replayable run directory")
    .argument(
      "<spec-or-lock>",
      "a workload spec (assembled first), a workload lock, or an environment lockfile (exported first; give --cmd and the lock verify flags)",
    )
    .argument("[command...]", "environment lockfile only: after --, the program (absolute path) and its arguments, any of which may start with -")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--runs <dir>", "where run directories go (default $CAIRN_HOME/runs or $XDG_DATA_HOME/cairn/runs)")
    .option("--kit <dir>", "guest kit (default $CAIRN_KIT, $CAIRN_HOME/kit or $XDG_CACHE_HOME/cairn/kit)")
    .option("--timeout <seconds>", "wall-clock limit for QEMU; the process group is killed after it")
    .option("--include-private-streams", "put the exact output streams into the failure bundle (local use only)")
    .option("--environment <manifest>", "the environment manifest (or devcontainer.json) the run is made in; replay then requires one that resumes it")
    .option("--sign <key>", "sign a receipt of the run with this Ed25519 key (RUNDIR/receipt.dsse.json)")
    .option("--keys <dir>", "verify memo key directory (default $CAIRN_HOME/keys or $XDG_DATA_HOME/cairn/keys)")
    .option("--full", "re-derive the workload from its raw closure before the run even when this machine's memo holds")
    .option("--inputs-root <dir>", INPUTS_ROOT_HELP)
    .option("--user <uid:gid>", "environment lockfile only: the numeric user the command runs as (default 1000:1000)")
    .option("--workdir <dir>", "environment lockfile only: the command's working directory (default /)")
    .option(
      "--env <KEY=VALUE>",
      "environment lockfile only: set a variable over the lockfile's env for this run (repeatable); part of the run's launch identity, so replay runs the same values",
      collect,
      [],
    );
  withLockVerifyFlags(cmd, false)
    .option("--cmd <argv...>", "environment lockfile only: the program (absolute path) and its arguments (last option)")
    .option("--follow", "print the workload's output live while recording (unverified until the run ends; the recording is the same)")
    .option(
      "--checkpoint-every <n>",
      "a workload spec only: save the VM after every Nth step of its run section (named step-I), as run.checkpoints would; for cairn branch",
    )
    .option("--json", "print the result as JSON")
    .action(async (unsafeInput: string, afterDashes: string[], opts: RunFlags) => {
      const argv = launchArgv(opts.cmd, afterDashes);
      const log = (line: string) => ctx.io.err(`cairn run: ${line}`);
      const input = resolve(ctx.cwd, unsafeInput);
      const fromLockfile = isEnvironmentLockfile(input);
      const hostRoot = opts.inputsRoot !== undefined ? inputsRootFlag(ctx.cwd, opts.inputsRoot) : undefined;
      const lockSpec = fromLockfile ? undefined : readLockfileSpec(input, hostRoot);
      if (opts.env.length > 0 && !fromLockfile) {
        throw new CairnError(
          "USAGE",
          lockSpec !== undefined
            ? "the spec names the launch: set variables in source.lockfile.env; --env is for a lockfile given directly"
            : "--env is for an environment lockfile; a workload spec or lock names its own environment",
          { path: "--env" },
        );
      }
      const runEnv = parseEnvAssignments(opts.env, "--env"); // before the kit, the export or a run directory
      const launchFlags = argv !== undefined || opts.user !== undefined || opts.workdir !== undefined;
      const verifyFlags = opts.pub !== undefined || opts.registry.length > 0 || opts.base !== undefined;
      if (!fromLockfile && lockSpec === undefined && (launchFlags || verifyFlags)) {
        throw new CairnError(
          "USAGE",
          "--cmd, --user, --workdir, --pub, --registry and --base are for an environment lockfile; a workload spec or lock names its own launch",
          { path: "--cmd" },
        );
      }
      if (lockSpec !== undefined && launchFlags)
        throw new CairnError("USAGE", "the spec names the command (source.lockfile.cmd); --cmd, --user and --workdir are for a lockfile given directly", {
          path: "--cmd",
        });
      if (fromLockfile && argv === undefined)
        throw new CairnError("USAGE", "running an environment lockfile needs --cmd /path/to/program [ARG...] or -- /path/to/program [ARG...]", {
          path: "--cmd",
        });
      const signingKey = opts.sign !== undefined ? readSigningKey(opts.sign) : undefined; // a bad key fails before the run
      // the kit is set up only once the input has been read and validated (recordRun calls this then)
      const kit = () => ensureKit({ dir: kitDir(ctx.env, ctx.cwd, opts.kit), isRoot: process.getuid?.() === 0, log });
      if (opts.follow === true && opts.json === true)
        throw new CairnError("USAGE", "--follow prints the workload's output as text; it cannot be used with --json", { path: "--follow" });
      const live = opts.follow === true ? lineFollower(ctx.io) : undefined;
      const every = opts.checkpointEvery === undefined ? undefined : Number(opts.checkpointEvery);
      if (every !== undefined && (!Number.isSafeInteger(every) || every < 1 || !/^[0-9]+$/.test(opts.checkpointEvery ?? "")))
        throw new CairnError("USAGE", `--checkpoint-every takes a whole number of steps from 1 (got "${opts.checkpointEvery}")`, {
          path: "--checkpoint-every",
        });
      if (every !== undefined && (fromLockfile || lockSpec !== undefined))
        throw new CairnError("USAGE", "--checkpoint-every is for a workload spec; an environment lockfile's run has no run section to add to", {
          path: "--checkpoint-every",
        });
      const record = {
        storeDir: defaultStoreDir(ctx.env, ctx.cwd, opts.store),
        runsDir: defaultRunsDir(ctx.env, ctx.cwd, opts.runs),
        kit,
        cairnVersion: CAIRN_VERSION,
        timeoutMs: parseTimeout(opts.timeout),
        includePrivateStreams: opts.includePrivateStreams === true,
        ...(opts.environment !== undefined
          ? { environmentManifest: snapshotRefOf(loadManifestOrDevcontainer(resolve(ctx.cwd, opts.environment)).manifest) }
          : {}),
        log,
        progress: ctx.progress,
        remote: remoteOptions(ctx, opts),
        verify: { memoKeyDir: defaultKeysDir(ctx.env, ctx.cwd, opts.keys), full: opts.full === true, progress: ctx.progress },
        ...(hostRoot !== undefined ? { inputsRoot: hostRoot } : {}),
        ...(live !== undefined ? { onOutput: live.listener } : {}),
      };
      const recordFromLockfile = async () =>
        fromLockfile || lockSpec !== undefined
          ? await recordLockfileRun({
              ...record,
              ...(lockSpec !== undefined ? { inputsBase: lockSpec.specDir } : {}),
              origin: resolve(ctx.cwd, input),
              export: {
                lockPath: lockSpec?.lockPath ?? input,
                verify: await lockVerifyOptions(ctx, opts, clock(ctx.env)),
                base: exportBaseFlag(ctx, opts.base),
                contents: opts.contents === true,
                launch: lockSpec?.launch ?? {
                  argv: argv!,
                  user: opts.user ?? DEFAULT_EXPORT_LAUNCH.user,
                  workdir: opts.workdir ?? DEFAULT_EXPORT_LAUNCH.workdir,
                },
              },
              ...(lockSpec !== undefined ? { specSections: lockSpec.sections } : {}),
              env: lockSpec?.env ?? runEnv,
            })
          : undefined;
      let lr: Awaited<ReturnType<typeof recordFromLockfile>>;
      let r: Awaited<ReturnType<typeof recordRun>>;
      try {
        lr = await recordFromLockfile();
        r = lr ?? (await recordRun({ ...record, input, ...(every !== undefined ? { checkpointEvery: every } : {}) }));
      } finally {
        live?.flush(); // a line the workload left unfinished
      }
      const exported = lr?.exported;
      const receipt = signingKey !== undefined ? signReceipt(r.runDir, [signingKey]).file : undefined;
      const extras = {
        ...(receipt !== undefined ? { receipt } : {}),
        ...(exported !== undefined
          ? {
              environment: {
                environment_id: exported.environmentId,
                lockfile_sha256: exported.lockfileSha256,
                ...(lr!.runEnv.length > 0 ? { run_env: lr!.runEnv } : {}),
              },
            }
          : {}),
      };
      const summary = runOutputModel(r, extras);
      const failure = runStatusFailure(r.manifest.status, r.runDir, r.unfinished?.message);
      if (opts.json) {
        // one JSON document: the error (as every --json failure) and the recorded run
        printJson(ctx.io, "cairn.cli.run/1", failure ? { error: failure.toJSON(), run: summary } : summary);
        if (failure) ctx.exitCode = failure.exitCode;
        return;
      }
      ctx.io.out(runOutputText(r, extras));
      // then the workload's own output, each stream to its own, unless --follow showed it already
      if (live === undefined) printStreams(ctx.io, r.streams);
      if (failure) throw failure;
    });
}
