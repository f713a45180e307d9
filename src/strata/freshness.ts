/**
 * Lockfile freshness. The age is always shown in words a person reads at a
 * glance (`412 days`, never `9888h`); a lockfile dated in the future is
 * flagged, not silently treated as fresh; `--max-age` takes Go durations as
 * Strata does (`90m`, `1h30m`, `1.5h`, `45s`), plus `d` (days) and `w` (weeks),
 * and `0` for no bound (Strata's meaning), and refuses an older lockfile with
 * an error naming its age, the date it was resolved and the bound. Ages under
 * a minute are shown in seconds. The clock is an argument, never read here.
 */
import { CairnError } from "../core/index.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const UNITS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: HOUR, d: DAY, w: 7 * DAY };
/** lock.max_age_limit: the largest bound --max-age accepts (100 years); beyond it a typo is more likely than intent. */
const MAX_AGE_LIMIT_MS = 36_525 * DAY;

export interface Freshness {
  readonly ageMs: number;
  /** "412 days", "3 hours", "in the future by 2 days". */
  readonly age: string;
  readonly future: boolean;
}

/**
 * Parses a --max-age duration into milliseconds: Go's time.ParseDuration
 * forms (`90m`, `1h30m`, `1.5h`, `300ms`; units ns us µs ms s m h), plus `d`
 * and `w`. `0` means no bound and returns undefined. A negative or oversized
 * duration is refused.
 */
export function parseMaxAge(unsafe: string): number | undefined {
  const usage = (): never => {
    throw new CairnError("USAGE", `--max-age ${JSON.stringify(unsafe).slice(0, 40)} is not a duration`, {
      hint: "write a Go duration (90m, 1h30m, 720h), days or weeks (30d, 2w), or 0 for no bound",
    });
  };
  if (unsafe === "0") return undefined;
  if (unsafe.length > 64 || !/^(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|μs|ms|s|m|h|d|w))+$/.test(unsafe)) usage();
  let ms = 0;
  for (const m of unsafe.matchAll(/([0-9]+(?:\.[0-9]+)?)(ns|us|µs|μs|ms|s|m|h|d|w)/g)) ms += Number(m[1]) * UNITS[m[2]!]!;
  if (!Number.isFinite(ms) || ms > MAX_AGE_LIMIT_MS) {
    throw new CairnError("LIMIT_EXCEEDED", `--max-age ${unsafe.slice(0, 40)} is longer than lock.max_age_limit (100 years)`, { hint: "use 0 for no bound" });
  }
  if (ms === 0) usage(); // only the bare 0 means no bound; 0h is more likely a slip than a request for no bound
  return ms;
}

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? "" : "s"}`;
}

/** A duration in the largest whole unit that is at least one: days, else hours, else minutes, else seconds. */
export function formatDuration(ms: number): string {
  if (ms >= DAY) return plural(Math.floor(ms / DAY), "day");
  if (ms >= HOUR) return plural(Math.floor(ms / HOUR), "hour");
  if (ms >= 60_000) return plural(Math.floor(ms / 60_000), "minute");
  return plural(Math.floor(ms / 1000), "second");
}

export function freshness(resolvedAt: string, now: Date): Freshness {
  const ageMs = now.getTime() - Date.parse(resolvedAt);
  if (ageMs < 0) return { ageMs, age: `in the future by ${formatDuration(-ageMs)}`, future: true };
  return { ageMs, age: formatDuration(ageMs), future: false };
}

/** lock.max_clock_skew: how far in the future a lockfile may be dated (clock skew) before it is refused; it is flagged either way. */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;

/** Throws LOCK_STALE when the lockfile is older than `maxAgeMs` or dated further in the future than the clock skew allows. */
export function checkFreshness(resolvedAt: string, now: Date, maxAgeMs: number | undefined, maxAgeText = ""): Freshness {
  const f = freshness(resolvedAt, now);
  if (f.future && -f.ageMs > MAX_CLOCK_SKEW_MS) {
    throw new CairnError("LOCK_STALE", `the lockfile is dated ${f.age} (resolved_at ${resolvedAt})`, {
      path: "/resolved_at",
      hint: "a lockfile cannot be resolved in the future: check this machine's clock or the lockfile's origin",
    });
  }
  if (maxAgeMs !== undefined && f.ageMs > maxAgeMs) {
    throw new CairnError("LOCK_STALE", `the lockfile is ${f.age} old (resolved ${resolvedAt}), more than --max-age ${maxAgeText || formatDuration(maxAgeMs)}`, {
      path: "/resolved_at",
      hint: "resolve the profile again, or raise --max-age knowingly",
    });
  }
  return f;
}
