/**
 * The cairn command line. Each command lives in its own file under
 * `commands/` and registers itself on the program (program.ts); this file
 * only runs the program and maps failures to exit codes. Only bin/ and the
 * tests that run the CLI import this file.
 */
import { CommanderError } from "commander";
import { CairnError } from "../core/index.ts";
import { processIo, reportError, type Io } from "./output.ts";
import type { Context } from "./context.ts";
import { buildProgram } from "./program.ts";
import { progressDisplay } from "./progress-bar.ts";

export async function main(argv: string[], io: Io = processIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const display = progressDisplay(io, { quiet: argv.includes("--quiet"), env });
  const ctx: Context = { io: display.io, env, cwd: process.cwd(), json: argv.includes("--json"), progress: display.progress };
  try {
    const program = await buildProgram(ctx, argv);
    await program.parseAsync(argv, { from: "user" });
    display.finish();
    return ctx.exitCode ?? 0;
  } catch (error) {
    display.finish();
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return 0; // --help, --version
      if (ctx.json) return reportError(io, new CairnError("USAGE", error.message), true);
      return 2;
    }
    const code = reportError(io, error, ctx.json);
    return ctx.troubleExitCode ?? code;
  }
}

/**
 * For the `cairn` executable: an exception or rejection that escapes every
 * handler (a callback, a stream) is reported like any other failure, a coded
 * INTERNAL error with exit 1, never a stack trace.
 */
export function guardProcess(argv: readonly string[], io: Io = processIo): void {
  const json = argv.includes("--json");
  const fatal = (error: unknown): void => {
    if (io.tty) io.draw?.("\r\x1b[2K"); // a progress line the failed command left is not the start of the error's
    process.exitCode = reportError(io, error, json);
    process.exit();
  };
  process.on("uncaughtException", fatal);
  process.on("unhandledRejection", fatal);
}
