/**
 * cairn's own time bounds on one remote conversation (issue 31, case 3),
 * over any fetch:
 *
 * - `remote.headers-ms`: from sending a request to its response headers (a
 *   server that accepts the connection and never answers);
 * - `remote.idle-ms`: waiting for the next byte of a body (a stalled body, or
 *   a `Content-Length` longer than what is sent);
 * - `remote.min-rate` over `remote.rate-window-ms`: a body must bring at
 *   least `min-rate × window` bytes in each window of waiting. Undici's idle
 *   timeout restarts at every byte, so a server sending one byte every 20 s
 *   was never cut off; the rate bound ends it after one window.
 *
 * The connect bound (`remote.connect-ms`) needs the socket, so it lives in
 * the default fetch (http-fetch.ts). Time spent by the caller between reads
 * (writing a chunk to disk) is not counted: only time waiting on the server.
 * Each refusal is REMOTE_TIMEOUT naming the limit, its value and the URL.
 */
import { CairnError, REMOTE_LIMITS, remoteLimitHint, remoteLimits, type RemoteLimits } from "../../core/index.ts";
import { httpFetch } from "./http-fetch.ts";

/** The refusal for a time bound: REMOTE_TIMEOUT naming the limit and where. */
export function remoteTimeout(k: keyof RemoteLimits, limits: RemoteLimits, where: string, what: string): CairnError {
  const l = REMOTE_LIMITS[k];
  return new CairnError("REMOTE_TIMEOUT", `limit ${l.name} (${limits[k]} ${l.unit}) exceeded: ${what} (${where})`, {
    path: where,
    hint: remoteLimitHint(k),
  });
}

/** Statuses whose response has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * Sends one request through `fetchImpl` under the headers bound, and returns
 * the response with its body under the idle and rate bounds. `where` names
 * the request in errors (method and URL, never a header).
 */
export async function boundedFetch(fetchImpl: typeof fetch, url: URL, init: RequestInit, limits: RemoteLimits, where: string): Promise<Response> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  // the headers bound runs from the end of the request: an upload is bounded by the idle bound
  // while the server reads it (an honest slow upload of a large chunk is not a silent server)
  const sent = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => ac.abort(remoteTimeout("headersMs", limits, where, "no response headers")), limits.headersMs);
  };
  const stalled = (): void => ac.abort(remoteTimeout("idleMs", limits, where, "the server read no byte of the request body"));
  let upload: ReturnType<typeof guardUpload> | undefined;
  if (init.body instanceof Uint8Array || init.body instanceof ReadableStream) {
    upload = guardUpload(init.body, limits.idleMs, limits.connectMs + limits.idleMs, sent, stalled);
    init = { ...init, body: upload.stream, duplex: "half" } as RequestInit;
  } else sent();
  let res: Response;
  try {
    res = await fetchImpl(url, { ...init, signal: ac.signal });
  } catch (e) {
    // a fetch that keeps its own error for an abort: the bound is what ended it
    if (ac.signal.aborted && !(e instanceof CairnError)) throw ac.signal.reason;
    throw e;
  } finally {
    clearTimeout(timer);
    upload?.stop(); // answered: a body the server did not read to the end is no longer waited on
  }
  if (res.body === null || NULL_BODY.has(res.status)) return res;
  return new Response(
    guardBody(res.body, limits, where, () => ac.abort()),
    { status: res.status, statusText: res.statusText, headers: res.headers },
  );
}

/**
 * A request body as a stream the server pulls in slices: `stalled` when no
 * slice is pulled for `idleMs` (the server stopped reading; before the first
 * slice, `firstMs`, which leaves time to connect), `sent` once the last slice
 * was taken (the headers bound starts then).
 */
