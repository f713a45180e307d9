/**
 * A registry client for a reference, configured as the user asked: the
 * transport flags (`--plain-http`, `--allow-insecure-remote`, the manifest
 * limit) and credentials from the user's credential files, named by
 * `core/locations.ts` from the environment passed in (never read here).
 */
import { registryAuthFiles, type RemoteLimits } from "../../core/index.ts";
import { credentialsFromFiles } from "./credentials.ts";
import { apiHost, type ImageRef } from "./image-ref.ts";
import { RegistryClient } from "./registry-client.ts";

/** How to reach registries: what the CLI's flags and environment say. */
export interface RemoteOptions {
  readonly plainHttp?: boolean;
  readonly allowInsecureRemote?: boolean;
  readonly manifestBytes?: number;
  /** cairn's own bounds on a registry (timeouts, rate, pages, requests); each at its default when not given. */
  readonly limits?: Partial<RemoteLimits>;
  /** The environment (for REGISTRY_AUTH_FILE, DOCKER_CONFIG, HOME) and the current directory. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly fetch?: typeof fetch;
  /** Extra CA certificates (PEM, from `readRegistryCa`) trusted for https beside Node's roots. */
  readonly ca?: string;
  readonly log?: (line: string) => void;
}

/** A client for the registry `ref` names, with credentials from the user's credential files. */
export function registryClientFor(ref: Pick<ImageRef, "registry">, opts: RemoteOptions): RegistryClient {
  return new RegistryClient({
    host: apiHost(ref),
    credentialName: ref.registry,
    plainHttp: opts.plainHttp,
    allowInsecureRemote: opts.allowInsecureRemote,
    credentials: credentialsFromFiles(registryAuthFiles(opts.env, opts.cwd)),
    manifestBytes: opts.manifestBytes,
    limits: opts.limits,
    fetch: opts.fetch,
    ca: opts.ca,
    log: opts.log,
  });
}
