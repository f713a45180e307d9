/**
 * The `WWW-Authenticate` challenge of the Distribution token flow
 * (https://distribution.github.io/distribution/spec/auth/token/): a registry
 * answers 401 with `Bearer realm="…",service="…",scope="…"` or
 * `Basic realm="…"`. This module parses the header and decides whether the
 * realm may be followed; it does no I/O.
 *
 * A realm is a URL the registry tells cairn to send credentials to, so it is
 * hostile: a realm on another host is followed only over https (or to a
 * loopback address, for tests); http to a foreign host is refused, because
 * the registry could otherwise have cairn post the user's password in clear
 * to any address.
 */
import { CairnError } from "../../core/index.ts";
import { isLoopbackHost } from "./image-ref.ts";

export interface Challenge {
  readonly scheme: "bearer" | "basic";
  readonly params: Readonly<Record<string, string>>;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/;

/** Parses the first Bearer or Basic challenge in a `WWW-Authenticate` value; undefined when there is none. */
export function parseChallenge(unsafeHeader: string | null): Challenge | undefined {
  if (unsafeHeader === null) return undefined;
  let s = unsafeHeader.trim();
  const scheme = TOKEN.exec(s)?.[0];
  if (scheme === undefined) return undefined;
  const lower = scheme.toLowerCase();
  if (lower !== "bearer" && lower !== "basic") return undefined;
  s = s.slice(scheme.length);
  const params: Record<string, string> = Object.create(null);
  const re = /\s*,?\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/y;
  for (;;) {
    const m = re.exec(s);
    if (m === null) break;
    params[m[1]!.toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : (m[3] ?? "");
  }
  return { scheme: lower, params };
}

/**
 * The token realm as a URL cairn may contact, given the registry's own URL.
 * Same host: the registry's scheme. Another host: https, or loopback.
 */
export function checkRealm(unsafeRealm: string | undefined, registryUrl: URL): URL {
  if (unsafeRealm === undefined) throw new CairnError("REMOTE_AUTH", `${registryUrl.host} sent a Bearer challenge without a realm`, { path: registryUrl.host });
  let realm: URL;
  try {
    realm = new URL(unsafeRealm);
  } catch {
    throw new CairnError("REMOTE_AUTH", `${registryUrl.host} sent a token realm that is not a URL`, { path: registryUrl.host });
  }
  if (realm.protocol !== "https:" && realm.protocol !== "http:") {
    throw new CairnError("REMOTE_AUTH", `token realm scheme ${realm.protocol} is not http(s)`, { path: registryUrl.host });
  }
  if (realm.username !== "" || realm.password !== "") {
    throw new CairnError("REMOTE_AUTH", "token realm carries user information", { path: registryUrl.host });
  }
  const sameHost = realm.host === registryUrl.host;
  if (realm.protocol === "http:" && !(sameHost && registryUrl.protocol === "http:") && !isLoopbackHost(realm.host)) {
    throw new CairnError(
      "REMOTE_AUTH",
      `${registryUrl.host} names a token realm on ${realm.host} over plain http; credentials go to another host only over https`,
      {
        path: registryUrl.host,
        hint: "the registry's auth configuration is unsafe; cairn will not send credentials there",
      },
    );
  }
  return realm;
}
