/**
 * The cairn command line. Each command lives in its own file under
 * `commands/` and registers itself on the program; this file only wires them
 * together and maps failures to exit codes.
 */
import { Command, CommanderError } from "commander";
import { CairnError } from "../core/index.ts";
import { processIo, reportError, type Io } from "./output.ts";
import { COMMANDS } from "./commands/index.ts";
import { CAIRN_VERSION } from "./cairn-version.ts";

export interface Context {
  io: Io;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Whether --json was asked for (decides how a failure is printed). */
  json: boolean;
  /** A command may set a non-zero exit code without throwing (e.g. a diff found differences). */
  exitCode?: number;
}

export function buildProgram(ctx: Context): Command {
  const program = new Command("cairn")
    .description("Make a compute environment a checkable fact: canonical identities, signed locks, offline verification, deterministic record/replay.")
    .version(CAIRN_VERSION)
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => ctx.io.out(s),
      writeErr: (s) => ctx.io.err(s),
    });
  for (const register of COMMANDS) register(program, ctx);
  return program;
}

export async function main(argv: string[], io: Io = processIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const ctx: Context = { io, env, cwd: process.cwd(), json: argv.includes("--json") };
  const program = buildProgram(ctx);
  try {
    await program.parseAsync(argv, { from: "user" });
    return ctx.exitCode ?? 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return 0; // --help, --version
      if (ctx.json) return reportError(io, new CairnError("USAGE", error.message), true);
      return 2;
    }
    return reportError(io, error, ctx.json);
  }
}
