/**
 * Runs one call in a child process with a timeout, for anything that could
 * block the thread (opening a FIFO without O_NONBLOCK): in-process, such a
 * regression could only hang the suite, never fail a test.
 */
import { spawnSync } from "node:child_process";

/**
 * Imports `moduleUrl` as `m` in a child, awaits `expr` (an expression over
 * `m`), and returns "ok", the thrown CairnError's code, "error: <message>"
 * for anything else, or "hung" when the child did not finish in `timeoutMs`.
 */
export function outcomeInChild(moduleUrl: string | URL, expr: string, timeoutMs = 20_000): string {
  const code = [
    `const m = await import(${JSON.stringify(String(moduleUrl))});`,
    `try { await (${expr}); console.log("ok"); }`,
    `catch (e) { console.log(e && typeof e.code === "string" && e.name === "CairnError" ? e.code : "error: " + String(e)); }`,
  ].join("\n");
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { timeout: timeoutMs, encoding: "utf8" });
  if (r.error !== undefined || r.signal !== null) return "hung";
  return r.stdout.trim().split("\n").at(-1) ?? `error: exit ${r.status} ${r.stderr}`;
}
