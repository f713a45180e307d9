/**
 * Named limits. Every bound on hostile input has a name, a default and a unit,
 * and exceeding it is an error that names the limit so the user can raise it
 * knowingly.
 */
import { CairnError } from "./errors.ts";

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 * 1024) return `${(n / 1024 / 1024 / 1024).toFixed(1)} GiB`;
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} B`;
}

/** Throws LIMIT_EXCEEDED naming `limit` when `value` is over `max`. */
export function checkLimit(limit: string, value: number, max: number, path = "", unit: "bytes" | "count" = "count", hint?: string): void {
  if (value > max) {
    const shown = unit === "bytes" ? `${formatBytes(value)} > ${formatBytes(max)}` : `${value} > ${max}`;
    throw new CairnError("LIMIT_EXCEEDED", `limit ${limit} exceeded (${shown})`, {
      path,
      hint: hint ?? `"${limit}" bounds hostile input; if this input is expected, raise it where the spec or command allows (docs list each limit)`,
    });
  }
}

/** The hint for a limit that this version of cairn does not let a user raise. */
export const FIXED_LIMIT_HINT = "this limit is fixed in this version of cairn; the input is larger than cairn accepts";

/**
 * Bounds on talking to a remote registry, cairn's own rather than the HTTP
 * client's: a registry that never answers, answers one byte at a time, or
 * links its tag list back to itself must end as an error that names the
 * bound, not hang the command (issue 31, cases 2 and 3). The defaults are
 * ones a slow but honest registry meets; each is overridable by a flag
 * (`--<name with dots as dashes>`, e.g. `--remote-idle-ms`) or the
 * environment (`CAIRN_REMOTE_IDLE_MS`), the flag winning.
 */
export interface RemoteLimits {
  /** `remote.connect-ms`: TCP connect plus TLS handshake. */
  readonly connectMs: number;
  /** `remote.headers-ms`: from sending a request to its response headers. */
  readonly headersMs: number;
  /** `remote.idle-ms`: waiting for the next byte of a body. */
  readonly idleMs: number;
  /** `remote.min-rate`: bytes per second a body must average over each window... */
  readonly minRate: number;
  /** `remote.rate-window-ms`: ...of this many milliseconds of waiting. */
  readonly rateWindowMs: number;
  /** `remote.max-pages`: pages of one paginated listing (a tag list). */
  readonly maxPages: number;
  /** `remote.max-requests`: requests one registry client (one command's use of one registry) sends. */
  readonly maxRequests: number;
}

/** Each remote limit's name (as errors, flags and the environment spell it) and default. */
export const REMOTE_LIMITS: { readonly [K in keyof RemoteLimits]: { readonly name: string; readonly default: number; readonly unit: string } } = {
  connectMs: { name: "remote.connect-ms", default: 30_000, unit: "ms" },
  headersMs: { name: "remote.headers-ms", default: 120_000, unit: "ms" },
  idleMs: { name: "remote.idle-ms", default: 60_000, unit: "ms" },
  minRate: { name: "remote.min-rate", default: 1024, unit: "bytes/s" },
  rateWindowMs: { name: "remote.rate-window-ms", default: 60_000, unit: "ms" },
  maxPages: { name: "remote.max-pages", default: 1000, unit: "pages" },
  maxRequests: { name: "remote.max-requests", default: 100_000, unit: "requests" },
};

/** How a user sets a remote limit: `remote.idle-ms` is the flag `--remote-idle-ms` and the variable `CAIRN_REMOTE_IDLE_MS`. */
export function remoteLimitSpelling(k: keyof RemoteLimits): { readonly flag: string; readonly env: string } {
  const dashed = REMOTE_LIMITS[k].name.replace(".", "-");
  return { flag: `--${dashed}`, env: `CAIRN_${dashed.replace(/-/g, "_").toUpperCase()}` };
}

/** The hint of a remote limit's error: what it bounds and how to raise it. */
export function remoteLimitHint(k: keyof RemoteLimits): string {
  const s = remoteLimitSpelling(k);
  return `"${REMOTE_LIMITS[k].name}" bounds a registry that could otherwise hang cairn; if this registry is honest but slow or large, raise it with ${s.flag} or ${s.env}`;
}

/** The remote limits with every one not given at its default. */
export function remoteLimits(given: Partial<RemoteLimits> = {}): RemoteLimits {
  const d = (k: keyof RemoteLimits): number => given[k] ?? REMOTE_LIMITS[k].default;
  return {
    connectMs: d("connectMs"),
    headersMs: d("headersMs"),
    idleMs: d("idleMs"),
    minRate: d("minRate"),
    rateWindowMs: d("rateWindowMs"),
    maxPages: d("maxPages"),
    maxRequests: d("maxRequests"),
  };
}

/**
 * Bounds on the variables `cairn run LOCK --env KEY=VAL` sets (vm/run-env.ts):
 * how many entries, and how long one `KEY=VAL` may be in UTF-8 bytes. The
 * launch's own limits (`launch.env_count`, `launch.total_bytes`) still bound
 * the whole environment the workload gets.
 */
export const RUN_ENV_LIMITS = {
  "run.env_count": 256,
  "run.env_entry_bytes": 32 * 1024,
} as const;

/**
 * Bounds on a campaign file (fleet/campaign-file.ts), hostile like any input:
 * a small file must not expand into millions of tasks. `campaign.tasks`
 * bounds the expanded plan (runs x matrix points x repeat), checked before
 * any point is built; `campaign.matrix-points` the cross product of the
 * matrix alone.
 */
export const CAMPAIGN_LIMITS = {
  /** campaign.file-bytes: the campaign file itself. */
  "campaign.file-bytes": 1024 * 1024,
  /** campaign.runs: entries under `runs:` (a `campaign:` entry counts each run it names). */
  "campaign.runs": 1000,
  /** campaign.matrix-axes: entries under `matrix:`. */
  "campaign.matrix-axes": 16,
  /** campaign.matrix-values: values of one axis. */
  "campaign.matrix-values": 1000,
  /** campaign.matrix-points: the cross product of every axis. */
  "campaign.matrix-points": 10_000,
  /** campaign.repeat: `repeat:`. */
  "campaign.repeat": 1000,
  /** campaign.tasks: the expanded plan. */
  "campaign.tasks": 10_000,
  /** campaign.plan-bytes: a results directory's campaign.json, read back. */
  "campaign.plan-bytes": 256 * 1024 * 1024,
  /** campaign.result-bytes: one task's result.json or receipt, read back. */
  "campaign.result-bytes": 1024 * 1024,
  /** campaign.retries: `retries:`. */
  "campaign.retries": 10,
} as const;

/**
 * Bounds on `cairn explore` (issue 35 item 5): its vary file is hostile
 * input, and each variation is a branch, a QEMU recording with a copy of the
 * parent's checkpoint (about 100 MB for a 256 MiB guest), so the count of
 * variations is checked from the axes alone, before one is built.
 */
export const EXPLORE_LIMITS = {
  /** explore.file-bytes: the vary file itself. */
  "explore.file-bytes": 1024 * 1024,
  /** explore.vary-axes: entries under `vary:`. */
  "explore.vary-axes": 16,
  /** explore.vary-values: values of one axis. */
  "explore.vary-values": 1000,
  /** explore.variations: the cross product of every axis (one branch each). */
  "explore.variations": 1000,
  /** explore.jobs: branches recorded at once (`--jobs`). */
  "explore.jobs": 64,
} as const;
