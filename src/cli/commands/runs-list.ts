import type { Command } from "commander";
import { resolve } from "node:path";
import { CairnError, readVerifyingKey } from "../../core/index.ts";
import { defaultRunsDir, describeOrigin, filterRuns, listRuns, type RunFilter } from "../../vm/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

const CHECKS = ["signed", "unverified", "tampered"] as const;

function parseFilter(opts: { status?: string; spec?: string; workload?: string; environment?: string; since?: string; check?: string }): RunFilter {
  const digestish = (v: string, flag: string): string => {
    // a digest or its leading part: enough hex digits to name one run, never a pattern
    if (!/^((sha256|blake3):)?[0-9a-f]{8,64}$/.test(v))
      throw new CairnError("USAGE", `${flag} takes a digest or at least its first 8 hex digits`, { path: flag, hint: "e.g. sha256:1f2e3d4c or 1f2e3d4c" });
    return v;
  };
  let since: Date | undefined;
  if (opts.since !== undefined) {
    const t = /^\d{4}-\d{2}-\d{2}$/.test(opts.since) ? Date.parse(`${opts.since}T00:00:00Z`) : Date.parse(opts.since);
    if (!/^\d{4}-\d{2}-\d{2}(T[0-9:.]+(Z|[+-]\d{2}:\d{2})?)?$/.test(opts.since) || !Number.isFinite(t))
      throw new CairnError("USAGE", "--since takes an ISO 8601 date or date-time (2026-12-06, 2026-12-06T08:00:00Z)", { path: "--since" });
    since = new Date(t);
  }
  if (opts.check !== undefined && !(CHECKS as readonly string[]).includes(opts.check))
    throw new CairnError("USAGE", `--check takes one of ${CHECKS.join(", ")}`, { path: "--check" });
  return {
    ...(opts.status !== undefined ? { status: opts.status } : {}),
    ...(opts.spec !== undefined ? { spec: opts.spec } : {}),
    ...(opts.workload !== undefined ? { identity: digestish(opts.workload, "--workload") } : {}),
    ...(opts.environment !== undefined ? { environment: digestish(opts.environment, "--environment") } : {}),
    ...(since !== undefined ? { since } : {}),
    ...(opts.check !== undefined ? { check: opts.check as RunFilter["check"] } : {}),
  };
}

export function registerRunsList(runs: Command, ctx: Context): void {
  runs
    .command("list")
    .description(
      "list the run directories: id, status, what the directory's files confirm (signed, unverified, tampered; invalid when run.json is refused), replays (+ matched, - did not, ? no result, ! a claimed match its files contradict), root, and where the run came from (the spec, lock or bundle given, and the command)",
    )
    .option("--runs <dir>", "the runs directory (default $CAIRN_HOME/runs or $XDG_DATA_HOME/cairn/runs)")
    .option("--status <status>", "only runs with this recorded status")
    .option("--spec <path>", "only runs whose origin (the spec, lock, lockfile or bundle given) has this path or file name, or contains it")
    .option("--workload <digest>", "only runs with this identity (workload, source, fs, launch, VM or outcome digest, or its first 8+ hex digits)")
    .option("--environment <digest>", "only runs made in this environment (EnvironmentID or environment manifest address, or its first 8+ hex digits)")
    .option("--since <date>", "only runs recorded at or after this ISO 8601 date or date-time (UTC unless a zone is named)")
    .option("--check <verdict>", "only runs whose check says signed, unverified or tampered")
    .option("--pub <key>", "an Ed25519 public key: a run whose receipt it verifies against the directory is listed as signed")
    .option("--json", "print the list as JSON")
    .action(
      (opts: {
        runs?: string;
        status?: string;
        spec?: string;
        workload?: string;
        environment?: string;
        since?: string;
        check?: string;
        pub?: string;
        json?: boolean;
      }) => {
        const filter = parseFilter(opts);
        const dir = defaultRunsDir(ctx.env, ctx.cwd, opts.runs);
        const keys = opts.pub !== undefined ? [readVerifyingKey(resolve(ctx.cwd, opts.pub))] : [];
        const all = listRuns(dir, { keys });
        const list = filterRuns(all.runs, filter);
        // a refused run.json says nothing that can be filtered on: listed only when no filter is given
        const unreadable = Object.keys(filter).length === 0 ? all.unreadable : [];
        if (opts.json) {
          printJson(ctx.io, "cairn.cli.runs-list/1", { runs_dir: dir, runs: list, unreadable });
          return;
        }
        if (list.length === 0 && unreadable.length === 0) {
          ctx.io.out(Object.keys(filter).length === 0 ? `no runs in ${dir}` : `no runs in ${dir} match`);
          return;
        }
        for (const r of list) {
          const replays = r.replays.map((m) => ({ matched: "+", differs: "-", "no-result": "?", contradicted: "!" })[m]).join("") || "none";
          ctx.io.out(
            `${r.run_id}  ${r.status.padEnd(22)}  ${r.check.padEnd(10)}  replays ${replays.padEnd(6)}  ${r.root.padEnd(9)}  ${describeOrigin(r.origin)}`,
          );
        }
        for (const u of unreadable) ctx.io.out(`${u.dir}  invalid (${u.error}): nothing it says is shown`);
      },
    );
}
