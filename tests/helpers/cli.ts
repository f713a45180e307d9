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
