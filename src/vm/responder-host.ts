/**
 * The host side of `run.network`'s responders: reading the declared
 * directory once before launch, starting the responder process for a
 * record, watching it, and ending it.
 *
 *  - The directory is read by tree's one directory reader (never following a
 *    symlink; each file by the bounded reader), with bounds named
 *    `network.http-root-*`; any symlink is refused, so the served bytes are
 *    exactly the directory's own. Its `cairn.fs/1` digest goes into the VM
 *    identity, and the responder serves copies of these bytes, checked by
 *    digest again in the responder: a file changed after the read is never
 *    served.
 *  - The responder runs as `setpriv --pdeathsig SIGKILL -- node
 *    responder-main …` in its own process group: killed with its group when
 *    the run ends, and by the kernel if cairn dies. QEMU's guestfwd runs
 *    `socat … FD:0,shut-down UNIX-CONNECT:<socket>` per guest connection
 *    (slirp starts it detached, in a new session; it ends with its
 *    connection, whose QEMU end closes when QEMU ends).
 *  - While QEMU records, the responder exiting, or not answering its control
 *    socket within RESPONDER_ANSWER_MS, aborts the run (QEMU's group killed)
 *    as an infrastructure failure naming it: a crashed or hung responder
 *    never leaves the run waiting.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { lstatSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { CairnError, codeModule, sha256, writeFileAtomic, type Sha256Digest } from "../core/index.ts";
import { entriesTree, fsIdentity, readDirectory, resolveBeneath, withBeneath, type HostScope } from "../tree/index.ts";
import { hasTool } from "./host.ts";
import { onInterrupt } from "./interrupt.ts";
import { killGroup, killGroupAndWait, processAlive } from "./processes.ts";
import { HTTP_ROOT_LIMITS, RESPONDER_LIMITS, type NetworkPaths, type VmNetwork } from "./netid.ts";
import type { ResponderConfig } from "./responder.ts";

/** The served directory as read before launch: its digest and, at record, its files. */
export interface HttpRoot {
  readonly digest: Sha256Digest;
  /** "/a/b.txt" → bytes; absent at replay (the recorded digest stands for it). */
  readonly files?: ReadonlyMap<string, Buffer>;
}

/**
 * Reads the served directory `run.network.http.root`: like `run.inputs`, a
 * host path a spec names, so it stays inside the spec's directory (or
 * `--inputs-root`) and is reached without following a symlink out
 * (tree/host-beneath.ts; PATH_UNSAFE naming `/run/network/http/root`). What
 * the guest fetches from it is in the replay log, which a bundle carries.
 */
export function readHttpRoot(unsafeRoot: string, scope: HostScope): HttpRoot {
  const field = "/run/network/http/root";
  const where = resolveBeneath(scope, unsafeRoot, field);
  if (where === undefined) {
    const host = isAbsolute(unsafeRoot) ? unsafeRoot : resolve(scope.base, unsafeRoot);
    throw new CairnError("IO_ERROR", `${field}: ${host} does not exist`, { path: host });
  }
  const root = where.shown;
  const entries = withBeneath(where, (at) =>
    readDirectory(
      at,
      "",
      {
        ...HTTP_ROOT_LIMITS,
        names: { entries: "network.http-root-entries", fileBytes: "network.http-root-file-bytes", totalBytes: "network.http-root-bytes" },
      },
      { symlinks: "inside", shownAs: root },
    ),
  );
  const files = new Map<string, Buffer>();
  for (const e of entries) {
    if (e.type === "symlink")
      throw new CairnError("PATH_UNSAFE", `${join(root, e.path)} is a symlink; the responder serves only the directory's own files`, {
        path: "/run/network/http/root",
        hint: "replace the link by the file it points to",
      });
    if (e.type === "file") files.set(`/${e.path}`, Buffer.from(e.data));
  }
  return { digest: fsIdentity(entriesTree(entries)), files };
}

