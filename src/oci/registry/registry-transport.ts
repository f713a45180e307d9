/**
 * One registry's HTTP transport: the base URL (https, or plain http only when
 * asked and, unless also allowed, only to loopback), the 401 challenge flow
 * (Bearer tokens per scope, or Basic), and redirects followed by hand.
 *
 * Credentials go to the registry's own host only. A redirect (blob storage
 * often answers with one) is followed without `Authorization` when it leaves
 * the registry's host, and a redirect from https to plain http is refused:
 * a hostile registry must not be able to forward the user's credentials or
 * token, or downgrade the transfer, by answering 307. A Bearer realm is
 * checked by `checkRealm` before any credential is sent to it.
 *
 * Nothing here logs a header value: the log line is method, URL and status.
 */
import { CairnError, REMOTE_LIMITS, checkLimit, isJsonObject, parseJsonBytes, remoteLimitHint, remoteLimits, type RemoteLimits } from "../../core/index.ts";
import { checkRealm, parseChallenge } from "./auth-challenge.ts";
import type { CredentialSource } from "./credentials.ts";
import { isLoopbackHost } from "./image-ref.ts";
import { httpFetch } from "./http-fetch.ts";
import { trustWith } from "./registry-ca.ts";
import { readBodyBounded } from "./remote-body.ts";
import { boundedFetch, remoteTimeout } from "./remote-bounds.ts";

export interface TransportOptions {
  /** Registry host as named (`127.0.0.1:5000`); Docker Hub's name is mapped by the caller. */
  readonly host: string;
  /** Speak plain http (only to loopback unless `allowInsecureRemote`). */
  readonly plainHttp?: boolean;
  /** Allow plain http to a host that is not loopback (the user said so on purpose). */
  readonly allowInsecureRemote?: boolean;
  readonly credentials?: CredentialSource;
  /** The credential lookup name (the registry as the user named it; default `host`). */
  readonly credentialName?: string;
  /** The fetch to use (tests count requests through it). */
  readonly fetch?: typeof fetch;
  /** One line per request: method, URL, status. Never headers or bodies. */
  readonly log?: (line: string) => void;
  /** cairn's own bounds on this registry (core/limits.ts; each at its default when not given). */
  readonly limits?: Partial<RemoteLimits>;
  /** Extra CA certificates (PEM, checked by `readRegistryCa`) trusted for https beside Node's roots. */
  readonly ca?: string;
}

export interface SendOptions {
  readonly headers?: Record<string, string>;
  readonly body?: Uint8Array | ReadableStream<Uint8Array>;
  /** The token scope, e.g. `repository:app:pull`. */
  readonly scope: string;
}

const MAX_REDIRECTS = 5;

/** A URL hostname (as `URL` normalises it) on loopback or link-local: 127/8, ::1, localhost, 169.254/16, fe80::/10, and IPv4-mapped forms of those. */
function isLocalHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h.endsWith(".localhost") || h === "::1" || h === "0.0.0.0" || h === "::") return true;
  if (/^(127|169\.254)\./.test(h) || /^fe[89ab][0-9a-f]?:/.test(h)) return true;
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(h);
  if (mapped !== null) {
    const hi = Number.parseInt(mapped[1]!, 16);
    return hi >> 8 === 127 || hi === 0xa9fe;
  }
  return false;
}
const MAX_TOKEN_BYTES = 64 * 1024;

export class RegistryTransport {
  readonly base: URL;
  readonly #opts: TransportOptions;
  readonly #fetch: typeof fetch;
  readonly #tokens = new Map<string, string>();
  #basic = false;
  #requests = 0;
  readonly limits: RemoteLimits;

  constructor(opts: TransportOptions) {
    if (opts.plainHttp === true && !isLoopbackHost(opts.host) && opts.allowInsecureRemote !== true) {
      throw new CairnError("REMOTE_INSECURE", `plain http to ${opts.host}, which is not a loopback address`, {
        path: opts.host,
        hint: "use https, or pass --allow-insecure-remote if this network is trusted",
      });
    }
    this.#opts = opts;
    this.limits = remoteLimits(opts.limits);
    this.#fetch =
      opts.fetch ??
      httpFetch(
        this.limits.connectMs,
        (u) => remoteTimeout("connectMs", this.limits, u.host, "no connection made"),
        opts.ca === undefined ? undefined : trustWith(opts.ca),
      );
    this.base = new URL(`${opts.plainHttp === true ? "http" : "https"}://${opts.host}/v2/`);
  }

  get host(): string {
    return this.base.host;
  }

