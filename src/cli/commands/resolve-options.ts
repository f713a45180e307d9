/**
 * Flag handling shared by the strata commands: repeatable options, opening
 * registries with their trust, the clock, and turning `--base` into a probed
 * base. The library takes all of these as arguments; only the CLI reads the
 * process's clock (or CAIRN_NOW, an RFC 3339 time, to reproduce a run).
 */
import { homedir } from "node:os";
import { isAbsolute, join, resolve as resolvePath } from "node:path";
import { fileURLToPath } from "node:url";
import { CairnError, type VerifyingKey } from "../../core/index.ts";
import { directoryView } from "../../tree/index.ts";
import {
  LocalRegistry, probeOciBase, probeRoot, probedBase, readTrust, type CatalogSource, type LockBase, type Profile,
} from "../../strata/index.ts";
import type { Context } from "../main.ts";

export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function clock(ctx: Context): Date {
  const fixed = ctx.env.CAIRN_NOW;
  if (fixed === undefined || fixed === "") return new Date();
  const t = Date.parse(fixed);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(fixed) || Number.isNaN(t)) throw new CairnError("USAGE", "CAIRN_NOW is not an RFC 3339 time");
  return new Date(t);
}

/**
 * The embedded default registry: `$CAIRN_HOME/registry`, else
 * `$XDG_DATA_HOME/cairn/registry`, else `~/.local/share/cairn/registry`. It is
 * used when neither the command line nor the profile names one. Trust is
 * never defaulted.
 */
export function defaultRegistryDir(ctx: Context): string {
  if (ctx.env.CAIRN_HOME) return join(resolvePath(ctx.cwd, ctx.env.CAIRN_HOME), "registry");
  const data = ctx.env.XDG_DATA_HOME ? resolvePath(ctx.cwd, ctx.env.XDG_DATA_HOME) : join(ctx.env.HOME ?? homedir(), ".local", "share");
  return join(data, "cairn", "registry");
}

/** A registry location: a path (relative to `baseDir`) or a file:// URL. */
export function registryPath(url: string, baseDir: string): string {
  if (url.startsWith("file://")) return fileURLToPath(url);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new CairnError("REGISTRY_INVALID", `registry ${url} is not a local directory`, {
      hint: "this version of cairn reads local directory registries (a path or file:// URL)",
    });
  }
  return isAbsolute(url) ? url : resolvePath(baseDir, url);
}

export interface OpenedRegistry {
  readonly registry: LocalRegistry;
  readonly source: CatalogSource;
}

/**
 * The registries to use: those on the command line (trusting the --trust keys,
 * plus the profile's trust for the same directory), else the profile's own,
 * else the default registry (trusting only the --trust keys).
 */
export function openRegistries(ctx: Context, cliUrls: readonly string[], cliTrust: readonly string[], profile?: Profile, profileDir?: string): OpenedRegistry[] {
  const cliKeys: VerifyingKey[] = cliTrust.map((t) => readTrust(t, ctx.cwd));
  const fromProfile = (profile?.registries ?? []).map((r) => ({
    path: registryPath(r.url, profileDir ?? ctx.cwd),
    url: r.url,
    keys: r.trust !== undefined ? [readTrust(r.trust, profileDir ?? ctx.cwd)] : [],
  }));
  const chosen: { path: string; url: string; keys: VerifyingKey[] }[] =
    cliUrls.length > 0
      ? cliUrls.map((u) => {
          const path = registryPath(u, ctx.cwd);
          const extra = fromProfile.filter((p) => p.path === path).flatMap((p) => p.keys);
          return { path, url: u, keys: [...cliKeys, ...extra] };
        })
      : fromProfile;
  if (chosen.length === 0) {
    const dir = defaultRegistryDir(ctx);
    chosen.push({ path: dir, url: dir, keys: cliKeys });
  }
  return chosen.map((c) => ({ registry: LocalRegistry.open(c.path), source: { url: c.url, keys: c.keys } }));
}

/** `--base host | rootfs:DIR | oci:LAYOUT@sha256:DIGEST` → a probed base; undefined means declared. */
export async function probeBaseFlag(ctx: Context, flag: string | undefined, now: Date): Promise<LockBase | undefined> {
  if (flag === undefined) return undefined;
  if (flag === "host") return probedBase(await probeRoot(directoryView("/"), "host"), "host", now);
  if (flag.startsWith("rootfs:")) {
    const dir = resolvePath(ctx.cwd, flag.slice("rootfs:".length));
    return probedBase(await probeRoot(directoryView(dir), dir), `rootfs:${dir}`, now);
  }
  if (flag.startsWith("oci:")) {
    const m = /^(.+)@(sha256:[0-9a-f]{64})$/.exec(flag.slice("oci:".length));
    if (m === null) throw new CairnError("USAGE", "--base oci: needs LAYOUT@sha256:DIGEST (the image manifest digest)");
    return probeOciBase({ layoutDir: resolvePath(ctx.cwd, m[1]!), manifestDigest: m[2]!, now });
  }
  throw new CairnError("USAGE", `--base ${JSON.stringify(flag).slice(0, 60)} is not host, rootfs:DIR or oci:LAYOUT@sha256:DIGEST`);
}
