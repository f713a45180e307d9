import type { Command } from "commander";
import { resolve } from "node:path";
import { CairnError, codeFile, readSigningKey, readVerifyingKey, writeFileAtomic } from "../../core/index.ts";
import { defaultStoreDir } from "../../store/index.ts";
import { ensureKit, kitDir } from "../../vm/index.ts";
import { defaultKeysDir } from "../../workload/index.ts";
import {
  campaignProgress,
  defaultJobs,
  executorByName,
  htmlReport,
  openResults,
  readPlan,
  runCampaign,
  runTask,
  verifyCampaign,
  type Plan,
  type Progress,
} from "../../fleet/index.ts";
import type { Context } from "../context.ts";
import { printable, printJson } from "../output.ts";
import { CAIRN_VERSION } from "../cairn-version.ts";
import { clock, parseTimeout } from "../flags.ts";
import { credentialEnvironment, remoteArgv, remoteFlags, remoteOptions, type RemoteFlags } from "../remote-flags.ts";

interface Where {
  store?: string;
  kit?: string;
  keys?: string;
  timeout?: string;
}

function openCampaign(ctx: Context, unsafeDir: string): { dir: string; plan: Plan } {
  const dir = resolve(ctx.cwd, unsafeDir);
  openResults(dir, false);
  const plan = readPlan(dir);
  if (plan === undefined)
    throw new CairnError("CAMPAIGN_INVALID", `${dir} holds no campaign plan yet`, { path: dir, hint: "`cairn campaign run FILE --out DIR` makes it" });
  return { dir, plan };
}

function jobsFlag(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!/^[1-9][0-9]{0,3}$/.test(v)) throw new CairnError("USAGE", "--jobs takes a whole number from 1", { path: "--jobs" });
  return Number(v);
}

function countsLine(p: Progress): string {
  return `done ${p.counts.done}, running ${p.counts.running}, pending ${p.counts.pending}, failed ${p.counts.failed}`;
}

function verdictsLine(p: Progress): string {
  return Object.entries(p.verdicts)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
}

/** Exit 1 when a task is a finding against the campaign or published nothing; the report says which. */
function campaignFailure(p: Progress, dir: string): CairnError | undefined {
  const bad = p.tasks.filter((t) => t.verdict === "mismatched" || t.verdict === "infrastructure" || t.verdict === "invalid");
  if (bad.length === 0) return undefined;
  return new CairnError(
    bad.some((t) => t.verdict === "mismatched") ? "REPLAY_MISMATCH" : "RUN_INFRASTRUCTURE",
    `${bad.length} of ${p.tasks.length} task(s): ${bad.map((t) => `${t.task.slice(0, 12)} ${t.verdict}${t.field !== null ? ` at ${printable(t.field)}` : ""}`).join("; ")}`,
    { path: dir, hint: "`cairn campaign report DIR` lists every task; running the campaign again reruns those that published nothing" },
  );
}

