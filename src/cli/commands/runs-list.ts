import type { Command } from "commander";
import { resolve } from "node:path";
import { CairnError, readVerifyingKey } from "../../core/index.ts";
import {
  defaultRunsDir,
  describeOrigin,
  filterRuns,
  listRuns,
  RUN_STATUS_GROUPS,
  RUN_STATUSES,
  statusesNamed,
  type RunFilter,
  type RunStatus,
  type RunSummary,
} from "../../vm/index.ts";
import { clock } from "../flags.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";

const CHECKS = ["signed", "unverified", "tampered"] as const;

const STATUS_WORDS = [...RUN_STATUSES, ...Object.keys(RUN_STATUS_GROUPS)];

/** `--since` as a span back from now: whole seconds, minutes, hours, days or weeks. */
const SPAN_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `--since DATE|DURATION`: an ISO 8601 date or date-time, or a span back from `now` (`90m`, `24h`, `7d`). */
function parseSince(value: string, now: () => Date): Date {
  const span = /^([1-9][0-9]{0,5})([smhdw])$/.exec(value);
  if (span !== null) return new Date(now().getTime() - Number(span[1]) * SPAN_MS[span[2]!]!);
  const t = /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(`${value}T00:00:00Z`) : Date.parse(value);
  // a calendar day that does not exist (2026-02-30) is refused, not read as the first days of the next month as Date.parse does
  const [y, m, d] = value.slice(0, 10).split("-").map(Number) as [number, number, number];
  const day = new Date(Date.UTC(y, m - 1, d));
  const realDay = day.getUTCFullYear() === y && day.getUTCMonth() === m - 1 && day.getUTCDate() === d;
  if (!/^\d{4}-\d{2}-\d{2}(T[0-9:.]+(Z|[+-]\d{2}:\d{2})?)?$/.test(value) || !Number.isFinite(t) || !realDay)
    throw new CairnError(
      "USAGE",
      "--since takes an ISO 8601 date or date-time (2026-12-06, 2026-12-06T08:00:00Z) or a span back from now: whole s, m, h, d or w, at most 999999 (90m, 24h, 7d)",
      { path: "--since" },
    );
  return new Date(t);
}

/** `--status WORD[,WORD…]`: recorded statuses, or `failed` for every status but passed and completed. */
function parseStatus(value: string): readonly RunStatus[] {
  const out = new Set<RunStatus>();
  for (const word of value.split(",")) {
    const named = statusesNamed(word);
    if (named === undefined)
      throw new CairnError(
        "USAGE",
        `--status takes one or more of ${STATUS_WORDS.join(", ")} (comma-separated); ${JSON.stringify(word.slice(0, 40))} is none`,
        {
          path: "--status",
        },
      );
    for (const s of named) out.add(s);
  }
  return [...out];
}

/** A duration in ms as a person reads it: 850ms, 41.2s, 12m03s, 2h05m. */
function showDuration(ms: number | null): string {
  if (ms === null) return "-";
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/**
 * A branch, as run.json's `branch` names it, when its origin does not say so
 * already (a branch imported from a bundle or a registry: its origin names
 * the bundle); empty for a run from boot.
 */
function branchMark(r: RunSummary): string {
  return r.branch === null || r.origin?.via === "branch" ? "" : `, branch ${r.branch.parent}@${r.branch.checkpoint}`;
}

function parseFilter(
  opts: { status?: string; spec?: string; workload?: string; environment?: string; since?: string; check?: string },
  now: () => Date,
): RunFilter {
  const digestish = (v: string, flag: string): string => {
    // a digest or its leading part: enough hex digits to name one run, never a pattern
    if (!/^((sha256|blake3):)?[0-9a-f]{8,64}$/.test(v))
      throw new CairnError("USAGE", `${flag} takes a digest or at least its first 8 hex digits`, { path: flag, hint: "e.g. sha256:1f2e3d4c or 1f2e3d4c" });
    return v;
  };
  const since = opts.since !== undefined ? parseSince(opts.since, now) : undefined;
  if (opts.check !== undefined && !(CHECKS as readonly string[]).includes(opts.check))
    throw new CairnError("USAGE", `--check takes one of ${CHECKS.join(", ")}`, { path: "--check" });
  return {
    ...(opts.status !== undefined ? { status: parseStatus(opts.status) } : {}),
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
      "list the run directories: id, status, what the directory's files confirm (signed, unverified, tampered; invalid when run.json is refused), when recording began and how long QEMU ran, replays (+ matched, - did not, ? no result, ! a claimed match its files contradict), root, and where the run came from (the spec, lock or bundle given, and the command)",
    )
    .option("--runs <dir>", "the runs directory (default $CAIRN_HOME/runs or $XDG_DATA_HOME/cairn/runs)")
    .option(
      "--status <status>",
      `only runs with this recorded status (or several, comma-separated): ${STATUS_WORDS.join(", ")}; failed is every status but passed and completed`,
    )
    .option("--spec <path>", "only runs whose origin (the spec, lock, lockfile or bundle given) has this path or file name, or contains it")
    .option("--workload <digest>", "only runs with this identity (workload, source, fs, launch, VM or outcome digest, or its first 8+ hex digits)")
    .option("--environment <digest>", "only runs made in this environment (EnvironmentID or environment manifest address, or its first 8+ hex digits)")
    .option(
      "--since <when>",
      "only runs whose recording began at or after this ISO 8601 date or date-time (UTC unless a zone is named), or this long ago (90m, 24h, 7d)",
    )
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
        const filter = parseFilter(opts, () => clock(ctx.env));
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
            `${r.run_id}  ${r.status.padEnd(22)}  ${r.check.padEnd(10)}  ${r.recorded_at.replace(/\.\d+Z$/, "Z")}  ${showDuration(r.duration_ms).padStart(7)}  replays ${replays.padEnd(6)}  ${r.root.padEnd(9)}  ${describeOrigin(r.origin)}${branchMark(r)}`,
          );
        }
        for (const u of unreadable) ctx.io.out(`${u.dir}  invalid (${u.error}): nothing it says is shown`);
      },
    );
}
