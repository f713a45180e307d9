/**
 * What every command is handed: where to print, the process environment and
 * working directory (arguments, never globals read deep inside, so tests can
 * vary them), whether --json was asked for, and the exit code a command may
 * set without throwing. It lives apart from main.ts so that command files
 * import it without importing the program that imports them.
 */
import type { Io } from "./output.ts";

export interface Context {
  io: Io;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Whether --json was asked for (decides how a failure is printed). */
  json: boolean;
  /** A command may set a non-zero exit code without throwing (e.g. a diff found differences). */
  exitCode?: number;
}
