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
