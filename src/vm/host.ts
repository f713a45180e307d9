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

/** Runs `cmd args` to completion; a missing executable is PREREQUISITE_MISSING with `fix`. */
export function runTool(cmd: string, args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; fix: string; timeoutMs?: number }): ToolResult {
  const r = spawnSync(cmd, args, {
    cwd: opts.cwd,
    env: opts.env ?? { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" },
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
