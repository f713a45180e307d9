/**
 * The exit codes of the diff commands (`lock diff`, `manifest diff`), the one
 * exception to cairn's general convention, as `diff(1)` and `cmp(1)` have it:
 * 0 the inputs are equal, 1 they differ, 2 trouble (a missing, unreadable or
 * invalid input, or a usage error). Under the general convention a missing
 * file is exit 1, the same as "they differ", and a script could not tell the
 * two apart (issue 31, case 18). docs/errors.md states this exception.
 */
import type { Context } from "./context.ts";

export const DIFF_EQUAL = 0;
export const DIFF_DIFFERENT = 1;
export const DIFF_TROUBLE = 2;

/** Said in every diff command's --help. */
export const DIFF_EXIT_HELP = "exit 0 equal, 1 different, 2 trouble (a missing, unreadable or invalid input)";

/** Called first in a diff command's action: from here on any failure exits DIFF_TROUBLE. */
export function diffExitCodes(ctx: Context): void {
  ctx.troubleExitCode = DIFF_TROUBLE;
}
