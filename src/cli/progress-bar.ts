/**
 * The CLI's drawing of the library's progress events (core/progress.ts): on
 * a terminal (stderr is a TTY) one line redrawn in place (`\r`, clear line),
 * at most one redraw per interval (100 ms, ≤10 redraws a second; a new phase
 * draws at once), erased when the command ends or before any other line is
 * written; off a terminal, or with `--quiet`, nothing at all. Never on
 * stdout, so `--json` stays one document and a pipe reads no bar.
 *
 * `CAIRN_PROGRESS_INTERVAL_MS` (a non-negative integer; anything else means
 * the default) sets the interval; 0 draws every event, which the tests use
 * so that what they see does not depend on the clock.
 */
import { noProgress, type Progress, type ProgressEvent } from "../core/index.ts";
import type { Io } from "./output.ts";

export const DEFAULT_PROGRESS_INTERVAL_MS = 100;
/** The widest line drawn, so the bar fits an ordinary terminal without wrapping (a wrapped line cannot be redrawn with `\r`). */
const LINE_WIDTH = 78;
const BAR_WIDTH = 24;
const CLEAR = "\r\x1b[2K";

export interface ProgressDisplay {
  /** The Io commands write to: the same, but clearing the bar before any line. */
  readonly io: Io;
  /** The sink handed to the library (a no-op when nothing is drawn). */
  readonly progress: Progress;
  /** Erases the bar, if one is drawn. Called once the command ended, before its error is printed. */
  finish(): void;
}

/** The interval between redraws that `env` asks for. */
export function progressInterval(env: NodeJS.ProcessEnv): number {
  const raw = env.CAIRN_PROGRESS_INTERVAL_MS;
  return raw !== undefined && /^\d{1,7}$/.test(raw) ? Number(raw) : DEFAULT_PROGRESS_INTERVAL_MS;
}

/** A display for `io`: a bar when stderr is a terminal that can be drawn on and `quiet` is false, else nothing. */
export function progressDisplay(io: Io, opts: { quiet: boolean; env: NodeJS.ProcessEnv; now?: () => number }): ProgressDisplay {
  const draw = io.draw;
  if (!io.tty || opts.quiet || draw === undefined) return { io, progress: noProgress, finish: () => {} };
  const interval = progressInterval(opts.env);
  const now = opts.now ?? (() => performance.now());
  let drawn = false;
  let lastPhase: string | undefined;
  let lastAt = Number.NEGATIVE_INFINITY;
  let ended = false;
  const clear = (): void => {
    if (!drawn) return;
    draw(CLEAR);
    drawn = false;
  };
  const progress: Progress = (e) => {
    if (ended) return; // an event after the command ended (a late timer) would be a bar nothing erases
    const t = now();
    if (e.phase === lastPhase && t - lastAt < interval) return;
    lastPhase = e.phase;
    lastAt = t;
    draw(`${CLEAR}${progressLine(e, lineWidth(io.columns))}`);
    drawn = true;
  };
  const wrapped: Io = {
    out: (text) => {
      clear();
      io.out(text);
    },
    err: (text) => {
      clear();
      io.err(text);
    },
    tty: io.tty,
    draw,
    get columns() {
      return io.columns;
    },
  };
  const finish = (): void => {
    ended = true;
    clear();
  };
  return { io: wrapped, progress, finish };
}

/**
 * The widest line for a terminal of `columns` (one less, so the cursor never
 * wraps: a wrapped line cannot be redrawn with `\r`), at most LINE_WIDTH.
 */
export function lineWidth(columns: number | undefined): number {
  return columns !== undefined && Number.isSafeInteger(columns) && columns > 1 ? Math.min(LINE_WIDTH, columns - 1) : LINE_WIDTH;
}

/** One line of the bar, at most `width` characters: phase, a bar when the total is known and there is room, done/total and the unit. */
export function progressLine(e: ProgressEvent, width = LINE_WIDTH): string {
  const total = e.total !== undefined && e.total > 0 ? e.total : undefined;
  const count = total !== undefined ? `${amount(e.done, e.unit)}/${amount(total, e.unit)}` : amount(e.done, e.unit);
  let bar = "";
  if (total !== undefined) {
    const filled = Math.max(0, Math.min(BAR_WIDTH, Math.floor((e.done / total) * BAR_WIDTH)));
    bar = ` [${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}] ${Math.min(100, Math.floor((e.done / total) * 100))}%`;
  }
  // a narrow terminal drops the bar before the phase or the count
  const tail = bar !== "" && bar.length + count.length + 9 > width ? ` ${count}` : `${bar} ${count}`;
  const room = Math.max(1, width - tail.length);
  const clean = e.phase.replace(/\p{Cc}/gu, "?");
  const phase = clean.length > room ? `${clean.slice(0, room - 1)}…` : clean;
  return `${phase}${tail}`.slice(0, width);
}

/** `n` in `unit`, bytes in binary multiples. */
function amount(n: number, unit: ProgressEvent["unit"]): string {
  if (unit !== "bytes") return `${n} ${unit}`;
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}
