/**
 * Locates the official test vectors in ../shared/vectors (beside the project
 * root). Tests that need them skip with a clear reason when the folder is absent.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

export const PROJECT_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const VECTORS_DIR = process.env.CAIRN_VECTORS ?? join(PROJECT_ROOT, "..", "shared", "vectors");

export function vectorsPath(...parts: string[]): string | undefined {
  const p = join(VECTORS_DIR, ...parts);
  return existsSync(p) ? p : undefined;
}

/** The `skip` option for node:test: false when present, else a reason naming the folder. */
export function skipUnlessVectors(...parts: string[]): false | string {
  return vectorsPath(...parts) ? false : `official vectors not found at ${join(VECTORS_DIR, ...parts)} — skipped`;
}
