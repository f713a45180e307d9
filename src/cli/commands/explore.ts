import type { Command } from "commander";
import { resolve } from "node:path";
import { CairnError } from "../../core/index.ts";
import { DEFAULT_EXPLORE_JOBS, explore, type ExploreBranch, type ExploreResult } from "../../fleet/index.ts";
import { loadManifestOrDevcontainer } from "../../manifest/index.ts";
import { defaultStoreDir } from "../../store/index.ts";
import { defaultRunsDir, ensureKit, kitDir } from "../../vm/index.ts";
import { defaultKeysDir } from "../../workload/index.ts";
import { CAIRN_VERSION } from "../cairn-version.ts";
import type { Context } from "../context.ts";
import { parseTimeout } from "../flags.ts";
import { printJson } from "../output.ts";

function differsText(b: ExploreBranch): string {
  if (b.differs === null) return "-";
  if (!b.differs.from_parent) return "same as parent";
  return `differs at ${b.differs.at}`;
}

/** The report as a table: one line per variation, in the vary file's order. */
export function exploreText(r: ExploreResult): string {
  const rows = r.branches.map((b, i) => [
    String(i + 1),
    b.variation,
    b.run_id ?? "-",
    b.status,
    b.exit_codes.length > 0 ? b.exit_codes.join(",") : "-",
    b.error !== null ? `${b.error.code}${b.error.path !== null ? ` at ${b.error.path}` : ""}: ${b.error.message}` : differsText(b),
  ]);
  const head = ["#", "variation", "branch run", "status", "exit", "outcome"];
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((row) => row[c]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => (c === cells.length - 1 ? cell : cell.padEnd(widths[c]!)))
      .join("  ")
      .trimEnd();
  const n = r.counts;
  return [
    `explore  ${r.parent.run_id} at ${r.parent.checkpoint} (parent ${r.parent.status}, outcome ${r.parent.outcome})`,
    line(head),
    ...rows.map(line),
    `${n.variations} variations: ${n.recorded} recorded, ${n.not_recorded} not recorded; ${n.differ} differ from the parent`,
  ].join("\n");
}

export function registerExplore(program: Command, ctx: Context): void {
  program
    .command("explore")
    .description(
      "record one branch per variation of a scenario tail from a run's checkpoint, a few at a time, and report which outcomes differ from the parent's and where",
    )
    .argument("<run>", "the parent run directory (recorded with run.checkpoints)")
    .requiredOption("--at <checkpoint>", "the checkpoint every branch starts from (run.json checkpoints.taken[].name)")
    .requiredOption("--vary <file>", "the vary file: a base tail (steps, expect) and its variations (vary: [{set: POINTER, values: [...]}])")
    .option("--jobs <n>", `branches recorded at once, each a QEMU (default ${DEFAULT_EXPLORE_JOBS})`)
    .option("--serve <dir>", "the directory the parent's http responder served (run.network.http.root); needed when it had one")
    .option("--store <dir>", "content store (default $CAIRN_HOME/store or $XDG_CACHE_HOME/cairn/store)")
    .option("--kit <dir>", "guest kit (default $CAIRN_KIT, $CAIRN_HOME/kit or $XDG_CACHE_HOME/cairn/kit)")
    .option("--runs <dir>", "where the branches' run directories go (default $CAIRN_HOME/runs or $XDG_DATA_HOME/cairn/runs)")
    .option("--environment <manifest>", "the environment manifest (or devcontainer.json) offered; required when the parent recorded one")
    .option("--allow-unpinned", "with --environment: accept an unpinned pair with equal addresses")
    .option("--timeout <seconds>", "wall-clock limit for each branch's QEMU")
    .option("--keys <dir>", "verify memo key directory (default $CAIRN_HOME/keys or $XDG_DATA_HOME/cairn/keys)")
    .option("--json", "print the report as JSON")
    .action(
      async (
        runDir: string,
        opts: {
          at: string;
          vary: string;
          jobs?: string;
          serve?: string;
          store?: string;
          kit?: string;
          runs?: string;
          environment?: string;
          allowUnpinned?: boolean;
          timeout?: string;
          keys?: string;
          json?: boolean;
        },
      ) => {
        let jobs: number | undefined;
        if (opts.jobs !== undefined) {
          if (!/^[1-9][0-9]{0,5}$/.test(opts.jobs))
            throw new CairnError("USAGE", `--jobs must be a positive integer, not ${JSON.stringify(opts.jobs)}`, { path: "--jobs" });
          jobs = Number(opts.jobs);
        }
        const log = (line: string) => ctx.io.err(`cairn explore: ${line}`);
        const r = await explore({
          runDir: resolve(ctx.cwd, runDir),
          checkpoint: opts.at,
          vary: resolve(ctx.cwd, opts.vary),
          storeDir: defaultStoreDir(ctx.env, ctx.cwd, opts.store),
          runsDir: defaultRunsDir(ctx.env, ctx.cwd, opts.runs),
          // the kit is set up only once the vary file, the parent and its checkpoint have been read
          kit: () => ensureKit({ dir: kitDir(ctx.env, ctx.cwd, opts.kit), isRoot: process.getuid?.() === 0, log }),
          cairnVersion: CAIRN_VERSION,
          timeoutMs: parseTimeout(opts.timeout),
          ...(jobs !== undefined ? { jobs } : {}),
          ...(opts.serve !== undefined ? { served: resolve(ctx.cwd, opts.serve) } : {}),
          ...(opts.environment !== undefined ? { offeredEnvironment: loadManifestOrDevcontainer(resolve(ctx.cwd, opts.environment)).manifest } : {}),
          allowUnpinned: opts.allowUnpinned === true,
          verify: { memoKeyDir: defaultKeysDir(ctx.env, ctx.cwd, opts.keys), full: false, progress: ctx.progress },
          log,
        });
        // a branch whose run failed is a finding; a variation that did not record is not: exit 1
        if (r.counts.not_recorded > 0) ctx.exitCode = 1;
        if (opts.json) {
          printJson(ctx.io, "cairn.cli.explore/1", r);
          return;
        }
        ctx.io.out(exploreText(r));
      },
    );
}
