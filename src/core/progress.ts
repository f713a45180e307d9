/**
 * Progress as data: the one event a long library call reports while it
 * works (a phase, how much of it is done, of how much when that is known, in
 * which unit), and the sink it reports to. The library never draws: it calls
 * the sink on each unit of work (a chunk of a blob, a file, a layer, a
 * package), and a caller decides what to show (the CLI draws a bar on a
 * terminal and nothing in a pipe, cli/progress-bar.ts). Throttling is the
 * drawer's business, so the events a run emits do not depend on the clock.
 *
 * Progress is not a log: a message a user should read once ("ref is
 * sha256:…", "stored object does not match: fetching it again") stays a log
 * line, and a progress event says nothing a user must keep. A sink that
 * throws is the caller's bug; the library does not guard against it.
 */

/** What `done` and `total` count. */
export type ProgressUnit = "bytes" | "files" | "layers" | "blobs" | "packages" | "entries" | "instructions" | "seconds" | "tasks" | "steps";

export interface ProgressEvent {
  /** What is being done, in a few words ("pull", "apply layers", "record"). */
  readonly phase: string;
  /** How much of the phase is done, in `unit`: a non-negative integer that does not go down within a phase. */
  readonly done: number;
  /** How much there is in all, when known before the end. */
  readonly total?: number | undefined;
  readonly unit: ProgressUnit;
}

/** Where a long call reports its progress. */
export type Progress = (event: ProgressEvent) => void;

/** The default sink: reports nothing. */
export const noProgress: Progress = () => {};

/** What a long library call may be handed to report with: progress events and log messages, each optional. */
export interface Reporter {
  readonly progress?: Progress | undefined;
  /** A message a user reads once (not progress). */
  readonly log?: ((line: string) => void) | undefined;
}
