/** Runs the cairn CLI in-process with captured output, for command tests. */
import { main } from "../../src/cli/main.ts";

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCli(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const code = await main(
    args,
    {
      out: (t) => void (stdout += t.endsWith("\n") ? t : `${t}\n`),
      err: (t) => void (stderr += t.endsWith("\n") ? t : `${t}\n`),
      tty: false,
    },
    env,
  );
  return { code, stdout, stderr };
}

export interface TerminalCliResult extends CliResult {
  /** Every progress line drawn (what followed each `\r` + clear line), in order. */
  frames: string[];
}

/**
 * Runs the CLI in-process as on a terminal: stderr is a TTY that can be
 * drawn on, and every progress event is drawn (CAIRN_PROGRESS_INTERVAL_MS=0),
 * so the frames do not depend on the clock. A real pseudo-terminal is in
 * tests/cli/progress.test.ts.
 */
export async function runCliOnTerminal(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<TerminalCliResult> {
  let stdout = "";
  let stderr = "";
  const frames: string[] = [];
  const code = await main(
    args,
    {
      out: (t) => void (stdout += t.endsWith("\n") ? t : `${t}\n`),
      err: (t) => void (stderr += t.endsWith("\n") ? t : `${t}\n`),
      tty: true,
      draw: (t) => {
        const frame = t.replace(/^\r\x1b\[2K/, "");
        if (frame !== "") frames.push(frame);
      },
    },
    { ...env, CAIRN_PROGRESS_INTERVAL_MS: "0" },
  );
  return { code, stdout, stderr, frames };
}
