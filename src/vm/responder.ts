/**
 * The built-in host responder (`cairn.responder/1`, issue 14): what the
 * guest reaches through its NIC while a network run records. It runs in its
 * own process (responder-main.ts, started and watched by responder-host.ts)
 * and listens only on Unix sockets in a private directory; QEMU's guestfwd
 * connects each guest connection to one of them.
 *
 *  - http: GET and HEAD of the files cairn read from the declared directory
 *    before launch (checked here again by digest). It never opens a path a
 *    request names: the request path is decoded, refused with 400 when any
 *    segment is `.` or `..` or holds a NUL or backslash, and looked up in
 *    that fixed map. `/` serves `/index.html`. Answers are HTTP/1.0 with
 *    Content-Length and no Date or Server header, so the same request gets
 *    the same bytes. The request head is bounded.
 *  - echo: every byte back, up to a bound per connection, then closes.
 *  - control: answers "ok\n" to each connection (the host's liveness check).
 *
 * The attack it stops: a guest (or a workload in it) reading host files
 * outside the declared directory, or holding the host with an unbounded
 * request.
 */
import { unlinkSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { readFileBounded, sha256, type Sha256Digest } from "../core/index.ts";

export interface ResponderConfig {
  readonly control: string;
  readonly http?: { readonly socket: string; readonly objects: string; readonly files: Readonly<Record<string, { sha256: Sha256Digest; size: number }>> };
  readonly echo?: { readonly socket: string };
  readonly headBytes: number;
  readonly echoBytes: number;
}

const REASONS: Readonly<Record<number, string>> = {
  200: "OK",
  400: "Bad Request",
  404: "Not Found",
  405: "Method Not Allowed",
  431: "Request Header Fields Too Large",
};

function answer(status: number, body: Buffer, head: boolean): Buffer {
  const lines = [`HTTP/1.0 ${status} ${REASONS[status]}`, `Content-Length: ${body.length}`, "Connection: close", "", ""];
  return Buffer.concat([Buffer.from(lines.join("\r\n"), "latin1"), head ? Buffer.alloc(0) : body]);
}

/** The file a request path names in `files`, or the status that refuses it. */
export function lookup(unsafeTarget: string, files: ReadonlyMap<string, Buffer>): Buffer | 400 | 404 {
  const pathPart = unsafeTarget.split("?")[0]!;
  if (!pathPart.startsWith("/")) return 400;
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathPart);
  } catch {
    return 400;
  }
  const segments = decoded.slice(1).split("/");
  // `..` (also percent-encoded) is refused, never resolved: only the map's own names exist
  if (segments.some((s) => s === "." || s === ".." || s.includes("\0") || s.includes("\\"))) return 400;
  const path = decoded === "/" ? "/index.html" : decoded;
  return files.get(path) ?? 404;
}

function serveHttp(sock: Socket, files: ReadonlyMap<string, Buffer>, headBytes: number): void {
  let head = Buffer.alloc(0);
  let done = false;
  const reply = (b: Buffer): void => {
    done = true;
    sock.end(b);
  };
  sock.on("data", (chunk: Buffer) => {
    if (done) return;
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf("\r\n\r\n");
    if (end < 0) {
      if (head.length > headBytes) reply(answer(431, Buffer.alloc(0), false));
      return;
    }
    if (end > headBytes) return reply(answer(431, Buffer.alloc(0), false));
    const m = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(head.subarray(0, head.indexOf("\r\n")).toString("latin1"));
    if (m === null) return reply(answer(400, Buffer.alloc(0), false));
    const isHead = m[1] === "HEAD";
    if (m[1] !== "GET" && !isHead) return reply(answer(405, Buffer.alloc(0), false));
    const found = lookup(m[2]!, files);
    reply(typeof found === "number" ? answer(found, Buffer.alloc(0), isHead) : answer(200, found, isHead));
  });
  sock.on("error", () => sock.destroy());
}

function serveEcho(sock: Socket, echoBytes: number): void {
  let seen = 0;
  sock.on("data", (chunk: Buffer) => {
    const room = echoBytes - seen;
    seen += chunk.length;
    if (room > 0) sock.write(chunk.subarray(0, room));
    if (seen >= echoBytes) sock.end();
  });
  sock.on("end", () => sock.end());
  sock.on("error", () => sock.destroy());
}

/** Reads every served file and checks its digest: the child serves only the bytes the identity names. */
export function loadFiles(http: NonNullable<ResponderConfig["http"]>): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const [path, f] of Object.entries(http.files)) {
    const bytes = readFileBounded(join(http.objects, f.sha256.slice("sha256:".length)), f.size, "responder.file-bytes");
    if (bytes.length !== f.size || sha256(bytes) !== f.sha256) throw new Error(`the responder's copy of ${path} is not the file cairn read`);
    files.set(path, bytes);
  }
  return files;
}

function listen(path: string, handler: (s: Socket) => void, allowHalfOpen: boolean): Promise<Server> {
  return new Promise((resolve, reject) => {
    try {
      unlinkSync(path);
    } catch {
      // not there
    }
    const server = createServer({ allowHalfOpen }, handler);
    server.once("error", reject);
    server.listen(path, () => resolve(server));
  });
}

/** Starts every socket the configuration names; resolves once all listen. */
export async function startResponder(config: ResponderConfig): Promise<Server[]> {
  const servers = [await listen(config.control, (s) => s.end("ok\n"), false)];
  if (config.http !== undefined) {
    const files = loadFiles(config.http);
    servers.push(await listen(config.http.socket, (s) => serveHttp(s, files, config.headBytes), false));
  }
  if (config.echo !== undefined) servers.push(await listen(config.echo.socket, (s) => serveEcho(s, config.echoBytes), true));
  return servers;
}