  #credential() {
    return this.#opts.credentials?.(this.#opts.credentialName ?? this.#opts.host);
  }

  #authorization(scope: string): string | undefined {
    const token = this.#tokens.get(scope);
    if (token !== undefined) return `Bearer ${token}`;
    if (this.#basic) return this.#credential()?.basicAuthorization();
    return undefined;
  }

  async #raw(method: string, url: URL, headers: Record<string, string>, body: SendOptions["body"]): Promise<Response> {
    // every request of this client counts, redirects and token requests included: a registry
    // that answers each request with another (401s, redirects, pages) ends at this bound
    checkLimit(REMOTE_LIMITS.maxRequests.name, ++this.#requests, this.limits.maxRequests, url.host, "count", remoteLimitHint("maxRequests"));
    try {
      // cairn's own bounds: response headers, then the body's idle and rate bounds (remote-bounds.ts)
      const res = await boundedFetch(
        this.#fetch,
        url,
        { method, headers, body, redirect: "manual", ...(body instanceof ReadableStream ? { duplex: "half" } : {}) } as RequestInit,
        this.limits,
        `${method} ${url.origin}${url.pathname}`,
      );
      this.#opts.log?.(`${method} ${url.origin}${url.pathname} ${res.status}`);
      return res;
    } catch (cause) {
      if (cause instanceof CairnError) throw cause; // a fetch that refuses by itself (an archive's offline reader)
      this.#opts.log?.(`${method} ${url.origin}${url.pathname} failed`);
      throw new CairnError("REMOTE_UNREACHABLE", `cannot reach ${url.host} (${method} ${url.pathname})`, {
        path: url.host,
        cause,
        hint:
          this.base.protocol === "https:" && isLoopbackHost(url.host)
            ? "a loopback registry often speaks plain http: pass --plain-http"
            : "check the registry address and the network",
      });
    }
  }

  /** Sends one request, following redirects and answering one auth challenge. `path` is relative to `/v2/` or absolute. */
  async send(method: string, path: string | URL, opts: SendOptions): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.#follow(method, typeof path === "string" ? new URL(path, this.base) : path, opts);
      if (res.status !== 401 || attempt > 0 || opts.body instanceof ReadableStream) return res;
      const challenge = parseChallenge(res.headers.get("www-authenticate"));
      await res.body?.cancel().catch(() => undefined);
      if (challenge === undefined) return res;
      if (challenge.scheme === "basic") {
        if (this.#credential() === undefined || this.#basic) return res;
        this.#basic = true;
      } else {
        await this.#fetchToken(challenge.params, opts.scope);
      }
    }
  }

  async #follow(method: string, start: URL, opts: SendOptions): Promise<Response> {
    let url = start;
    for (let hops = 0; ; hops++) {
      const headers: Record<string, string> = { ...opts.headers };
      // credentials only to the registry's own origin (scheme, host and port)
      if (url.origin === this.base.origin) {
        const auth = this.#authorization(opts.scope);
        if (auth !== undefined) headers.authorization = auth;
      }
      const res = await this.#raw(method, url, headers, opts.body);
      if (![301, 302, 303, 307, 308].includes(res.status)) return res;
      await res.body?.cancel().catch(() => undefined);
      const location = res.headers.get("location");
      if (location === null || hops >= MAX_REDIRECTS) {
        throw new CairnError("REMOTE_REFUSED", `${url.host} redirected ${location === null ? "without a Location" : `more than ${MAX_REDIRECTS} times`}`, {
          path: url.pathname,
        });
      }
      const next = new URL(location, url);
      if (next.protocol !== "https:" && next.protocol !== "http:")
        throw new CairnError("REMOTE_REFUSED", `redirect to a ${next.protocol} URL`, { path: url.pathname });
      if (url.protocol === "https:" && next.protocol === "http:" && !isLoopbackHost(next.host)) {
        throw new CairnError("REMOTE_REFUSED", `${url.host} redirected from https to plain http on ${next.host}`, {
          path: url.pathname,
          hint: "a downgrade is refused",
        });
      }
      // a registry elsewhere must not turn cairn into its client on this host: a redirect from a
      // registry that is not on loopback to a loopback or link-local address (a local service, a
      // cloud metadata endpoint) is refused before anything is sent there
      if (!isLoopbackHost(this.base.host) && isLocalHost(next.hostname))
        throw new CairnError("REMOTE_REFUSED", `${url.host} redirected to ${next.host}, an address of this host or its link`, {
          path: url.pathname,
          hint: "a remote registry may redirect to blob storage elsewhere, never to a loopback or link-local address",
        });
      if (opts.body instanceof ReadableStream) throw new CairnError("REMOTE_REFUSED", `${url.host} redirected an upload`, { path: url.pathname });
      url = next;
    }
  }

  /** The Bearer token flow: GET realm?service=…&scope=…, with basic credentials when the user has some for this registry. */
  async #fetchToken(params: Readonly<Record<string, string>>, scope: string): Promise<void> {
    const realm = checkRealm(params.realm, this.base);
    if (params.service !== undefined) realm.searchParams.set("service", params.service);
    realm.searchParams.set("scope", scope);
    const cred = this.#credential();
    const headers: Record<string, string> = {};
    if (cred !== undefined) headers.authorization = cred.basicAuthorization();
    const res = await this.#raw("GET", realm, headers, undefined);
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel().catch(() => undefined);
      throw new CairnError(
        "REMOTE_AUTH",
        `${realm.host} refused ${cred === undefined ? "anonymous access" : `the credentials of ${cred.username}`} for ${scope}`,
        {
          path: this.host,
          hint: cred === undefined ? "log in (docker login / podman login) or set REGISTRY_AUTH_FILE" : "check the credentials for this registry",
        },
      );
    }
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => undefined);
      throw new CairnError("REMOTE_AUTH", `token service ${realm.host} answered ${res.status}`, { path: this.host });
    }
    const body = await readBodyBounded(res, MAX_TOKEN_BYTES, "tokenBytes", "token response");
    let token: unknown;
    try {
      const parsed = parseJsonBytes(body, { source: "token response" });
      token = isJsonObject(parsed) ? (parsed.token ?? parsed.access_token) : undefined;
    } catch {
      token = undefined; // refused below without quoting the body
    }
    if (typeof token !== "string" || token === "" || /[\s\r\n]/.test(token)) {
      throw new CairnError("REMOTE_AUTH", `token service ${realm.host} sent no usable token`, { path: this.host });
    }
    this.#tokens.set(scope, token);
  }
}
