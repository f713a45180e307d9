/**
 * Running host tools (gcc, apt, dpkg-deb, qemu) with bounded output and
 * typed errors. Nothing here runs anything that came from a workload input.
 */
import { spawnSync } from "node:child_process";
import { CairnError } from "../core/index.ts";

export interface ToolResult {
  readonly status: number;
  readonly stdout: Buffer;
  readonly stderr: string;
}

const TOOL_OUTPUT_MAX = 256 * 1024 * 1024;

/** Host settings a tool may need (apt behind a proxy); nothing else of the caller's environment is passed. */
const PASS_THROUGH = ["http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"];

export function toolEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" };
  for (const k of PASS_THROUGH) if (process.env[k] !== undefined) env[k] = process.env[k];
  return { ...env, ...extra };
}

/** Runs `cmd args` to completion; a missing executable is PREREQUISITE_MISSING with `fix`. */
export function runTool(cmd: string, args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; fix: string; timeoutMs?: number }): ToolResult {
  const r = spawnSync(cmd, args, {
    cwd: opts.cwd,
    env: opts.env ?? toolEnv(),
    maxBuffer: TOOL_OUTPUT_MAX,
    timeout: opts.timeoutMs ?? 600_000,
    killSignal: "SIGKILL",
  });
  if (r.error) {
    const errno = (r.error as { code?: string }).code;
    if (errno === "ENOENT") {
      throw new CairnError("PREREQUISITE_MISSING", `${cmd} is not installed`, { path: cmd, hint: opts.fix });
    }
    throw new CairnError("IO_ERROR", `cannot run ${cmd}${errno ? ` (${errno})` : ""}`, { path: cmd, cause: r.error });
  }
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr.toString("utf8").slice(0, 4000) };
}

/** Whether an executable is on PATH. */
export function hasTool(cmd: string): boolean {
  const r = spawnSync("sh", ["-c", 'command -v "$1" >/dev/null', "sh", cmd], { stdio: "ignore" });
  return r.status === 0;
}
