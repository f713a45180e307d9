/**
 * Registry credentials: read from the files `core/locations.ts` names
 * (`$REGISTRY_AUTH_FILE`, then the docker config), never written, never
 * printed. A `Credential` keeps its secret in a private field: it has no
 * enumerable property holding it, `toJSON` and `util.inspect` show the user
 * name only, and nothing in cairn puts it in a message. The secret leaves
 * the object only as an `Authorization` header value.
 *
 * Credential helpers (`credsStore`, `credHelpers`) are programs named by the
 * config; cairn never executes anything named by an input, so a host served
 * only by a helper has no credential here (anonymous access is tried).
 */
import { CairnError, isJsonObject, parseJsonBytes, readFileBounded, type JsonModel } from "../../core/index.ts";
import { DOCKER_HUB } from "./image-ref.ts";

/** A credential file larger than this is refused (named limit). */
export const MAX_AUTH_FILE_BYTES = 1024 * 1024;

const inspect = Symbol.for("nodejs.util.inspect.custom");

export class Credential {
  readonly username: string;
  readonly #secret: string;
  /** An identity token (docker's `identitytoken`) is a refresh token for the OAuth2 flow, else a password. */
  readonly kind: "password" | "identitytoken";

  constructor(username: string, secret: string, kind: "password" | "identitytoken" = "password") {
    this.username = username;
    this.#secret = secret;
    this.kind = kind;
  }

  /** The `Authorization` value for basic auth. */
  basicAuthorization(): string {
    return `Basic ${Buffer.from(`${this.username}:${this.#secret}`, "utf8").toString("base64")}`;
  }

  /** Form fields for an OAuth2 token request (`grant_type=password` or `refresh_token`). */
  oauthFields(): Record<string, string> {
    return this.kind === "identitytoken"
      ? { grant_type: "refresh_token", refresh_token: this.#secret }
      : { grant_type: "password", username: this.username, password: this.#secret };
  }

  toJSON(): { username: string } {
    return { username: this.username };
  }

  [inspect](): string {
    return `Credential(${this.username})`;
  }

  toString(): string {
    return `Credential(${this.username})`;
  }
}

/** Where credentials come from: a function of the registry host (with port). */
export type CredentialSource = (registry: string) => Credential | undefined;

/** The keys a docker config may use for one registry host. */
function keysFor(registry: string): string[] {
  if (registry === DOCKER_HUB) return ["docker.io", "https://index.docker.io/v1/", "index.docker.io", "registry-1.docker.io"];
  return [registry, `https://${registry}`, `http://${registry}`, `https://${registry}/v1/`, `https://${registry}/v2/`];
}

function str(v: JsonModel | undefined): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** The credential in one parsed `auths` entry, or undefined; a malformed entry is refused naming the file and host, never the value. */
function entryCredential(entry: JsonModel | undefined, file: string, key: string): Credential | undefined {
  if (!isJsonObject(entry)) return undefined;
  const bad = (): never => {
    throw new CairnError("REMOTE_AUTH", `credential for ${key} in ${file} is malformed`, {
      path: file,
      hint: 'an "auth" value is base64 of "user:password"',
    });
  };
  const token = str(entry.identitytoken);
  const auth = str(entry.auth);
  let user = str(entry.username);
  let secret = str(entry.password);
  if (auth !== undefined) {
    const decoded = Buffer.from(auth, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon <= 0 && token === undefined) bad();
    if (colon > 0) {
      user = decoded.slice(0, colon);
      secret = decoded.slice(colon + 1);
    }
  }
  if (token !== undefined) return new Credential(user ?? "<token>", token, "identitytoken");
  if (user !== undefined && secret !== undefined) return new Credential(user, secret);
  return undefined;
}

/** Reads one credential file's `auths`; undefined when the file does not exist. */
function readAuths(file: string): Record<string, JsonModel> | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileBounded(file, MAX_AUTH_FILE_BYTES, "authFileBytes", { missing: "REMOTE_AUTH" });
  } catch (e) {
    if (e instanceof CairnError && e.code === "REMOTE_AUTH") return undefined; // absent: nothing to read
    throw e;
  }
  let doc: JsonModel;
  try {
    doc = parseJsonBytes(bytes, { source: file });
  } catch {
    // the parser's message could quote the file's text: name the file only
    throw new CairnError("REMOTE_AUTH", `credential file ${file} is not valid JSON`, { path: file, hint: "fix or remove the file" });
  }
  if (!isJsonObject(doc)) throw new CairnError("REMOTE_AUTH", `credential file ${file} is not a JSON object`, { path: file });
  return isJsonObject(doc.auths) ? doc.auths : {};
}

/** A credential source over credential files (first file with an entry for the host wins). Files are read lazily, once. */
export function credentialsFromFiles(files: readonly string[]): CredentialSource {
  const cache = new Map<string, Record<string, JsonModel> | undefined>();
  return (registry) => {
    for (const file of files) {
      if (!cache.has(file)) cache.set(file, readAuths(file));
      const auths = cache.get(file);
      if (auths === undefined) continue;
      for (const key of keysFor(registry)) {
        const c = entryCredential(auths[key], file, key);
        if (c !== undefined) return c;
      }
    }
    return undefined;
  };
}
