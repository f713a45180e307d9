/**
 * The registry flags (`--plain-http`, `--allow-insecure-remote`,
 * `--max-manifest-bytes`, and one flag per remote limit of core/limits.ts,
 * `--remote-idle-ms` and so on, each also read from the environment as
 * `CAIRN_REMOTE_IDLE_MS`, the flag winning) and the library's remote options
 * made from them.
 * Apart from flags.ts, which loads strata (registries, base probes, lock
 * verification), so a command that only pulls or assembles does not load it.
 */
import type { Command } from "commander";
import { CairnError, REMOTE_LIMITS, remoteLimitSpelling, type RemoteLimits } from "../core/index.ts";
import { resolve } from "node:path";
import { readRegistryCa } from "../oci/index.ts";
import type { RemoteOptions } from "../workload/index.ts";
import type { Context } from "./context.ts";

/** The flags of every command that may contact a registry. */
export interface RemoteFlags {
  plainHttp?: boolean;
  allowInsecureRemote?: boolean;
  maxManifestBytes?: string;
  registryCa?: string;
}

const LIMIT_KEYS = Object.keys(REMOTE_LIMITS) as (keyof RemoteLimits)[];

/** The flag and variable of a remote limit, and commander's key for the flag (`--remote-idle-ms` -> `remoteIdleMs`). */
function limitNames(k: keyof RemoteLimits): { flag: string; key: string; env: string } {
  const s = remoteLimitSpelling(k);
  return { ...s, key: s.flag.slice(2).replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase()) };
}

/** Adds the registry flags to `cmd`. */
export function remoteFlags(cmd: Command): Command {
  cmd
    .option("--plain-http", "speak http instead of https to the registry (loopback registries only, unless --allow-insecure-remote)")
    .option("--allow-insecure-remote", "allow --plain-http to a registry that is not on loopback")
    .option("--max-manifest-bytes <n>", "limit manifestBytes: a registry manifest larger than this is refused before it is read (default 4194304)")
    .option("--registry-ca <file>", "PEM file of CA certificates trusted for https registries beside the system's (env CAIRN_REGISTRY_CA)");
  return remoteLimitFlags(cmd);
}

/** Adds one flag per remote time and count bound (`--remote-idle-ms` …): for commands that read remote indexes but no registry (freeze). */
export function remoteLimitFlags(cmd: Command): Command {
  for (const k of LIMIT_KEYS) {
    const l = REMOTE_LIMITS[k];
    const n = limitNames(k);
    cmd.option(`${n.flag} <${l.unit === "ms" ? "ms" : "n"}>`, `limit ${l.name} in ${l.unit} (default ${l.default}; env ${n.env})`);
  }
  return cmd;
}

export function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,14}$/.test(value)) throw new CairnError("USAGE", `${flag} must be a positive integer`, { path: flag });
  return Number(value);
}

/** The library's remote options from the flags and the command's environment. */
export function remoteOptions(ctx: Context, f: RemoteFlags): RemoteOptions {
  const caFile = f.registryCa ?? ctx.env.CAIRN_REGISTRY_CA;
  return {
    ...(caFile === undefined || caFile === "" ? {} : { ca: readRegistryCa(resolve(ctx.cwd, caFile)) }),
    plainHttp: f.plainHttp,
    allowInsecureRemote: f.allowInsecureRemote,
    manifestBytes: positiveInt(f.maxManifestBytes, "--max-manifest-bytes"),
    limits: remoteLimitsFrom(ctx, f),
    env: ctx.env,
    cwd: ctx.cwd,
  };
}

/** The remote limits the flags (of `remoteLimitFlags`) or the environment set (a flag wins); the others stay at their defaults. */
export function remoteLimitsFrom(ctx: Pick<Context, "env">, f: object): Partial<RemoteLimits> {
  const env = ctx.env;
  const out: { -readonly [K in keyof RemoteLimits]?: number } = {};
  for (const k of LIMIT_KEYS) {
    const n = limitNames(k);
    const flag: unknown = Reflect.get(f, n.key); // the flag remoteFlags added for this limit
    const v = typeof flag === "string" ? positiveInt(flag, n.flag) : positiveInt(env[n.env], n.env);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/**
 * The registry flags again, as arguments for a command this one starts on
 * another node (`campaign run` → `campaign task`): what the flags and the
 * environment set, file names made absolute. Never a secret: credentials
 * stay in their files, named by the environment (`credentialEnvironment`).
 */
export function remoteArgv(ctx: Context, f: RemoteFlags): string[] {
  const out: string[] = [];
  if (f.plainHttp === true) out.push("--plain-http");
  if (f.allowInsecureRemote === true) out.push("--allow-insecure-remote");
  const maxManifest = positiveInt(f.maxManifestBytes, "--max-manifest-bytes");
  if (maxManifest !== undefined) out.push("--max-manifest-bytes", String(maxManifest));
  const caFile = f.registryCa ?? ctx.env.CAIRN_REGISTRY_CA;
  if (caFile !== undefined && caFile !== "") out.push("--registry-ca", resolve(ctx.cwd, caFile));
  const limits = remoteLimitsFrom(ctx, f);
  for (const k of LIMIT_KEYS) {
    const v = limits[k];
    if (v !== undefined) out.push(limitNames(k).flag, String(v));
  }
  return out;
}

/** The environment for a command started elsewhere: this one's, with the credential files' names made absolute (its cwd may differ). */
export function credentialEnvironment(ctx: Pick<Context, "env" | "cwd">): NodeJS.ProcessEnv {
  const env = { ...ctx.env };
  for (const k of ["REGISTRY_AUTH_FILE", "DOCKER_CONFIG", "HOME"] as const) {
    const v = env[k];
    if (v !== undefined && v !== "") env[k] = resolve(ctx.cwd, v);
  }
  return env;
}
