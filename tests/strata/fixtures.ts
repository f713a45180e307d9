/** Test fixtures for strata: the example registry in a temp dir, plus helpers to load a catalog from it. */
import { after } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildExampleRegistry, type ExampleRegistry } from "../../examples/strata/build-registry.ts";
import { type Catalog, LocalRegistry, catalogFromRegistries, probeRoot, probedBase, type LockBase } from "../../src/strata/index.ts";
import { directoryView } from "../../src/tree/index.ts";
import type { VerifyingKey } from "../../src/core/index.ts";

const created: string[] = [];
after(() => {
  for (const d of created) rmSync(d, { recursive: true, force: true });
});

/** A fresh temporary directory, removed when the test file ends. */
export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  created.push(d);
  return d;
}

export function exampleRegistry(): ExampleRegistry {
  return buildExampleRegistry(tempDir("cairn-strata-"));
}

export function catalogOf(ex: ExampleRegistry, keys: readonly VerifyingKey[] = [ex.registryKey]): Catalog {
  return catalogFromRegistries([{ registry: LocalRegistry.open(ex.registry), source: { url: ex.registry, keys } }]);
}

export const NOW = new Date("2026-03-01T12:00:00.000Z");

export async function probedExampleBase(ex: ExampleRegistry, now = NOW): Promise<LockBase> {
  return probedBase(await probeRoot(directoryView(ex.rootfs), ex.rootfs), "rootfs:example", now);
}

export { resolveArgs } from "../helpers/resolve-args.ts";
