/**
 * Lockfile freshness. The age is always shown in words a person reads at a
 * glance (`412 days`, never `9888h`); a lockfile dated in the future is
 * flagged, not silently treated as fresh; `--max-age` takes `30d`, `2w` or
 * `720h` and refuses an older lockfile with an error naming its age, the date it
 * was resolved and the bound. The clock is an argument, never read here.
 */
import { CairnError } from "../core/index.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const UNITS: Readonly<Record<string, number>> = { h: HOUR, d: DAY, w: 7 * DAY };

export interface Freshness {
  readonly ageMs: number;
  /** "412 days", "3 hours", "in the future by 2 days". */
  readonly age: string;
  readonly future: boolean;
}

/** Parses `30d`, `2w`, `720h` into milliseconds. */
export function parseMaxAge(unsafe: string): number {
  const m = /^([1-9][0-9]{0,5})([hdw])$/.exec(unsafe);
  if (m === null) {
    throw new CairnError("USAGE", `--max-age ${JSON.stringify(unsafe).slice(0, 40)} is not a duration`, { hint: "write a number and a unit: 720h, 30d or 2w" });
  }
  return Number(m[1]) * UNITS[m[2]!]!;
}

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? "" : "s"}`;
}

/** A duration in the largest whole unit that is at least one: days, else hours, else minutes. */
export function formatDuration(ms: number): string {
  if (ms >= DAY) return plural(Math.floor(ms / DAY), "day");
  if (ms >= HOUR) return plural(Math.floor(ms / HOUR), "hour");
  return plural(Math.floor(ms / 60_000), "minute");
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
