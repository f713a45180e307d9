/**
 * A lock export whose every input is fixed: keys from fixed seeds, a toy
 * rootfs, layers built from directories written here, a catalog whose source
 * is named by a constant (so no temporary path reaches the lockfile), the
 * fixed clock and tool version. The exported manifest digest is then a
 * function of the code alone, so a test can pin it.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { writeToyRootfs } from "../../examples/strata/build-registry.ts";
import { signingKeyFromSeed, type SigningKey } from "../../src/core/index.ts";
import {
  buildLayerFromDirectory,
  catalogFromRegistries,
  exportLock,
  LocalRegistry,
  parseModuleEnv,
  parseProfileText,
  probedBase,
  probeRoot,
  resolveProfile,
  writeLockfile,
  type LayerSpec,
  type Lockfile,
} from "../../src/strata/index.ts";
import { directoryView } from "../../src/tree/index.ts";
import { NOW, tempDir } from "./fixtures.ts";

export const REGISTRY_KEY: SigningKey = signingKeyFromSeed(Buffer.alloc(32, 1));
export const LOCK_KEY: SigningKey = signingKeyFromSeed(Buffer.alloc(32, 2));

export interface PinnedFixture {
  readonly root: string;
  readonly rootfs: string;
  readonly registry: LocalRegistry;
  readonly lockPath: string;
  readonly lock: Lockfile;
}

function spec(name: string, version: string): LayerSpec {
  return {
    name,
    version,
    arch: "noarch",
    abi: "none",
    install_layout: "prefix",
    user_selectable: true,
    provides: [{ name, version }] as never,
    requires: [],
    builder: "cairn test",
  };
}

/** A layer source with bin/NAME (a shell script) and lib/. */
function layerSource(root: string, name: string): string {
  const src = join(root, `src-${name}`);
  mkdirSync(join(src, "bin"), { recursive: true });
  mkdirSync(join(src, "lib"));
  writeFileSync(join(src, "bin", name), `#!/bin/sh\necho ${name}\n`, { mode: 0o755 });
  return src;
}

export interface FixtureOptions {
  /** Give the `hello` layer a generated modulefile setting HELLO_GREETING. */
  readonly modulefile?: boolean;
  /** The profile's `defaults` as YAML (`[hello@1.0]`). */
  readonly defaults?: string;
  /** Extra profile lines (a `packages:` block). */
  readonly extra?: string;
}

/** Registry with `hello` 1.0 and `tools` 2.0, a profile selecting both, resolved and signed with LOCK_KEY. */
export async function pinnedFixture(o: FixtureOptions = {}): Promise<PinnedFixture> {
  const root = tempDir("cairn-export-pin-");
  const rootfs = join(root, "rootfs");
  mkdirSync(rootfs);
  writeToyRootfs(rootfs);
  const registry = LocalRegistry.init(join(root, "registry"));
  const hello = buildLayerFromDirectory(layerSource(root, "hello"), {
    ...spec("hello", "1.0"),
    ...(o.modulefile ? { modulefile: { kind: "generated" as const, env: parseModuleEnv(["HELLO_GREETING=hi there"]) } } : {}),
  });
  registry.publishLayer(hello.blob.blob, hello.manifest, [REGISTRY_KEY]);
  const tools = buildLayerFromDirectory(layerSource(root, "tools"), spec("tools", "2.0"));
  registry.publishLayer(tools.blob.blob, tools.manifest, [REGISTRY_KEY]);
  const catalog = catalogFromRegistries([{ registry, source: { url: "toy-registry", keys: [REGISTRY_KEY] } }]);
  const defaults = o.defaults !== undefined ? `defaults: ${o.defaults}\n` : "";
  const text = `name: pinned\nversion: "1"\nbase: {os: debian12}\nsoftware: [hello@1.0, tools@2.0]\nenv: {LC_ALL: C.UTF-8}\n${defaults}${o.extra ?? ""}`;
  const base = probedBase(await probeRoot(directoryView(rootfs), rootfs), "rootfs:toy", NOW);
  const lock = resolveProfile({ profile: parseProfileText(text), catalog, probedBase: base, allowUnsignedOffline: false, now: NOW, cairnVersion: "t" });
  const lockPath = join(root, "env.lock");
  writeLockfile(lockPath, lock, LOCK_KEY);
  return { root, rootfs, registry, lockPath, lock };
}

/** Exports the fixture's lock onto its rootfs at `out` (in-process). */
export function exportFixture(f: PinnedFixture, out: string, extra: Partial<Parameters<typeof exportLock>[0]> = {}): ReturnType<typeof exportLock> {
  return exportLock({
    lockPath: f.lockPath,
    verify: { keys: [LOCK_KEY], now: NOW, registries: [f.registry], layerKeys: [REGISTRY_KEY], allowUnsignedOffline: false },
    base: { kind: "rootfs", dir: f.rootfs },
    launch: { user: "1000:1000", workdir: "/" },
    outDir: out,
    ...extra,
  });
}
