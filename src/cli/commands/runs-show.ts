import type { Command } from "commander";
import { existsSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { CairnError, readVerifyingKey, writeFileAtomic } from "../../core/index.ts";
import { CHECK_MEANING, defaultRunsDir, describeOrigin, describeRun, runHtml, runTrace, runView } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { outputPathOutside, printJson } from "../output.ts";

export function registerRunsShow(runs: Command, ctx: Context): void {
  runs
    .command("show")
    .description(
      "describe one run: status and what its files confirm, where it came from (a branch: its parent and checkpoint), identities, guest root and RAM, replays",
    )
    .argument(
      "<run>",
      "a run directory, a run id under --runs, or a replay directory RUN/replays/N (described as its run, drawn as that replay by --html and --trace)",
    )
    .option("--runs <dir>", "the runs directory a run id is looked up in (default $CAIRN_HOME/runs or $XDG_DATA_HOME/cairn/runs)")
    .option("--pub <key>", "an Ed25519 public key: the run is signed when its receipt verifies with it against the directory")
    .option("--html <file>", "also write one self-contained HTML page of the run: timeline, outputs, identities, replays")
    .option("--trace <file>", "also write the run's timeline in the Chrome/Perfetto trace-event format (JSON)")
    .option("--private", "include excerpts of the private output streams in the page (the file is then written 0600)")
    .option("--json", "print the description as JSON")
    .action((run: string, opts: { runs?: string; pub?: string; json?: boolean; html?: string; trace?: string; private?: boolean }) => {
      const asDir = resolve(ctx.cwd, run);
      const given = existsSync(asDir) ? asDir : join(defaultRunsDir(ctx.env, ctx.cwd, opts.runs), run);
      // a replay directory (RUN/replays/N) is described as its run, and drawn as that replay
      const replayOf = /^[1-9][0-9]*$/.test(basename(given)) && basename(dirname(given)) === "replays" && !existsSync(join(given, "run.json"));
      const dir = replayOf ? dirname(dirname(given)) : given;
      if (replayOf && !existsSync(given)) throw new CairnError("RUN_INVALID", `the run has no replay ${basename(given)}`, { path: given });
      const keys = opts.pub !== undefined ? [readVerifyingKey(resolve(ctx.cwd, opts.pub))] : [];
      if (opts.private === true && opts.html === undefined)
        throw new CairnError("USAGE", "--private adds output excerpts to the page; give --html FILE", { path: "--private" });
      const html = opts.html !== undefined ? outputPathOutside(ctx.cwd, "--html", opts.html, dir) : undefined;
      const traceOut = opts.trace !== undefined ? outputPathOutside(ctx.cwd, "--trace", opts.trace, dir) : undefined;
      if (html !== undefined && html === traceOut) throw new CairnError("USAGE", "--html and --trace name the same file", { path: "--trace" });
      if (opts.html !== undefined || opts.trace !== undefined) {
        // both are made before either is written: a refusal leaves neither
        const view = runView(dir, { keys, checkpointDigest: true, private: opts.private === true, ...(replayOf ? { replay: Number(basename(given)) } : {}) });
        const page = opts.html !== undefined ? runHtml(view) : undefined;
        const trace = opts.trace !== undefined ? `${JSON.stringify(runTrace(view))}\n` : undefined;
        if (page !== undefined) writeFileAtomic(html!, page, { mode: opts.private === true ? 0o600 : 0o644 });
        if (trace !== undefined) writeFileAtomic(traceOut!, trace, { mode: 0o644 });
      }
      const r = describeRun(dir, { keys, checkpointDigest: true });
      if (opts.json) {
        printJson(ctx.io, "cairn.cli.runs-show/1", r);
        return;
      }
      const replays =
        r.replays.length === 0
          ? "none"
          : r.replays
              .map(
                (m, i) =>
                  `${i + 1}: ${{ matched: "matched", differs: "did not match", "no-result": "no result", contradicted: "claims a match its files contradict" }[m]}`,
              )
              .join(", ");
      ctx.io.out(
        [
          `run       ${r.run_id}`,
          // a tampered run's status is what its run.json says, not what happened
          `status    ${r.status}${r.check === "tampered" ? " (as run.json says; not to be believed)" : ""}`,
          `check     ${r.check}${r.problem !== null ? ` (${r.problem})` : ""}: ${CHECK_MEANING[r.check]}`,
          `recorded  ${r.recorded_at}`,
          `origin    ${describeOrigin(r.origin)}${r.origin !== null ? ` (${r.origin.input}; written by this host, not covered by any digest)` : ""}`,
          ...(r.branch !== null
            ? [`branch    of ${r.branch.parent} at checkpoint ${r.branch.checkpoint} (instruction ${r.branch.icount.toLocaleString("en-US")})`]
            : []),
          `workload  ${r.source_kind} ${r.workload}`,
          ...(r.environment !== null
            ? [
                `env       ${[r.environment.environment_id, r.environment.manifest_address].filter((x) => x !== null).join(", ")}`,
                ...(r.environment.run_env.length > 0 ? [`set       ${r.environment.run_env.join(", ")} (--env; values in the launch identity)`] : []),
              ]
            : []),
          `vm        ${r.vm_digest} (${r.root} root, ${r.memory_mib} MiB)`,
          `outcome   ${r.outcome}`,
          ...(r.inputs !== null ? [`inputs    ${r.inputs} (run.inputs tree)`] : []),
          `replays   ${replays}`,
          `dir       ${r.dir}`,
        ].join("\n"),
      );
    });
}
