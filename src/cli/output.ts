/**
 * How commands talk to the user: results on stdout (human text or one JSON
 * document), progress and logs on stderr, and errors mapped to exit codes
 * (0 success, 1 refused or verification failed, 2 usage, 3 missing
 * prerequisite). With --json every document printed on stdout carries a
 * top-level schema tag naming its shape (docs/json-output.md, one JSON Schema
 * per tag under docs/schemas/), and a failure prints
 * {"schema":"cairn.cli.error/1","error":{code,message,path,hint}}.
 */
import { existsSync, realpathSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { CairnError, describeNotWritable, mediaErrno } from "../core/index.ts";

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** True when stderr is a terminal (progress bars only then). */
  readonly tty: boolean;
  /** Writes `text` to stderr as it is, no newline added: how a progress bar redraws its line (cli/progress-bar.ts). */
  readonly draw?: ((text: string) => void) | undefined;
  /** stderr's width in columns when it is a terminal (a progress line fits it). */
  readonly columns?: number | undefined;
}

/**
 * Text from hostile input (a task's or guest's message, a lockfile's package
 * name or `satisfied_by`) printed to a terminal: control characters and line
 * breaks are shown escaped (`\u001b`), so an escape sequence cannot rewrite
 * the screen and a newline cannot forge a line of cairn's output.
 */
export function printable(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** `path` absolute, its directory's symlinks resolved (the file itself is what a rename would replace). */
function placeOf(cwd: string, path: string): string {
  const abs = resolve(cwd, path);
  const dir = dirname(abs);
  return existsSync(dir) ? resolve(realpathSync(dir), basename(abs)) : abs;
}

/**
 * Where a page or report named by `flag` is written, refused (USAGE) when it
 * is one of the command's inputs or a file cairn keeps beside one (`.dsse.json`,
 * `.cairn.json`): `lock diff A B --html A` would replace the lockfile with a
 * page, and its signature would no longer verify.
 */
export function outputPath(cwd: string, flag: string, out: string, inputs: readonly string[]): string {
  const place = placeOf(cwd, out);
  for (const input of inputs) {
    const p = placeOf(cwd, input);
    if ([p, `${p}.dsse.json`, `${p}.cairn.json`].includes(place)) {
      throw new CairnError("USAGE", `${flag} ${out} is an input of this command (${input}${place === p ? "" : "'s file beside it"}): it would be replaced`, {
        path: flag,
        hint: `write the page somewhere else, e.g. ${flag} ${basename(input)}.html`,
      });
    }
  }
  return resolve(cwd, out);
}

/**
 * Where a page or trace of a directory (a run) is written, refused (USAGE)
 * when it lies inside that directory: `runs show RUN --html RUN/events.json`
 * would replace the record's events with a page, and any file written there
 * is one the run never had.
 */
export function outputPathOutside(cwd: string, flag: string, out: string, dir: string): string {
  const place = placeOf(cwd, out);
  const root = existsSync(dir) ? realpathSync(dir) : resolve(cwd, dir);
  if (place === root || place.startsWith(`${root}/`))
    throw new CairnError("USAGE", `${flag} ${out} is inside ${dir}: the run's own files are never written by showing it`, {
      path: flag,
      hint: `write it outside the run directory, e.g. ${flag} ${basename(root)}.html`,
    });
  return resolve(cwd, out);
}

export const processIo: Io = {
  out: (t) => void process.stdout.write(t.endsWith("\n") ? t : `${t}\n`),
  err: (t) => void process.stderr.write(t.endsWith("\n") ? t : `${t}\n`),
  tty: process.stderr.isTTY === true,
  draw: (t) => void process.stderr.write(t),
  get columns() {
    return process.stderr.columns;
  },
};

/**
 * The tag of a --json document: `cairn.cli.<the command's words joined by "-">/<version>`
 * (`cairn runs list --json` prints `cairn.cli.runs-list/1`), or `cairn.cli.error/1` for a
 * failure. Its schema is docs/schemas/<tag without the version>.v<version>.json.
 */
export type JsonTag = `cairn.cli.${string}/${number}`;

/** The tag of the document a failure prints under --json. */
export const ERROR_TAG: JsonTag = "cairn.cli.error/1";

/**
 * Prints one --json document: `value`'s fields after a first field `schema`
 * holding `tag`. Every JSON document on stdout goes through here, so none
 * lacks its tag; a value with a field of its own named `schema` is a bug in
 * the caller (wrap it under a name instead).
 */
export function printJson(io: Io, tag: JsonTag, value: object): void {
  if (Array.isArray(value) || Object.hasOwn(value, "schema")) throw new Error(`the --json document ${tag} is not an object without a schema field`);
  io.out(JSON.stringify({ schema: tag, ...value }, null, 2));
}

/**
 * Reports `error` and returns the exit code. The top-level guard: anything
 * that is not a CairnError (a bug, a RangeError from a parser, a stack
 * overflow) becomes a coded INTERNAL error, exit 1, a JSON document under
 * --json, never a stack trace (CAIRN_DEBUG=1 prints it). Its message names
 * only the error's kind: a foreign message may quote input (a JSON or YAML
 * parser's does), and input may hold secrets.
 */
export function reportError(io: Io, error: unknown, json: boolean): number {
  const kind = error instanceof Error ? error.name : typeof error;
  const e =
    error instanceof CairnError
      ? error
      : (mediaError(error) ??
        new CairnError("INTERNAL", `internal error (${kind})`, { cause: error, hint: "this is a bug in cairn; CAIRN_DEBUG=1 shows where" }));
  if (json) {
    printJson(io, ERROR_TAG, { error: e.toJSON() });
  } else {
    io.err(`cairn: error [${e.code}]${e.path ? ` at ${e.path}` : ""}: ${e.message}`);
    if (e.hint) io.err(`hint: ${e.hint}`);
    if (!(error instanceof CairnError) && process.env.CAIRN_DEBUG) io.err(String((error as Error)?.stack));
  }
  return e.exitCode;
}

/**
 * The last guard for a write the media refused (full, read-only, not
 * permitted) that no library layer named: an I/O failure of the host, not a
 * bug, so IO_ERROR with the errno and the path when the error carries one,
 * never INTERNAL (issue 31).
 */
function mediaError(error: unknown): CairnError | undefined {
  const errno = mediaErrno(error);
  if (errno === undefined) return undefined;
  const path = (error as { path?: unknown }).path;
  const syscall = (error as { syscall?: unknown }).syscall;
  const where = typeof path === "string" ? path : undefined;
  return new CairnError(
    "IO_ERROR",
    `${typeof syscall === "string" ? `${syscall} failed` : "a write failed"}${where !== undefined ? ` at ${where}: ${describeNotWritable(where, errno)}` : ` (${errno}: ${error instanceof Error ? error.message : errno})`}`,
    { path: where, cause: error, hint: "free space, or remount read-write, or use a directory you may write; then run the command again" },
  );
}
