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
 *
 * A location is a directory (a path or file:// URL: `cairn.registry/2`,
 * offline) or `oci://HOST[:PORT]/REPO` (an OCI registry, registry-oci.ts):
 * this is the one place a registry string becomes a registry, for the CLI
 * and library callers alike. Only an `oci://` location contacts a network.
 */
import { isAbsolute, resolve as resolvePath } from "node:path";
import { fileURLToPath } from "node:url";
import { CairnError, cairnDir, type VerifyingKey } from "../core/index.ts";
import type { RemoteOptions } from "../oci/index.ts";
import { defaultStoreDir } from "../store/index.ts";
import type { CatalogSource } from "./catalog.ts";
import type { Profile } from "./profile-model.ts";
import { LocalRegistry, type LayerRegistry } from "./registry.ts";
import { OCI_REGISTRY_SCHEME, OciLayerRegistry, parseOciRegistryUrl } from "./registry-oci.ts";
import { readTrust } from "./trust.ts";

/** Where relative paths and the default registry are taken from. */
export interface RegistryPlace {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** How to reach `oci://` registries (transport flags, credentials); default: https, credentials from `env`. */
  readonly remote?: RemoteOptions;
  /** The content store `oci://` blobs are cached in (default `$CAIRN_HOME/store`, as every command's). */
  readonly storeDir?: string;
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

/**
 * A registry location, normalised: `oci://HOST/REPO` as written (after its
 * grammar is checked), else a directory path (relative to `baseDir`) or a
 * file:// URL. Two spellings of one location compare equal.
 */
export function registryPath(url: string, baseDir: string): string {
  if (url.startsWith(OCI_REGISTRY_SCHEME)) return parseOciRegistryUrl(url).location;
  if (url.startsWith("file://")) return fileURLToPath(url);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new CairnError("REGISTRY_INVALID", `registry ${url} is neither a local directory nor oci://HOST/REPO`, {
      hint: "name a directory registry (a path or file:// URL) or an OCI registry repository (oci://HOST[:PORT]/REPO)",
    });
  }
  return isAbsolute(url) ? url : resolvePath(baseDir, url);
}

/**
 * Opens one registry at a normalised location (`registryPath`). A
 * directory must exist unless `init` (then it is created, as
 * `--init-registry` asks); an OCI repository nothing was pushed to opens
 * empty only when `init` (a publisher's first push creates it).
 */
export async function openRegistryAt(location: string, place: RegistryPlace, init = false): Promise<LayerRegistry> {
  if (location.startsWith(OCI_REGISTRY_SCHEME)) {
    return OciLayerRegistry.open(location, {
      remote: place.remote ?? { env: place.env, cwd: place.cwd },
      storeDir: place.storeDir ?? defaultStoreDir(place.env as NodeJS.ProcessEnv, place.cwd),
      create: init,
    });
  }
  return init ? LocalRegistry.init(location) : LocalRegistry.open(location);
}

/**
 * The registry a publishing command writes to: the one named (a directory
 * relative to `cwd`, or `oci://HOST/REPO`), else the default directory
 * registry. A directory is created only with `init`; an OCI repository is
 * created by the first push.
 */
export async function openPublishRegistry(place: RegistryPlace, unsafeLocation: string | undefined, init: boolean): Promise<LayerRegistry> {
  if (unsafeLocation === undefined) return openRegistryAt(defaultRegistryDir(place.env, place.cwd), place, init);
  const location = registryPath(unsafeLocation, place.cwd);
  return openRegistryAt(location, place, init || location.startsWith(OCI_REGISTRY_SCHEME));
}

export interface OpenedRegistry {
  readonly registry: LayerRegistry;
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
export async function openRegistries(choice: RegistryChoice): Promise<OpenedRegistry[]> {
  const { cwd, profile, profileDir } = choice;
  const cliKeys: VerifyingKey[] = choice.trust.map((t) => readTrust(t, cwd));
  const profileRegs = profile?.registries ?? [];
  // A profile registry's trust is read only where that registry is used: a Strata profile naming
  // strata-core on s3:// still resolves against a directory the command line names with its keyfile.
  const keysOf = (i: number): VerifyingKey[] => {
    const t = profileRegs[i]!.trust;
    return t !== undefined ? [readTrust(t, profileDir ?? cwd, `/registries/${i}/trust`)] : [];
  };
  const placeOf = (i: number): string | undefined => {
    try {
      return registryPath(profileRegs[i]!.url, profileDir ?? cwd);
    } catch (e) {
      if (e instanceof CairnError) return undefined; // a URL no command-line directory can be (s3://, https://)
      throw e;
    }
  };
  const chosen: { path: string; url: string; keys: VerifyingKey[] }[] =
    choice.registries.length > 0
      ? choice.registries.map((u) => {
          const path = registryPath(u, cwd);
          const extra = profileRegs.flatMap((_, i) => (placeOf(i) === path ? keysOf(i) : []));
          return { path, url: u, keys: [...cliKeys, ...extra] };
        })
      : profileRegs.map((r, i) => {
          // The trust first: a strata-core or keyless registry is refused for its trust mode, whatever its URL.
          const keys = keysOf(i);
          return { path: registryPath(r.url, profileDir ?? cwd), url: r.url, keys };
        });
  if (chosen.length === 0) {
    const dir = defaultRegistryDir(choice.env, cwd);
    chosen.push({ path: dir, url: dir, keys: cliKeys });
  }
  const opened: OpenedRegistry[] = [];
  for (const c of chosen) opened.push({ registry: await openRegistryAt(c.path, choice), source: { url: c.url, keys: c.keys } });
  return opened;
}
