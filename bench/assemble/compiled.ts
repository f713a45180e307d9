/**
 * The cairn code the bench times: the compiled `dist/` that `bin/cairn.js`
 * runs, not `src/` through tsx's on-the-fly transform (which wraps every
 * closure it creates in a `__name` call: ~10% more CPU on the 20,000-file
 * layout, none of it cairn's). Refuses a `dist/` older than any file of
 * `src/`, so a stale build is never timed: run `npm run build` first.
 * Types are the sources' own.
 */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));

function newest(dir: string, ext: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(p, ext));
    else if (e.name.endsWith(ext)) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

let built = 0;
try {
  built = statSync(join(root, "dist", "index.js")).mtimeMs;
} catch {
  // no build at all: refused below
}
if (built === 0 || newest(join(root, "src"), ".ts") > built) {
  console.error("dist/ is missing or older than src/: run `npm run build` first (the bench times the compiled code the CLI runs)");
  process.exit(3);
}

const load = <T>(area: string): Promise<T> => import(join(root, "dist", area, "index.js")) as Promise<T>;
export const store = await load<typeof import("../../src/store/index.ts")>("store");
export const tree = await load<typeof import("../../src/tree/index.ts")>("tree");
export const oci = await load<typeof import("../../src/oci/index.ts")>("oci");
export const { STRICT_POLICY } = (await import(join(root, "dist", "tree", "layer-policy.js"))) as typeof import("../../src/tree/layer-policy.ts");
export const { readLayer } = (await import(join(root, "dist", "tree", "layer-reader.js"))) as typeof import("../../src/tree/layer-reader.ts");
export const { TarGate } = (await import(join(root, "dist", "tree", "tar-gate.js"))) as typeof import("../../src/tree/tar-gate.ts");
export const workload = await load<typeof import("../../src/workload/index.ts")>("workload");
