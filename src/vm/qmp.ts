/**
 * A minimal QMP client over QEMU's `-qmp unix:PATH,server=on,wait=off`
 * socket, for the host-side acts of a recording (checkpoints,
 * checkpoint-take.ts). One command at a time, answers in order; QEMU's
 * asynchronous events (`{"event": …}`) are skipped. A line longer than
 * QMP_LINE_MAX_BYTES ends the connection: QEMU's answers to the commands
 * used here are short, and the socket is read without trusting its length.
 * HMP-only commands (`savevm`) go through `human-monitor-command`.
 */
import { createConnection, type Socket } from "node:net";
import { CairnError } from "../core/index.ts";

const QMP_LINE_MAX_BYTES = 1024 * 1024;

type Answer = { readonly return?: unknown; readonly error?: { readonly class?: string; readonly desc?: string } };

export class QmpClient {
  readonly #socket: Socket;
  #buffer = "";
  readonly #waiting: { resolve: (a: Answer) => void; reject: (e: Error) => void }[] = [];
  #closed: Error | undefined;
  /** Settles with QEMU's greeting, once the connection is usable (capabilities negotiated). */
  readonly ready: Promise<void>;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => this.#data(d));
    socket.on("error", (e) => this.#close(e));
    socket.on("close", () => this.#close(new Error("QEMU closed its monitor")));
    const greeting = new Promise<Answer>((resolve, reject) => this.#waiting.push({ resolve, reject }));
    this.ready = greeting.then(() => this.command("qmp_capabilities")).then(() => undefined);
    this.ready.catch(() => {}); // a caller that never awaits it must not see an unhandled rejection
  }

  static connect(path: string): QmpClient {
    return new QmpClient(createConnection(path));
  }

  #data(d: string): void {
    this.#buffer += d;
    for (;;) {
      const nl = this.#buffer.indexOf("\n");
      if (nl < 0) break;
      const line = this.#buffer.slice(0, nl).trim();
      this.#buffer = this.#buffer.slice(nl + 1);
      if (line === "") continue;
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(line) as Record<string, unknown>;
      } catch {
        this.#close(new Error("QEMU's monitor sent a line that is not JSON"));
        return;
      }
      if ("event" in o) continue;
      this.#waiting.shift()?.resolve(o as Answer);
    }
    if (this.#buffer.length > QMP_LINE_MAX_BYTES) this.#close(new Error(`QEMU's monitor sent a line over ${QMP_LINE_MAX_BYTES} bytes`));
  }

  #close(e: Error): void {
    if (this.#closed === undefined) this.#closed = e;
    for (const w of this.#waiting.splice(0)) w.reject(this.#closed);
    this.#socket.destroy();
  }

  /** Runs one QMP command; its `return`, or a RUN_INFRASTRUCTURE error naming QEMU's `error`. */
  async command(execute: string, args?: Record<string, unknown>): Promise<unknown> {
    if (this.#closed !== undefined) throw this.#closed;
    const answer = new Promise<Answer>((resolve, reject) => this.#waiting.push({ resolve, reject }));
    this.#socket.write(`${JSON.stringify({ execute, ...(args !== undefined ? { arguments: args } : {}) })}\n`);
    const a = await answer;
    if (a.error !== undefined)
      throw new CairnError("RUN_INFRASTRUCTURE", `QEMU refused ${execute}: ${a.error.desc ?? a.error.class ?? "?"}`, { path: execute });
    return a.return;
  }

  /** An HMP command's text output (`savevm` says nothing when it succeeds). */
  async human(commandLine: string): Promise<string> {
    const r = await this.command("human-monitor-command", { "command-line": commandLine });
    return typeof r === "string" ? r : "";
  }

  close(): void {
    this.#close(new Error("closed"));
  }
}
