/**
 * A real browser for the tests of the pages cairn writes: Debian's
 * `chromium`, headless, driven through the Chrome DevTools Protocol over
 * `--remote-debugging-pipe` (the browser reads NUL-terminated JSON messages
 * on its fd 3 and writes them on its fd 4), so no npm dependency and no
 * listening port. `openPage` loads one `file://` page and reports what a
 * reader would want to be sure of:
 *
 *   - every console error, uncaught exception and browser log entry of level
 *     error or warning (`Runtime.consoleAPICalled`, `Runtime.exceptionThrown`,
 *     `Log.entryAdded`; a Content-Security-Policy refusal is one of these);
 *   - every request the page made or tried to make
 *     (`Network.requestWillBeSent`, which fires before the policy refuses
 *     one; `Network.loadingFailed` says which were refused and why): a
 *     self-contained page makes exactly one, for its own file;
 *
 * and lets the test query the DOM (`Runtime.evaluate`, run by the protocol,
 * not by the page: the pages carry no script and their policy forbids it) and
 * take a PNG screenshot of the whole page (`Page.captureScreenshot`).
 *
 * The browser runs in its own process group with a throwaway profile
 * directory; `close` asks it to exit and then kills the group, so no renderer
 * or GPU helper outlives the test. It runs with `--no-sandbox` only as root
 * (Chromium refuses to start as root with its sandbox).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Readable, Writable } from "node:stream";
import { killGroupAndWait } from "../../src/vm/processes.ts";

/** The browser binary: Debian's real executable (the /usr/bin/chromium wrapper only adds flags), else `chromium` on PATH. */
export function chromiumPath(): string | undefined {
  for (const p of ["/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser"]) if (existsSync(p)) return p;
  return undefined;
}

/** For `needs(...)`: undefined when chromium is installed, else what is missing and how to install it. */
export function chromiumMissing(): string | undefined {
  return chromiumPath() === undefined ? "chromium (apt-get install -y chromium; scripts/setup-host.sh installs it)" : undefined;
}

export interface PageProblem {
  readonly kind: "console" | "exception" | "log";
  readonly level: string;
  readonly text: string;
}

export interface OpenedPage {
  /** Console errors and warnings, uncaught exceptions and browser log entries (errors and warnings), in order. */
  readonly problems: PageProblem[];
  /** The URL of every request the page made or tried to make, in order (the page's own file included; one its policy refused too). */
  readonly requests: string[];
  /** Requests the browser refused before they went out, as "reason url" (e.g. "csp http://..."). */
  readonly blocked: string[];
  /** The value of a JavaScript expression evaluated in the page (by the protocol, not the page), as JSON. */
  evaluate<T>(expression: string): Promise<T>;
  /** A PNG of the whole page at the given width (CSS pixels). */
  screenshot(width?: number): Promise<Buffer>;
}

interface Message {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
  sessionId?: string;
}

/** The fields of the protocol events `openPage` reads (each event has some of them). */
interface CdpEventParams {
  requestId?: string;
  request?: { url?: string };
  blockedReason?: string;
  exceptionDetails?: { text?: string; exception?: { description?: string } };
  type?: string;
  args?: Array<{ value?: unknown; description?: string }>;
  entry?: { level?: string; source?: string; text?: string; url?: string };
}