const READY_MS = 60_000;
/** The responder must answer its control socket within this (host ms) while the run records. */
export const RESPONDER_ANSWER_MS = 10_000;
const CHECK_EVERY_MS = 1000;
const SOCAT_FIX = "apt-get install -y socat (the connector QEMU's guestfwd runs per guest connection)";

export interface RunningResponder {
  readonly paths: NetworkPaths;
  /** By port: the Unix socket the responder listens on (behind the gate). */
  readonly sockets: ReadonlyMap<number, string>;
  /** By port: guest connections the gate refused so far (`responder.connections` slots all held). */
  refused(): ReadonlyMap<number, number>;
  /** Fires when the responder exits or stops answering; `reason` says which. */
  readonly failed: AbortSignal;
  reason(): string | undefined;
  stop(): void;
}

/**
 * The command QEMU's guestfwd runs per guest connection. slirp gives it the
 * connection (a loopback TCP socket) as stdin, stdout and stderr alike, so:
 * socat's own messages go to a log beside the socket (`-lf`), never into the
 * guest's stream; the connection is addressed as one socket (`FD:0,shut-down`),
 * so the responder's end of stream reaches the guest as a FIN at once (with
 * `-`, socat's stdio, it came only when socat gave up after `-t`, and a guest
 * that half-closed first could lose the answer); `-t 30` bounds how long it
 * waits for the other direction after one has ended.
 *
 * No `setpriv --pdeathsig` here: glib starts it through an intermediate
 * child that exits at once, so a parent-death signal killed socat at random
 * before it read the request (about one connection in five on a loaded
 * host: the guest got an empty answer). socat ends when its connection
 * does, and QEMU's end of it closes when QEMU ends.
 */
function socatArgv(socket: string): string[] {
  return ["socat", "-t", "30", "-lf", `${socket}.log`, "FD:0,shut-down", `UNIX-CONNECT:${socket}`];
}

/**
 * The gate QEMU's guestfwd runs per guest connection (issue 31: one guest
 * started 400 `socat`s at once). `responder.connections` slots, each a lock
 * file: the gate takes the first free slot's lock on descriptor 9 and
 * `exec`s socat, which keeps that descriptor, so the lock is held exactly as
 * long as that socat lives and no other process stays behind. A connection
 * that finds every slot held is refused: the gate appends a line to
 * `<port>.refused` and exits, so the guest sees the connection closed before
 * any byte, and the host count is read after the record. At most
 * `responder.connections` socat processes per responder exist at once; the
 * gate itself (sh, flock) ends within its loop. Its own messages go to a log
 * (stderr is the guest's connection). The words are fixed, so guestfwd can
 * carry the command (`sh <dir>/<port>.gate`).
 */
function gateScript(dir: string, port: number, slots: number): string {
  const base = join(dir, String(port));
  return [
    `# cairn: at most ${slots} socat at once for the responder on port ${port} (responder.connections)`,
    `exec 2>>${base}.gate.log`,
    "i=0",
    `while [ "$i" -lt ${slots} ]; do`,
    `  exec 9>>${base}.slot.$i`,
    `  if flock -n 9; then exec ${socatArgv(`${base}.sock`).join(" ")}; fi`,
    "  exec 9>&-",
    "  i=$((i + 1))",
    "done",
    `echo refused >>${base}.refused`, // REFUSED_LINE
    "",
  ].join("\n");
}

function connector(dir: string, port: number): string[] {
  return ["sh", join(dir, `${port}.gate`)];
}

/**
 * How many guest connections the gate of each responder port refused: the
 * gate appends "refused\n" (8 bytes) per refusal to `<port>.refused` in this
 * private directory, so the count is the file's size over 8, however many
 * there were (reading the lines with a byte bound would have reported none
 * past it).
 */
function refusedCounts(dir: string, ports: readonly number[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const port of ports) {
    let size = 0;
    try {
      size = lstatSync(join(dir, `${port}.refused`)).size;
    } catch {
      // none refused: the gate writes the file only for a refusal
    }
    counts.set(port, Math.floor(size / REFUSED_LINE.length));
  }
  return counts;
}

