/** Test fixtures for strata: the example registry in a temp dir, plus helpers to load a catalog from it. */
import { after } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildExampleRegistry, type ExampleRegistry } from "../../examples/strata/build-registry.ts";
import {
  type Catalog,
  LocalRegistry,
  catalogFromRegistries,
  probeRoot,
  probedBase,
  resolveProfile,
  type LockBase,
  type Lockfile,
  type Profile,
} from "../../src/strata/index.ts";
import { runCli, type CliResult } from "../helpers/cli.ts";
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

/** Resolves the profile file `profile` against the example registry and rootfs with the CLI, trusting the registry key; signed with the example lock key unless `sign` is false. */
export async function resolveWithCli(
  ex: ExampleRegistry,
  profile: string,
  out: string,
  opts: { sign?: boolean; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  const sign = opts.sign === false ? [] : ["--sign", join(ex.root, "lock.key")];
  const args = ["resolve", profile, "--registry", ex.registry, "--trust", `keyfile://${ex.root}/registry.pub`, "--base", `rootfs:${ex.rootfs}`];
  return runCli([...args, ...sign, "--out", out], opts.env);
}

/** Resolves a parsed profile against the example registry and its probed rootfs, in-process. */
export async function resolveExample(ex: ExampleRegistry, profile: Profile): Promise<Lockfile> {
  return resolveProfile({ profile, catalog: catalogOf(ex), probedBase: await probedExampleBase(ex), allowUnsignedOffline: false, now: NOW, cairnVersion: "t" });
}
export { resolveArgs } from "../helpers/resolve-args.ts";
