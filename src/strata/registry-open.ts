/**
 * Which registries a command or a library caller reads, and which keys it
 * trusts for each. Trust is never defaulted and never found inside a
 * registry: a registry named on the command line is trusted only through the
 * caller's keys (plus the profile's own key when the profile names the same
 * directory); a profile's registries through the profile's keys; the default
 * registry through the caller's keys only. Without this one definition two
 * callers could open the same profile's registries with different trust.
 *
 * Everything the choice depends on (the environment, the working directory)
 * is an argument, so tests and library users can vary it.
 */
import { isAbsolute, resolve as resolvePath } from "node:path";
import { fileURLToPath } from "node:url";
import { CairnError, cairnDir, type VerifyingKey } from "../core/index.ts";
import type { CatalogSource } from "./catalog.ts";
import type { Profile } from "./profile-model.ts";
import { LocalRegistry } from "./registry.ts";
import { readTrust } from "./trust.ts";

/** Where relative paths and the default registry are taken from. */
export interface RegistryPlace {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
}

/**
 * The embedded default registry, `cairnDir("registry")` (the one precedence
 * of every default location: `$CAIRN_HOME/registry`, else an absolute
 * `$XDG_DATA_HOME/cairn/registry`, else `~/.local/share/cairn/registry`). It
 * is used when neither the command line nor the profile names one. Trust is
 * never defaulted.
 */
export function defaultRegistryDir(env: RegistryPlace["env"], cwd: string): string {
  return cairnDir("registry", env, cwd);
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

export interface RegistryChoice extends RegistryPlace {
  /** Registries named by the caller (paths relative to `cwd`, or file:// URLs). */
  readonly registries: readonly string[];
  /** `keyfile://PATH` keys the caller trusts for its registries (relative to `cwd`). */
  readonly trust: readonly string[];
  readonly profile?: Profile;
  /** The profile's directory: its registry paths and trust keys are relative to it (default `cwd`). */
  readonly profileDir?: string;
}

/**
 * The registries to use: those the caller names (trusting its keys, plus the
 * profile's trust for the same directory), else the profile's own, else the
 * default registry (trusting only the caller's keys).
 */
export function openRegistries(choice: RegistryChoice): OpenedRegistry[] {
  const { cwd, profile, profileDir } = choice;
  const cliKeys: VerifyingKey[] = choice.trust.map((t) => readTrust(t, cwd));
  const fromProfile = (profile?.registries ?? []).map((r) => ({
    path: registryPath(r.url, profileDir ?? cwd),
    url: r.url,
    keys: r.trust !== undefined ? [readTrust(r.trust, profileDir ?? cwd)] : [],
  }));
  const chosen: { path: string; url: string; keys: VerifyingKey[] }[] =
    choice.registries.length > 0
      ? choice.registries.map((u) => {
          const path = registryPath(u, cwd);
          const extra = fromProfile.filter((p) => p.path === path).flatMap((p) => p.keys);
          return { path, url: u, keys: [...cliKeys, ...extra] };
        })
      : fromProfile;
  if (chosen.length === 0) {
    const dir = defaultRegistryDir(choice.env, cwd);
    chosen.push({ path: dir, url: dir, keys: cliKeys });
  }
  return chosen.map((c) => ({ registry: LocalRegistry.open(c.path), source: { url: c.url, keys: c.keys } }));
}
