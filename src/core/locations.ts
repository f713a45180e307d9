/**
 * Default locations: the one place that decides where cairn keeps its
 * directories when no flag names one. There was one resolver per directory
 * (store, kit, runs, registry), and they disagreed on an empty HOME, on a
 * relative XDG_* value and on what to do with no home at all (one fell back
 * to a path relative to the current directory). One precedence, for every
 * kind, first match wins:
 *
 *   1. `$CAIRN_KIT` (the kit only),
 *   2. `$CAIRN_HOME/<kind>` (a relative value is taken from `cwd`),
 *   3. `$XDG_CACHE_HOME/cairn/<kind>` for the store and the kit (caches:
 *      rebuildable) or `$XDG_DATA_HOME/cairn/<kind>` for runs, the
 *      registry and keys (data: not rebuildable), only when absolute (the XDG spec
 *      says a relative value is invalid and must be ignored),
 *   4. `$HOME/.cache/cairn/<kind>` or `$HOME/.local/share/cairn/<kind>`,
 *   5. the same under the account's home directory (`os.homedir()`).
 *
 * An empty variable counts as unset everywhere. When nothing gives a home,
 * the answer is a USAGE error naming the variables and the flag, never a
 * path relative to wherever the command happens to run. A `--store`,
 * `--kit`, `--runs`, `--registry` or `--keys` flag wins over all of this; callers
 * handle flags. Nothing here reads a global: the environment and the
 * current directory are arguments, and the account's home is a parameter
 * (default `os.homedir`) so tests can vary all three.
 */
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { CairnError } from "./errors.ts";

export type CairnDirKind = "store" | "kit" | "runs" | "registry" | "keys";

/** The flag that overrides each kind's default location. */
export const CAIRN_DIR_FLAGS: Readonly<Record<CairnDirKind, string>> = {
  store: "--store",
  kit: "--kit",
  runs: "--runs",
  registry: "--registry",
  keys: "--keys",
};

/** Caches (rebuildable) live under XDG_CACHE_HOME, data under XDG_DATA_HOME. */
const XDG_BASE: Readonly<Record<CairnDirKind, "cache" | "data">> = { store: "cache", kit: "cache", runs: "data", registry: "data", keys: "data" };

function set(value: string | undefined): value is string {
  return value !== undefined && value !== "";
}

/** The default directory of `kind` (an absolute path), by the precedence above. */
export function cairnDir(kind: CairnDirKind, env: Readonly<Record<string, string | undefined>>, cwd: string, accountHome: () => string = homedir): string {
  if (kind === "kit" && set(env.CAIRN_KIT)) return resolve(cwd, env.CAIRN_KIT);
  if (set(env.CAIRN_HOME)) return join(resolve(cwd, env.CAIRN_HOME), kind);
  const cache = XDG_BASE[kind] === "cache";
  const xdg = cache ? env.XDG_CACHE_HOME : env.XDG_DATA_HOME;
  if (set(xdg) && isAbsolute(xdg)) return join(xdg, "cairn", kind);
  const home = set(env.HOME) ? env.HOME : accountHome();
  if (home === "") {
    const vars = [...(kind === "kit" ? ["CAIRN_KIT"] : []), "CAIRN_HOME", cache ? "XDG_CACHE_HOME" : "XDG_DATA_HOME", "HOME"];
    throw new CairnError("USAGE", `no ${kind} location: ${vars.join(", ")} are all unset and the account has no home directory`, {
      hint: `pass ${CAIRN_DIR_FLAGS[kind]} DIR or set CAIRN_HOME`,
    });
  }
  return cache ? join(resolve(cwd, home), ".cache", "cairn", kind) : join(resolve(cwd, home), ".local", "share", "cairn", kind);
}

/**
 * The registry credential files cairn reads, in order (first file naming a
 * host wins): `$REGISTRY_AUTH_FILE` (the containers convention, `auth.json`),
 * then `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`. Files that
 * do not exist are skipped by the reader; none is ever written.
 */
export function registryAuthFiles(env: Readonly<Record<string, string | undefined>>, cwd: string, accountHome: () => string = homedir): string[] {
  const out: string[] = [];
  if (set(env.REGISTRY_AUTH_FILE)) out.push(resolve(cwd, env.REGISTRY_AUTH_FILE));
  if (set(env.DOCKER_CONFIG)) out.push(join(resolve(cwd, env.DOCKER_CONFIG), "config.json"));
  else {
    const home = set(env.HOME) ? env.HOME : accountHome();
    if (home !== "") out.push(join(resolve(cwd, home), ".docker", "config.json"));
  }
  return out;
}