/** What the gate appends per refused connection. */
const REFUSED_LINE = "refused\n";

/** The host ends for a replay: the same command shape, pointing at a gate nobody wrote (a replay delivers recorded packets). */
export function absentResponder(n: VmNetwork): { paths: NetworkPaths; stop(): void } {
  const dir = mkdtempSync(join(tmpdir(), "cairn-net-"));
  rmSync(dir, { recursive: true, force: true });
  return { paths: { connect: new Map(n.responders.map((r) => [r.port, connector(dir, r.port)])) }, stop() {} };
}

/** The responder's entry script (vm/responder-main under the code root: .ts under tsx, .js in dist/, also for the CLI bundle), and the loader flags this process runs with. */
function responderCommand(config: string): string[] {
  const script = codeModule("vm/responder-main");
  const loader: string[] = [];
  process.execArgv.forEach((a, i) => {
    if ((a === "--import" || a === "--loader") && process.execArgv[i + 1] !== undefined) loader.push(a, process.execArgv[i + 1]!);
    else if (a.startsWith("--import=")) loader.push(a);
  });
  return [process.execPath, ...loader, script, config];
}

export async function startResponder(n: VmNetwork, http: HttpRoot | undefined): Promise<RunningResponder> {
  if (!hasTool("socat")) throw new CairnError("PREREQUISITE_MISSING", "socat is not installed", { path: "socat", hint: SOCAT_FIX });
  if (!hasTool("flock"))
    throw new CairnError("PREREQUISITE_MISSING", "flock is not installed", { path: "flock", hint: "apt-get install -y util-linux (the connector's gate)" });
  for (const r of n.responders)
    if (r.kind === "http" && (http?.files === undefined || http.digest !== r.root))
      throw new CairnError("INTERNAL", "the http responder's directory was not read for this record", { path: "/vm/network/responders" });
  const dir = mkdtempSync(join(tmpdir(), "cairn-net-")); // 0700; short, so socket paths stay below 108 bytes
  const connect_ = new Map<number, string[]>();
  const sockets = new Map<number, string>();
  const config: { -readonly [K in keyof ResponderConfig]: ResponderConfig[K] } = {
    control: join(dir, "control.sock"),
    headBytes: RESPONDER_LIMITS["responder.request-head-bytes"],
    echoBytes: RESPONDER_LIMITS["responder.echo-bytes"],
  };
  for (const r of n.responders) {
    const socket = join(dir, `${r.port}.sock`);
    const slots = n.responder_limits.connections ?? RESPONDER_LIMITS["responder.connections"];
    writeFileAtomic(join(dir, `${r.port}.gate`), gateScript(dir, r.port, slots), { mode: 0o600 });
    connect_.set(r.port, connector(dir, r.port));
    sockets.set(r.port, socket);
    if (r.kind === "echo") config.echo = { socket };
    else {
      const files: Record<string, { sha256: Sha256Digest; size: number }> = {};
      for (const [path, bytes] of http!.files!) {
        const digest = writeObject(dir, bytes);
        files[path] = { sha256: digest, size: bytes.length };
      }
      config.http = { socket, objects: join(dir, "objects"), files };
    }
  }
  const configPath = join(dir, "config.json");
  writeFileAtomic(configPath, JSON.stringify(config), { mode: 0o600 });
  const [cmd, ...args] = responderCommand(configPath);
  const child = spawn("setpriv", ["--pdeathsig", "SIGKILL", "--", cmd!, ...args], {
    detached: true, // its own process group
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" },
  });
  const controller = new AbortController();
  let why: string | undefined;
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => void (stderr = (stderr + d.toString("utf8")).slice(-2000)));
  const fail = (reason: string): void => {
    if (why !== undefined) return;
    why = reason;
    controller.abort();
  };
  const endGroup = (): void => void (child.pid !== undefined && killGroup(child.pid));
  let stopped = false;
  child.on("exit", (code, signal) => {
    if (!stopped) fail(`the responder exited (${signal ?? `status ${code}`})${stderr ? `: ${stderr.trim().slice(0, 300)}` : ""}`);
  });
  try {
    await waitReady(child, () => why);
  } catch (e) {
    stopped = true;
    endGroup();
    removeDir(dir);
    throw e;
  }
  // interrupted: QEMU's group (the gates writing here) ends first (interrupt.ts), then the responder and its private directory
  const forgetInterrupt = onInterrupt(() => {
    stopped = true;
    if (child.pid !== undefined) killGroupAndWait(child.pid);
    removeDir(dir);
  });
  const timer = setInterval(() => {
    if (stopped || why !== undefined) return;
    probe(config.control, RESPONDER_ANSWER_MS).then((answer) => {
      if (answer === "ok" || stopped) return;
      // ended but its exit not yet seen (a loaded host): the exit handler names how it ended, never "hung"
      if (child.pid !== undefined && !processAlive(child.pid)) return;
      fail(
        answer === "timeout"
          ? `the responder did not answer within ${RESPONDER_ANSWER_MS} ms (hung)`
          : `the responder's control socket refused the connection (${answer.error})`,
      );
    });
  }, CHECK_EVERY_MS);
  let finalRefused: Map<number, number> | undefined;
  const ports = n.responders.map((r) => r.port);
  return {
    paths: { connect: connect_ },
    sockets,
    refused: () => finalRefused ?? refusedCounts(dir, ports),
    failed: controller.signal,
    reason: () => why,
    stop() {
      finalRefused ??= refusedCounts(dir, ports);
      stopped = true;
      clearInterval(timer);
      forgetInterrupt();
      endGroup();
      removeDir(dir);
    },
  };
}

