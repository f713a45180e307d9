/**
 * The registry flags (`--plain-http`, `--allow-insecure-remote`,
 * `--max-manifest-bytes`) and the library's remote options made from them.
 * Apart from flags.ts, which loads strata (registries, base probes, lock
 * verification), so a command that only pulls or assembles does not load it.
 */
import type { Command } from "commander";
import { CairnError } from "../core/index.ts";
import type { RemoteOptions } from "../workload/index.ts";
import type { Context } from "./context.ts";

/** The flags of every command that may contact a registry. */
export interface RemoteFlags {
  plainHttp?: boolean;
  allowInsecureRemote?: boolean;
  maxManifestBytes?: string;
}

/** Adds the registry flags to `cmd`. */
export function remoteFlags(cmd: Command): Command {
  return cmd
    .option("--plain-http", "speak http instead of https to the registry (loopback registries only, unless --allow-insecure-remote)")
    .option("--allow-insecure-remote", "allow --plain-http to a registry that is not on loopback")
    .option("--max-manifest-bytes <n>", "limit manifestBytes: a registry manifest larger than this is refused before it is read (default 4194304)");
}

export function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,14}$/.test(value)) throw new CairnError("USAGE", `${flag} must be a positive integer`, { path: flag });
  return Number(value);
}

/** The library's remote options from the flags and the command's environment. */
export function remoteOptions(ctx: Context, f: RemoteFlags): RemoteOptions {
  return {
    plainHttp: f.plainHttp,
    allowInsecureRemote: f.allowInsecureRemote,
    manifestBytes: positiveInt(f.maxManifestBytes, "--max-manifest-bytes"),
    env: ctx.env,
    cwd: ctx.cwd,
  };
}
