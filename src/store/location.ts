/**
 * Where the content store lives: `--store DIR` when given, else `$CAIRN_HOME/store`,
 * else `$XDG_CACHE_HOME/cairn/store`, else `~/.cache/cairn/store`. Takes the
 * environment as an argument so tests can vary it.
 */
import { isAbsolute, join, resolve } from "node:path";
import { homedir } from "node:os";
import { CairnError } from "../core/index.ts";

export function defaultStoreDir(env: NodeJS.ProcessEnv, cwd: string, flag?: string): string {
  if (flag !== undefined && flag !== "") return resolve(cwd, flag);
  const home = env.CAIRN_HOME;
  if (home !== undefined && home !== "") return join(resolve(cwd, home), "store");
  const xdg = env.XDG_CACHE_HOME;
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (xdg !== undefined && xdg !== "" && isAbsolute(xdg)) return join(xdg, "cairn", "store");
  const h = env.HOME !== undefined && env.HOME !== "" ? env.HOME : homedir();
  if (h === "") {
    throw new CairnError("USAGE", "no store location: HOME, XDG_CACHE_HOME and CAIRN_HOME are all unset", {
      hint: "pass --store DIR or set CAIRN_HOME",
    });
  }
  return join(h, ".cache", "cairn", "store");
}