export function registerCampaign(program: Command, ctx: Context): void {
  const campaign = program
    .command("campaign")
    .description("campaigns (docs/fleet.md): many runs recorded, replayed or verified as tasks named by identity, with one report and one signed receipt");

  remoteFlags(campaign.command("run"))
    .description("expand a campaign file into tasks and run those without a result (a rerun resumes), then sign the campaign receipt")
    .argument("<file>", "the campaign file (schema: cairn.campaign/1)")
    .option("--executor <name>", "local (processes on this host) or slurm", "local")
    .option(
      "--jobs <n>",
      "local: tasks at once (default: the cores QEMU can use without oversubscribing); slurm: at most N array tasks running at once (default: as many as Slurm starts)",
    )
    .option("--out <dir>", "the results directory (default: FILE's name with .results, beside it)")
    .requiredOption("--key <key>", "the Ed25519 private key every task's receipt and the campaign receipt are signed with")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--kit <dir>", "guest kit (default $CAIRN_KIT, $CAIRN_HOME/kit or $XDG_CACHE_HOME/cairn/kit)")
    .option("--keys <dir>", "verify memo key directory (default $CAIRN_HOME/keys or $XDG_DATA_HOME/cairn/keys)")
    .option("--timeout <seconds>", "each task's wall-clock limit for QEMU")
    .option("--json", "print the result as JSON")
    .action(async (unsafeFile: string, opts: Where & RemoteFlags & { executor: string; jobs?: string; out?: string; key: string; json?: boolean }) => {
      const file = resolve(ctx.cwd, unsafeFile);
      const jobs = jobsFlag(opts.jobs);
      parseTimeout(opts.timeout);
      const keyPath = resolve(ctx.cwd, opts.key);
      const key = readSigningKey(keyPath); // a bad key fails before anything runs
      const executor = await executorByName(opts.executor, ctx.env);
      const out = opts.out !== undefined ? resolve(ctx.cwd, opts.out) : `${file.replace(/\.(ya?ml|json)$/, "")}.results`;
      const storeDir = defaultStoreDir(ctx.env, ctx.cwd, opts.store);
      const kit = kitDir(ctx.env, ctx.cwd, opts.kit);
      const keys = defaultKeysDir(ctx.env, ctx.cwd, opts.keys);
      const log = (line: string) => ctx.io.err(`cairn campaign: ${line}`);
      const r = await runCampaign({
        file,
        out,
        executor,
        ...(jobs !== undefined ? { jobs } : {}),
        storeDir,
        cairnVersion: CAIRN_VERSION,
        key,
        taskArgv: (dir, id) => [
          process.execPath,
          codeFile("../bin/cairn.js"),
          "campaign",
          "task",
          dir,
          id,
          "--key",
          keyPath,
          "--store",
          storeDir,
          "--kit",
          kit,
          "--keys",
          keys,
          ...(opts.timeout !== undefined ? ["--timeout", opts.timeout] : []),
          // a `bundle: oci://…` task pulls on its node with the same transport; credentials by their files' names, in the environment
          ...remoteArgv(ctx, opts),
        ],
        remote: remoteOptions(ctx, opts),
        taskEnv: credentialEnvironment(ctx),
        env: ctx.env,
        now: clock(ctx.env),
        log,
        onEvent: (e) => log(`${e.kind} ${e.task.slice(0, 12)}${e.detail !== undefined ? ` (${printable(e.detail)})` : ""}`),
      });
      const failure = campaignFailure(r.progress, out);
      const summary = {
        dir: out,
        plan: r.plan.plan,
        executor: executor.name,
        jobs: executor.name === "local" ? (jobs ?? defaultJobs()) : (jobs ?? null),
        tasks: r.plan.tasks.length,
        collapsed: r.plan.collapsed.length,
        skipped: r.skipped,
        ran: r.ends.length,
        counts: r.progress.counts,
        verdicts: r.progress.verdicts,
        receipt: r.receipt,
      };
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.campaign-run/1", failure ? { error: failure.toJSON(), campaign: summary } : summary);
        if (failure) ctx.exitCode = failure.exitCode;
        return;
      }
      ctx.io.out(
        [
          `campaign ${out}`,
          `plan     ${r.plan.plan} (${r.plan.mode}, ${r.plan.tasks.length} tasks${r.plan.collapsed.length > 0 ? `, ${r.plan.collapsed.length} collapsed` : ""})`,
          `ran      ${r.ends.length} (${r.skipped} already finished)`,
          `tasks    ${countsLine(r.progress)}`,
          `verdicts ${verdictsLine(r.progress)}`,
          `receipt  ${r.receipt}`,
        ].join("\n"),
      );
      if (failure) throw failure;
    });

  remoteFlags(campaign.command("task"))
    .description("run one task of a campaign and publish its result (what an executor starts; not usually typed)")
    .argument("<dir>", "the campaign's results directory")
    .argument("<task>", "the task's name")
    .requiredOption("--key <key>", "the Ed25519 private key the task's receipt is signed with")
    .option("--store <dir>", "content store")
    .option("--kit <dir>", "guest kit")
    .option("--keys <dir>", "verify memo key directory")
    .option("--timeout <seconds>", "wall-clock limit for QEMU")
    .option("--json", "print the result as JSON")
    .action(async (unsafeDir: string, task: string, opts: Where & RemoteFlags & { key: string; json?: boolean }) => {
      const dir = resolve(ctx.cwd, unsafeDir);
      const key = readSigningKey(resolve(ctx.cwd, opts.key));
      const timeoutMs = parseTimeout(opts.timeout);
      const kd = kitDir(ctx.env, ctx.cwd, opts.kit);
      const log = (line: string) => ctx.io.err(`cairn campaign task: ${line}`);
      const r = await runTask(dir, task, {
        storeDir: defaultStoreDir(ctx.env, ctx.cwd, opts.store),
        kitDir: kd,
        kit: () => ensureKit({ dir: kd, isRoot: process.getuid?.() === 0, log }),
        key,
        cairnVersion: CAIRN_VERSION,
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        verify: { memoKeyDir: defaultKeysDir(ctx.env, ctx.cwd, opts.keys), full: false },
        remote: remoteOptions(ctx, opts),
        env: ctx.env,
        date: () => clock(ctx.env),
        log,
      });
      if (opts.json)
        printJson(ctx.io, "cairn.cli.campaign-task/1", { task, published: r.published, verdict: r.result?.verdict ?? null, field: r.result?.field ?? null });
      else
        ctx.io.out(
          r.result !== undefined
            ? `task ${task} ${r.result.verdict}${r.result.field !== null ? ` at ${r.result.field}` : ""}`
            : `task ${task} already published`,
        );
    });

  campaign
    .command("status")
    .description("progress read from the results directory only: done, running, pending, failed")
    .argument("<dir>", "the campaign's results directory")
    .option("--json", "print the result as JSON")
    .action((unsafeDir: string, opts: { json?: boolean }) => {
      const { dir, plan } = openCampaign(ctx, unsafeDir);
      const p = campaignProgress(dir, plan);
      if (opts.json)
        printJson(ctx.io, "cairn.cli.campaign-status/1", {
          dir,
          plan: plan.plan,
          mode: plan.mode,
          tasks: plan.tasks.length,
          counts: p.counts,
          verdicts: p.verdicts,
        });
      else ctx.io.out([`campaign ${dir} (${plan.mode}, ${plan.tasks.length} tasks)`, `tasks    ${countsLine(p)}`, `verdicts ${verdictsLine(p)}`].join("\n"));
    });

  campaign
    .command("report")
    .description("per task: identities, state, verdict, run status, duration, guest instructions; and the totals")
    .argument("<dir>", "the campaign's results directory")
    .option("--html <file>", "also write the report as one static HTML page (no script)")
    .option("--json", "print the result as JSON")
    .action((unsafeDir: string, opts: { json?: boolean; html?: string }) => {
      const { dir, plan } = openCampaign(ctx, unsafeDir);
      const p = campaignProgress(dir, plan);
      if (opts.html !== undefined) writeFileAtomic(resolve(ctx.cwd, opts.html), htmlReport(plan, p), { mode: 0o644 });
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.campaign-report/1", {
          dir,
          plan: plan.plan,
          mode: plan.mode,
          counts: p.counts,
          verdicts: p.verdicts,
          tasks: p.tasks,
          collapsed: plan.collapsed,
        });
        return;
      }
      const lines = p.tasks.map((t) =>
        [
          t.task.slice(0, 12),
          t.state.padEnd(7),
          `${t.verdict}${t.field !== null ? ` at ${printable(t.field)}` : ""}`.padEnd(20),
          (t.status ?? "-").padEnd(18),
          t.duration_ms !== null ? `${(t.duration_ms / 1000).toFixed(1)} s`.padStart(8) : "       -",
          t.guest_instructions !== null ? `${t.guest_instructions} insns` : "-",
          t.origin.point !== null ? JSON.stringify(t.origin.point) : "",
          t.failure !== null ? `(${printable(t.failure)})` : "",
        ].join("  "),
      );
      ctx.io.out([`campaign ${dir} (${plan.mode}, plan ${plan.plan})`, ...lines, `tasks    ${countsLine(p)}`, `verdicts ${verdictsLine(p)}`].join("\n"));
    });

  campaign
    .command("verify")
    .description("check the signed campaign receipt offline, and every task's result against its receipt and its run")
    .argument("<dir>", "the campaign's results directory")
    .requiredOption("--pub <key>", "the Ed25519 public key the campaign was signed with")
    .option("--json", "print the result as JSON")
    .action((unsafeDir: string, opts: { pub: string; json?: boolean }) => {
      const { dir, plan } = openCampaign(ctx, unsafeDir);
      const pub = readVerifyingKey(resolve(ctx.cwd, opts.pub));
      const v = verifyCampaign(dir, plan, [pub]);
      const failure =
        v.problems.length > 0
          ? new CairnError(
              "CAMPAIGN_MISMATCH",
              `${v.problems.length} problem(s): ${v.problems.map((p) => `${p.task !== null ? `task ${p.task.slice(0, 12)}: ` : ""}${printable(p.problem)}`).join("; ")}`,
              {
                path: dir,
                hint: "a task listed here is not counted: its result does not verify",
              },
            )
          : undefined;
      const body = { verified: failure === undefined, signed_by: v.keyId, tasks: v.tasks, tasks_verified: v.verified, problems: v.problems };
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.campaign-verify/1", failure ? { error: failure.toJSON(), campaign: body } : body);
        if (failure) ctx.exitCode = failure.exitCode;
        return;
      }
      ctx.io.out([`campaign ${dir}`, `signed by ${v.keyId}`, `${v.verified} of ${v.tasks} task(s) verify against their receipts and runs`].join("\n"));
      if (failure) throw failure;
    });
}
