/**
 * Files of cairn's own code and data, named by their path under the code
 * root: `src/` when the sources run under tsx, `dist/` when compiled. The
 * one rule for finding them; no other module builds a path from its own
 * `import.meta.url`.
 *
 * It holds in the three forms the code runs in because each puts this
 * module exactly one folder below the root: `src/core/code-path.ts`,
 * `dist/core/code-path.js`, and the CLI bundle `dist/cli/bundle.js` with its
 * chunks `dist/cli/bundle-<hash>.js` beside it (every module the CLI loads,
 * joined: there each module's `import.meta.url` is its bundle file's, so a
 * path relative to a module's own folder would name `dist/cli/`). Files outside the root (the package's `package.json`, the
 * agent's C sources) are named from it with `../`.
 */
import { extname } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = new URL("../", import.meta.url);
/** `.ts` under tsx, `.js` compiled (the bundle included). */
const EXT = extname(fileURLToPath(import.meta.url));

/** The code root's absolute path (src/ or dist/). */
export function codeRoot(): string {
  return fileURLToPath(ROOT);
}

/** The absolute path of `path` under the code root ("oci/schemas/defs.json", "../package.json"). */
export function codeFile(path: string): string {
  return fileURLToPath(new URL(path, ROOT));
}

/** A module of cairn's own to start apart (a worker, a child process), in the form this process runs: `codeModule("core/inflate-worker")`. */
export function codeModule(path: string): string {
  return codeFile(`${path}${EXT}`);
}

/** True when the sources run (under tsx), not the compiled code. */
export function runningSources(): boolean {
  return EXT === ".ts";
}
