/**
 * How `cairn run` and `cairn replay` show the workload's own output: each
 * stream to its own (stdout to stdout, stderr to stderr), after the summary
 * under a header naming the invocation and the byte count, or live with
 * `run --follow`, line by line as the guest writes it. Printing reads a
 * recording that is already written (or, live, the file QEMU writes); it
 * changes nothing in it. Output bytes are private to the user who ran it:
 * they are printed to that user's terminal and never put into a shareable file.
 */
import type { Io } from "./output.ts";

/** The most of one unfinished line `--follow` holds before printing it anyway. */
const HOLD_MAX = 64 * 1024;

export type Streams = ReadonlyMap<number, { readonly stdout: Buffer; readonly stderr: Buffer }>;

export function printStreams(io: Io, streams: Streams): void {
  for (const [inv, s] of [...streams].sort((a, b) => a[0] - b[0])) {
    if (s.stdout.length > 0) io.out(`--- invocation ${inv} stdout (${s.stdout.length} bytes) ---\n${s.stdout.toString("utf8")}`);
    if (s.stderr.length > 0) io.err(`--- invocation ${inv} stderr (${s.stderr.length} bytes) ---\n${s.stderr.toString("utf8")}`);
  }
}

/**
 * A listener for `run --follow`: whole lines as they arrive (Io prints
 * lines), the rest of a line held until its newline or `flush()`.
 */
export function lineFollower(io: Io): {
  listener: (invocation: number, stream: "stdout" | "stderr", bytes: Buffer) => void;
  flush: () => void;
} {
  const held = new Map<string, Buffer>();
  const put = (stream: "stdout" | "stderr", text: Buffer) => (stream === "stdout" ? io.out(text.toString("utf8")) : io.err(text.toString("utf8")));
  return {
    listener(invocation, stream, bytes) {
      const key = `${invocation}/${stream}`;
      const all = Buffer.concat([held.get(key) ?? Buffer.alloc(0), bytes]);
      const end = all.lastIndexOf(0x0a);
      if (end < 0 && all.length <= HOLD_MAX) {
        held.set(key, all);
        return;
      }
      if (end < 0) {
        put(stream, all); // a long line without a newline is printed in pieces rather than held without bound
        held.delete(key);
        return;
      }
      put(stream, all.subarray(0, end + 1));
      held.set(key, all.subarray(end + 1));
    },
    flush() {
      for (const [key, rest] of held) if (rest.length > 0) put(key.endsWith("stdout") ? "stdout" : "stderr", rest);
      held.clear();
    },
  };
}
