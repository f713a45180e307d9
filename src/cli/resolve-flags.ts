/**
 * The flags and the steps `cairn resolve` and `cairn update` share: the
 * registries (`--registry`, `--trust`, the profile's own), the probed base
 * (`--base`), `--allow-unsigned-offline`, and resolving a profile file with
 * them. One definition, so `update` re-resolves exactly as `resolve` would
 * (a second copy could pick another layer than the lockfile it is compared
 * with). Commands share this file instead of importing each other.
 */
import { dirname, resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { catalogFromRegistries, openRegistries, readProfileFile, resolveProfile, type Lockfile, type OpenedRegistry, type Profile } from "../strata/index.ts";
import { CAIRN_VERSION } from "./cairn-version.ts";
import type { Context } from "./context.ts";
import { clock, collect, probeBaseFlag, registryPlace } from "./flags.ts";
import { remoteFlags, type RemoteFlags } from "./remote-flags.ts";

export interface ResolveFlags extends RemoteFlags {
  registry: string[];
  trust: string[];
  base?: string;
  allowUnsignedOffline?: boolean;
}

/** Adds the resolving flags (and the registry transport flags) to `cmd`. */
export function withResolveFlags(cmd: Command): Command {
  return remoteFlags(cmd)
    .option(
      "--registry <dir>",
      "a directory registry or oci://HOST/REPO (repeatable; default: the profile's registries, else $CAIRN_HOME/registry or $XDG_DATA_HOME/cairn/registry)",
      collect,
      [],
    )
    .option("--trust <keyfile://PATH>", "an Ed25519 public key trusted for the --registry layers (repeatable)", collect, [])
    .option("--base <base>", "probe the base: host, rootfs:DIR or oci:LAYOUT@sha256:DIGEST (default: record the profile's base as declared, unprobed)")
    .option("--allow-unsigned-offline", "accept layers and formations not signed by a trusted key; the lockfile says unsigned-offline");
}

export interface Resolved {
  readonly profile: Profile;
  readonly lock: Lockfile;
  readonly registries: readonly OpenedRegistry[];
}

/** Reads the profile at `path` and resolves it with the flags' registries, trust and base, at the command's clock. */
export async function resolveWithFlags(ctx: Context, path: string, opts: ResolveFlags): Promise<Resolved> {
  const profile = readProfileFile(path);
  const now = clock(ctx.env);
  const registries = await openRegistries({
    ...registryPlace(ctx, opts),
    registries: opts.registry,
    trust: opts.trust,
    profile,
    profileDir: dirname(resolvePath(ctx.cwd, path)),
  });
  const probed = await probeBaseFlag(ctx, opts.base, now);
  const lock = resolveProfile({
    profile,
    catalog: catalogFromRegistries(registries),
    ...(probed ? { probedBase: probed } : {}),
    allowUnsignedOffline: opts.allowUnsignedOffline === true,
    now,
    cairnVersion: CAIRN_VERSION,
    progress: ctx.progress,
  });
  return { profile, lock, registries };
}
