/**
 * Where the content store lives: `--store DIR` when given, else core's one
 * default-location rule, `cairnDir("store", ...)` (`$CAIRN_HOME/store`, else
 * an absolute `$XDG_CACHE_HOME/cairn/store`, else `~/.cache/cairn/store`).
 * A thin wrapper so the commands that take `--store` keep one call.
 */
import { resolve } from "node:path";
import { cairnDir } from "../core/index.ts";

export function defaultStoreDir(env: NodeJS.ProcessEnv, cwd: string, flag?: string): string {
  if (flag !== undefined && flag !== "") return resolve(cwd, flag);
  return cairnDir("store", env, cwd);
}
