/**
 * Runs one call in a child process, for anything that could block the thread
 * (opening a FIFO without O_NONBLOCK): in-process, such a regression could
 * only hang the suite, never fail a test. The outcome is the child's exit (an
 * event); HANG_GUARD_MS only ends a child that never exits.
 */
import { spawnSync } from "node:child_process";

/**
 * The bound on a child that may block: a hang guard, never a measure of
 * time. A healthy child exits in a second or two, but on the shared 2-core
 * machine under a Stryker run it took over 20 s just to start (issue 31: a
 * 20 s bound called such children "hung"), so the guard is minutes.
 */
export const HANG_GUARD_MS = 300_000;

/**
 * Imports `moduleUrl` as `m` in a child, awaits `expr` (an expression over
 * `m`), and returns "ok", the thrown CairnError's code, "error: <message>"
 * for anything else, or "hung" when the child had not exited by the hang guard.
 */
export function outcomeInChild(moduleUrl: string | URL, expr: string, timeoutMs = HANG_GUARD_MS): string {
  return runInChild(moduleUrl, expr, false, timeoutMs);
}

/** As outcomeInChild, but a value is returned as its JSON text ("ok" only for undefined). */
export function valueInChild(moduleUrl: string | URL, expr: string, timeoutMs = HANG_GUARD_MS): string {
  return runInChild(moduleUrl, expr, true, timeoutMs);
}

function runInChild(moduleUrl: string | URL, expr: string, value: boolean, timeoutMs: number): string {
  const code = [
    `const m = await import(${JSON.stringify(String(moduleUrl))});`,
    value ? `try { const v = await (${expr}); console.log(v === undefined ? "ok" : JSON.stringify(v)); }` : `try { await (${expr}); console.log("ok"); }`,
    `catch (e) { console.log(e && typeof e.code === "string" && e.name === "CairnError" ? e.code : "error: " + String(e)); }`,
  ].join("\n");
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { timeout: timeoutMs, encoding: "utf8" });
  if (r.error !== undefined || r.signal !== null) return "hung";
  return r.stdout.trim().split("\n").at(-1) ?? `error: exit ${r.status} ${r.stderr}`;
}
