/**
 * The registry transport's default fetch: node:http and node:https behind a
 * fetch-shaped function, so that cairn owns the connect bound
 * (`remote.connect-ms`: TCP connect plus, for https, the TLS handshake).
 * Node's own fetch (undici) takes a connect timeout only from undici's
 * Agent, which Node does not expose; a TLS server that accepts and never
 * completes the handshake was bounded only by undici's default.
 *
 * It does only what the transport asks of fetch: a method, headers, a body
 * (bytes or a stream), no redirect following (the transport follows by
 * hand), and a Response whose body streams. It asks for no compression
 * (`accept-encoding` is not sent), so the bytes counted and hashed are the
 * bytes served. Connections are kept alive per client (an idle kept-alive
 * socket does not hold the process open).
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { Readable, finished } from "node:stream";

const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** How many body bytes may wait, read from the socket, for the reader before the socket is paused. */
const BODY_BUFFER_BYTES = 1024 * 1024;

/**
 * A response body as a web stream, handing on the chunks node:http parsed
 * without copying them. `Readable.toWeb` copies every chunk (to detach it
 * from a pool that the socket's reads do not use) and pauses the socket
 * whenever more than 16 KiB wait; a pulled blob paid for both at each of
 * its ~50 KiB reads (issue 34). The socket is paused once `BODY_BUFFER_BYTES`
 * wait, and resumed when the reader asks for more; a cancelled body destroys
 * the response (and its connection); a body cut short errors the stream.
 */
function bodyStream(res: IncomingMessage): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        res.on("data", (chunk: Buffer) => {
          try {
            controller.enqueue(chunk);
          } catch (e) {
            // the stream was cancelled or errored meanwhile: nothing reads on, end the response rather than throw from an event
            res.destroy(e instanceof Error ? e : undefined);
            return;
          }
          if ((controller.desiredSize ?? 0) <= 0) res.pause();
        });
        finished(res, (error) => {
          try {
            if (error) controller.error(error);
            else controller.close();
          } catch {
            // already cancelled: nothing waits on this stream
          }
        });
      },
      pull() {
        res.resume();
      },
      cancel(reason) {
        res.destroy(reason instanceof Error ? reason : undefined);
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: BODY_BUFFER_BYTES }),
  );
}

/**
 * A fetch over node:http(s) whose new connections must be made within `connectMs`; `timeout` makes the error.
 * `ca`, when given, is the full trust of its https connections (registry-ca.ts: Node's roots plus a CA file).
 */
export function httpFetch(connectMs: number, timeout: (url: URL) => Error, ca?: readonly string[]): typeof fetch {
  const agents = {
    "http:": new HttpAgent({ keepAlive: true }),
    "https:": new HttpsAgent(ca === undefined ? { keepAlive: true } : { keepAlive: true, ca: [...ca] }),
  };
  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.protocol !== "http:" && url.protocol !== "https:") return reject(new TypeError(`cannot fetch a ${url.protocol} URL`));
      const headers: Record<string, string> = {};
      new Headers(init?.headers).forEach((v, k) => {
        headers[k] = v;
      });
      const method = init?.method ?? "GET";
      let req: ClientRequest;
      try {
        req = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, { method, headers, agent: agents[url.protocol] });
      } catch (e) {
        return reject(e);
      }
      const signal = init?.signal ?? undefined;
      const onAbort = (): void => void req.destroy(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
      if (signal?.aborted === true) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      req.once("socket", (socket: Socket) => {
        if (!socket.connecting) return; // a kept-alive connection, made already
        const timer = setTimeout(() => req.destroy(timeout(url)), connectMs);
        socket.once(url.protocol === "https:" ? "secureConnect" : "connect", () => clearTimeout(timer));
        socket.once("close", () => clearTimeout(timer));
      });
      req.once("error", reject);
      req.once("response", (res: IncomingMessage) => {
        try {
          const status = res.statusCode ?? 0;
          const h = new Headers();
          for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) h.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
          if (status < 200 || status > 599) throw new TypeError(`status ${status}`);
          const empty = method === "HEAD" || NULL_BODY.has(status);
          if (empty) res.resume();
          res.once("close", () => signal?.removeEventListener("abort", onAbort));
          resolve(new Response(empty ? null : bodyStream(res), { status, headers: h }));
        } catch (e) {
          res.destroy();
          reject(e);
        }
      });
      const body = init?.body;
      if (body instanceof ReadableStream) {
        Readable.fromWeb(body as import("node:stream/web").ReadableStream<Uint8Array>)
          .on("error", (e) => req.destroy(e))
          .pipe(req);
      } else if (body instanceof Uint8Array) {
        req.end(body);
      } else if (body === undefined || body === null) {
        req.end();
      } else {
        req.destroy(new TypeError("unsupported request body"));
      }
    });
}