/** One browser process and its protocol pipe. */
export class Browser {
  private readonly child: ChildProcess;
  private readonly profile: string;
  private readonly out: Writable;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (m: Message) => void; reject: (e: Error) => void }>();
  private readonly listeners = new Set<(m: Message) => void>();
  private buffered = Buffer.alloc(0);
  private exited: Error | undefined;
  private stderr = "";

  private constructor(binary: string) {
    this.profile = mkdtempSync(join(tmpdir(), "cairn-chromium-"));
    const args = [
      "--headless=new",
      "--remote-debugging-pipe",
      `--user-data-dir=${this.profile}`,
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-gpu",
      "--disable-extensions",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
      "--hide-scrollbars",
      "--mute-audio",
      "--font-render-hinting=none",
      ...(process.getuid?.() === 0 ? ["--no-sandbox"] : []),
      "about:blank",
    ];
    this.child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"], detached: true });
    this.out = this.child.stdio[3] as Writable;
    const input = this.child.stdio[4] as Readable;
    this.child.stderr?.on("data", (d: Buffer) => {
      if (this.stderr.length < 16_384) this.stderr += d.toString("utf8");
    });
    input.on("data", (d: Buffer) => this.onData(d));
    this.out.on("error", () => {}); // a write after the browser died: reported through `exited`
    this.child.on("exit", (code, signal) => {
      this.exited = new Error(`chromium exited (${code ?? signal}): ${this.stderr.slice(-2000)}`);
      for (const p of this.pending.values()) p.reject(this.exited);
      this.pending.clear();
    });
    this.child.on("error", (e) => {
      this.exited = e;
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
    });
  }

  static async launch(): Promise<Browser> {
    const binary = chromiumPath();
    if (binary === undefined) throw new Error(`prerequisite missing: ${chromiumMissing()}`);
    const b = new Browser(binary);
    try {
      await b.send("Browser.getVersion");
    } catch (e) {
      await b.close();
      throw e;
    }
    return b;
  }

  private onData(d: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, d]);
    for (let nul = this.buffered.indexOf(0); nul >= 0; nul = this.buffered.indexOf(0)) {
      const m = JSON.parse(this.buffered.subarray(0, nul).toString("utf8")) as Message;
      this.buffered = this.buffered.subarray(nul + 1);
      if (m.id !== undefined) {
        const p = this.pending.get(m.id);
        this.pending.delete(m.id);
        if (m.error !== undefined) p?.reject(new Error(`CDP: ${m.error.message}`));
        else p?.resolve(m);
      } else {
        for (const l of this.listeners) l(m);
      }
    }
  }

  /** Sends one protocol command (to a page's session when `sessionId` is given) and waits for its answer. */
  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    if (this.exited !== undefined) return Promise.reject(this.exited);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: (m) => resolve(m.result ?? {}), reject });
      this.out.write(`${JSON.stringify({ id, method, params, ...(sessionId !== undefined ? { sessionId } : {}) })}\0`);
    });
  }

  /** Waits for the first event `method` of `sessionId` that `match` accepts. */
  private waitFor(method: string, sessionId: string, match: (p: Record<string, unknown>) => boolean = () => true): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const l = (m: Message) => {
        if (m.method === method && m.sessionId === sessionId && match(m.params ?? {})) {
          this.listeners.delete(l);
          resolve(m.params ?? {});
        }
      };
      this.listeners.add(l);
      if (this.exited !== undefined) reject(this.exited);
      this.child.once("exit", () => reject(this.exited));
    });
  }

  /** Opens `file` (a path) in a new tab, waits for its load event, and returns what it saw. */
  async openPage(file: string): Promise<OpenedPage> {
    const url = pathToFileURL(file).href;
    const { targetId } = (await this.send("Target.createTarget", { url: "about:blank" })) as { targetId: string };
    const { sessionId } = (await this.send("Target.attachToTarget", { targetId, flatten: true })) as { sessionId: string };
    const problems: PageProblem[] = [];
    const requests: string[] = [];
    const blocked: string[] = [];
    const urls = new Map<string, string>();
    this.listeners.add((m) => {
      if (m.sessionId !== sessionId || m.params === undefined) return;
      const p = m.params as CdpEventParams;
      if (m.method === "Network.requestWillBeSent") {
        requests.push(String(p.request?.url));
        urls.set(String(p.requestId), String(p.request?.url));
      } else if (m.method === "Network.loadingFailed" && p.blockedReason !== undefined) blocked.push(`${p.blockedReason} ${urls.get(String(p.requestId))}`);
      else if (m.method === "Runtime.exceptionThrown")
        problems.push({ kind: "exception", level: "error", text: String(p.exceptionDetails?.exception?.description ?? p.exceptionDetails?.text) });
      else if (m.method === "Runtime.consoleAPICalled" && (p.type === "error" || p.type === "warning" || p.type === "assert"))
        problems.push({ kind: "console", level: String(p.type), text: (p.args ?? []).map((a) => String(a.value ?? a.description)).join(" ") });
      else if (m.method === "Log.entryAdded" && (p.entry?.level === "error" || p.entry?.level === "warning"))
        problems.push({ kind: "log", level: String(p.entry.level), text: `${p.entry.source}: ${p.entry.text}${p.entry.url ? ` (${p.entry.url})` : ""}` });
    });
    await Promise.all(["Runtime.enable", "Log.enable", "Network.enable", "Page.enable"].map((m) => this.send(m, {}, sessionId)));
    const loaded = this.waitFor("Page.loadEventFired", sessionId);
    const nav = (await this.send("Page.navigate", { url }, sessionId)) as { errorText?: string };
    if (nav.errorText !== undefined) throw new Error(`chromium could not open ${url}: ${nav.errorText}`);
    await loaded;
    const evaluate = async <T>(expression: string): Promise<T> => {
      const r = (await this.send("Runtime.evaluate", { expression, returnByValue: true }, sessionId)) as {
        result: { value?: unknown };
        exceptionDetails?: { text: string; exception?: { description?: string } };
      };
      if (r.exceptionDetails !== undefined) throw new Error(`evaluate ${expression}: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
      return r.result.value as T;
    };
    const screenshot = async (width = 1200): Promise<Buffer> => {
      await this.send("Emulation.setDeviceMetricsOverride", { width, height: 800, deviceScaleFactor: 1, mobile: false }, sessionId);
      const height = Math.min(Math.ceil(await evaluate<number>("document.documentElement.scrollHeight")), 8000);
      await this.send("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile: false }, sessionId);
      const { data } = (await this.send("Page.captureScreenshot", { format: "png", captureBeyondViewport: false }, sessionId)) as { data: string };
      return Buffer.from(data, "base64");
    };
    return { problems, requests, blocked, evaluate, screenshot };
  }

  /** Asks the browser to exit, kills its process group (renderers and helpers included) and removes the profile. */
  async close(): Promise<void> {
    if (this.exited === undefined) {
      const gone = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
      this.send("Browser.close").catch(() => {});
      // no wall-clock wait: the group is killed right away if the browser has not gone by the time the close is answered
      await Promise.race([gone, new Promise<void>((resolve) => setImmediate(resolve))]);
    }
    if (this.child.pid !== undefined) killGroupAndWait(this.child.pid);
    rmSync(this.profile, { recursive: true, force: true });
  }
}

/** Launches a browser, opens `file`, runs `use` on the page, and always closes the browser. */
export async function withPage<T>(file: string, use: (page: OpenedPage) => Promise<T>): Promise<T> {
  const b = await Browser.launch();
  try {
    return await use(await b.openPage(file));
  } finally {
    await b.close();
  }
}
