/**
 * What every command is handed: where to print, the process environment and
 * working directory (arguments, never globals read deep inside, so tests can
 * vary them), whether --json was asked for, and the exit code a command may
 * set without throwing. It lives apart from main.ts so that command files
 * import it without importing the program that imports them.
 */
import type { Progress } from "../core/index.ts";
import type { Io } from "./output.ts";

export interface Context {
  io: Io;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Whether --json was asked for (decides how a failure is printed). */
  json: boolean;
  /** Where a long command reports progress (a bar on a terminal, nothing otherwise or with --quiet; cli/progress-bar.ts). */
  progress?: Progress;
  /** A command may set a non-zero exit code without throwing (e.g. a diff found differences). */
  exitCode?: number;
  /**
   * The exit code of a failure, when a command's convention differs from the
   * general one: the diff commands exit 2 on any trouble (a missing,
   * unreadable or invalid input), as `diff(1)` and `cmp(1)` do, because their
   * exit 1 means "the inputs differ" (see diff-exit.ts).
   */
  troubleExitCode?: number;
}