function guardUpload(
  body: Uint8Array | ReadableStream<Uint8Array>,
  idleMs: number,
  firstMs: number,
  sent: () => void,
  stalled: () => void,
): { stream: ReadableStream<Uint8Array>; stop: () => void } {
  const SLICE = 64 * 1024;
  const reader = body instanceof ReadableStream ? body.getReader() : undefined;
  let off = 0;
  let idle: NodeJS.Timeout | undefined;
  let stopped = false;
  const arm = (ms = idleMs): void => {
    clearTimeout(idle);
    if (!stopped) idle = setTimeout(stalled, ms);
  };
  const stop = (): void => {
    stopped = true;
    clearTimeout(idle);
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start: () => arm(firstMs),
      async pull(controller) {
        arm();
        if (reader === undefined) {
          const bytes = body as Uint8Array;
          if (off < bytes.length) controller.enqueue(bytes.subarray(off, (off += SLICE)));
          if (off < bytes.length) return;
        } else {
          const next = await reader.read();
          if (!next.done) return controller.enqueue(next.value);
        }
        clearTimeout(idle);
        controller.close();
        if (!stopped) sent();
      },
      async cancel(reason) {
        stop();
        await reader?.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  ); // a slice is taken only when the connection asks for one
  return { stream, stop };
}

/** `body` under the idle and rate bounds: a violation cancels the transfer and errors the stream with REMOTE_TIMEOUT. */
export function guardBody(body: ReadableStream<Uint8Array>, limits: RemoteLimits, where: string, abort: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const need = (limits.minRate * limits.rateWindowMs) / 1000;
  let waited = 0; // ms spent waiting on the server in the current window
  let got = 0; // bytes received in the current window
  const fail = async (e: CairnError): Promise<never> => {
    abort();
    await reader.cancel(e).catch(() => undefined);
    throw e;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const pending = reader.read();
      const started = performance.now();
      let windowStart = started;
      for (;;) {
        const idleLeft = limits.idleMs - (performance.now() - started);
        const windowLeft = limits.rateWindowMs - waited - (performance.now() - windowStart);
        let timer: NodeJS.Timeout | undefined;
        const tick = new Promise<"tick">((r) => {
          timer = setTimeout(() => r("tick"), Math.max(0, Math.min(idleLeft, windowLeft)));
        });
        let next = await Promise.race([pending, tick]).finally(() => clearTimeout(timer));
        // a tick may run before bytes that arrived meanwhile are read (this process was busy):
        // one more turn of the event loop's I/O before a bound is judged broken
        if (next === "tick") next = await Promise.race([pending, new Promise<"tick">((r) => setImmediate(() => r("tick")))]);
        const now = performance.now();
        waited += now - windowStart;
        windowStart = now;
        if (next !== "tick") {
          if (next.done) return controller.close();
          got += next.value.length;
          controller.enqueue(next.value);
        } else if (now - started >= limits.idleMs) {
          await fail(remoteTimeout("idleMs", limits, where, "no byte arrived"));
        }
        if (waited >= limits.rateWindowMs) {
          if (got < need)
            await fail(
              remoteTimeout(
                "minRate",
                limits,
                where,
                `${got} bytes in ${Math.round(waited)} ms of waiting, under ${REMOTE_LIMITS.minRate.name} over ${REMOTE_LIMITS.rateWindowMs.name}`,
              ),
            );
          waited = 0;
          got = 0;
        }
        if (next !== "tick") return;
      }
    },
    async cancel(reason) {
      abort();
      await reader.cancel(reason).catch(() => undefined);
    },
  });
}

/**
 * A fetch under every one of cairn's remote time bounds (connect, headers,
 * idle, rate) over the default node:http(s) fetch, for readers of remote
 * documents outside the registry transport (freeze's package indexes).
 */
export function boundedRemoteFetch(given: Partial<RemoteLimits> = {}): (url: URL, init?: RequestInit) => Promise<Response> {
  const limits = remoteLimits(given);
  const f = httpFetch(limits.connectMs, (u) => remoteTimeout("connectMs", limits, u.host, "no connection made"));
  return (url, init = {}) => boundedFetch(f, url, init, limits, `${init.method ?? "GET"} ${url.origin}${url.pathname}`);
}