/**
 * Removes the responder's private directory. A `socat` or gate of a guest
 * connection may still be ending (it writes its log there until it does), so
 * the removal retries and a leftover is not an error of the run: the
 * directory is private (0700) and holds no input.
 */
function removeDir(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  } catch {
    // left behind in the temporary directory
  }
}

/** The responder's copy of one served file, by digest, in its private directory. */
function writeObject(dir: string, bytes: Buffer): Sha256Digest {
  const digest = sha256(bytes);
  mkdirSync(join(dir, "objects"), { recursive: true, mode: 0o700 });
  writeFileAtomic(join(dir, "objects", digest.slice("sha256:".length)), bytes, { mode: 0o600 });
  return digest;
}

function waitReady(child: ChildProcess, failed: () => string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(infra(`the responder did not start within ${READY_MS} ms`)), READY_MS);
    const done = (): void => clearTimeout(timer);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString("utf8");
      if (out.includes("ready\n")) {
        done();
        resolve();
      }
    });
    child.on("exit", () => {
      done();
      reject(infra(failed() ?? "the responder exited before it was ready"));
    });
    child.on("error", (e) => {
      done();
      reject(infra(`cannot start the responder (${(e as { code?: string }).code ?? e.message})`));
    });
  });
}

export function infra(message: string): CairnError {
  return new CairnError("RUN_INFRASTRUCTURE", message, {
    path: "/vm/network/responders",
    hint: "the run's host responder (cairn's own, not the workload) failed; record again",
  });
}

/** Whether the control socket answers "ok" within `ms`. */
function probe(socket: string, ms: number): Promise<"ok" | "timeout" | { error: string }> {
  return new Promise((resolve) => {
    const s = connect(socket);
    let got = "";
    const timer = setTimeout(() => {
      s.destroy();
      resolve("timeout");
    }, ms);
    s.on("data", (d: Buffer) => void (got += d.toString("utf8")));
    s.on("end", () => {
      clearTimeout(timer);
      resolve(got === "ok\n" ? "ok" : { error: `answered ${JSON.stringify(got.slice(0, 40))}` });
    });
    s.on("error", (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ error: e.code ?? e.message });
    });
  });
}
