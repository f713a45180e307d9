/**
 * Setting up the guest kit (`cairn setup`, and the tests' shared kit): the
 * Debian packages the host needs, the kernel fetched once, the agent built
 * reproducibly, all under one setup lock so concurrent setups do not race.
 * Reading and checking a kit that exists is kit.ts; this file only makes one.
 */
import { closeSync, existsSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { CairnError, createExclusive, openRoot, readFilePrefix } from "../core/index.ts";
import { buildAgent } from "./agentbuild.ts";
import { hasTool, runTool, toolEnv } from "./host.ts";
import { fetchKernel } from "./kernel.ts";
import { QEMU_BINARY } from "./qemu.ts";

import { agentSourceDigest, hasKitObject, qemuVersion, KIT_ROOT, loadKit, putKitObject, writeKit, type Kit } from "./kit.ts";

export interface SetupOptions {
  readonly dir: string;
  /** Fetch the kernel again even when the kit has one. */
  readonly refreshKernel?: boolean;
  /** Use this local Debian kernel package (.deb) instead of downloading one. */
  readonly kernelDeb?: string;
  readonly isRoot: boolean;
  readonly log: (line: string) => void;
}

/** Debian packages a run needs, with the command that shows they are there. */
export const HOST_PACKAGES: ReadonlyArray<{ pkg: string; present: () => boolean }> = [
  { pkg: "qemu-system-x86", present: () => hasTool(QEMU_BINARY) },
  { pkg: "gcc", present: () => hasTool("gcc") },
  { pkg: "libc6-dev", present: () => existsSync("/usr/lib/x86_64-linux-gnu/libc.a") },
  // the connector QEMU's guestfwd runs per guest connection of a `run.network` run (responder-host.ts)
  { pkg: "socat", present: () => hasTool("socat") },
  // qemu-img makes the qcow2 a record's `run.checkpoints` are saved into (checkpoint-take.ts)
  { pkg: "qemu-utils", present: () => hasTool("qemu-img") },
];

export function missingPackages(): string[] {
  return HOST_PACKAGES.filter((p) => !p.present()).map((p) => p.pkg);
}

function installPackages(missing: string[], isRoot: boolean, log: (line: string) => void): void {
  const fix = `apt-get install -y --no-install-recommends ${missing.join(" ")}`;
  if (!isRoot) {
    throw new CairnError("PREREQUISITE_MISSING", `missing Debian packages: ${missing.join(", ")}`, {
      path: missing[0],
      hint: `run: sudo ${fix}   (then cairn setup again)`,
    });
  }
  log(`installing ${missing.join(" ")}`);
  const env = toolEnv({ DEBIAN_FRONTEND: "noninteractive" });
  runTool("apt-get", ["update", "-qq"], { env, fix: "a Debian host with apt-get" });
  const r = runTool("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing], { env, fix: "a Debian host with apt-get" });
  if (r.status !== 0) throw new CairnError("PREREQUISITE_MISSING", `apt-get install failed:\n${r.stderr}`, { path: missing[0], hint: fix });
}

/** Installs what is missing, builds the agent, fetches the kernel, writes kit.json. */
export async function setupKit(opts: SetupOptions): Promise<Kit> {
  const missing = missingPackages();
  if (missing.length > 0) installPackages(missing, opts.isRoot, opts.log);
  openRoot(opts.dir, KIT_ROOT, { create: true });
  const qemu = qemuVersion();
  const previous = loadKit(opts.dir);
  opts.log("building the guest agent twice and comparing");
  const agent = buildAgent();
  const agentDigest = putKitObject(opts.dir, "agents", agent.bytes);
  let kernel = previous?.kernel;
  const complete = kernel !== undefined && [kernel.digest, ...kernel.modules.map((m) => m.digest)].every((d) => hasKitObject(opts.dir, "kernels", d));
  if (opts.kernelDeb !== undefined || opts.refreshKernel || !complete) {
    const k = await fetchKernel(opts.log, opts.kernelDeb, opts.isRoot);
    kernel = {
      digest: putKitObject(opts.dir, "kernels", k.bytes),
      package: k.packageFile,
      file: k.fileName,
      modules: k.modules.map((m) => ({ name: m.name, digest: putKitObject(opts.dir, "kernels", m.bytes) })),
    };
  }
  if (kernel === undefined) throw new Error("unreachable: a kernel was just fetched");
  const kit: Kit = {
    dir: opts.dir,
    qemu,
    kernel,
    agent: { digest: agentDigest, source: agentSourceDigest(), compiler: agent.compiler },
  };
  writeKit(kit);
  return kit;
}

const LOCK_WAIT_MS = 15 * 60 * 1000;

/**
 * Runs `fn` holding `<kit>/.setup.lock` (O_EXCL, holding our pid), so two
 * processes setting up one kit (parallel test files, two shells) do not both
 * download the kernel or race apt. A lock whose pid is gone is stale.
 */
async function withSetupLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  openRoot(dir, KIT_ROOT, { create: true });
  const lock = join(dir, ".setup.lock");
  const started = Date.now();
  for (;;) {
    try {
      const fd = createExclusive(lock, 0o644);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (e) {
      if ((e as { code?: string }).code !== "EEXIST") throw e;
      // read without following a symlink planted there (the lock sits in the kit's root)
      const pid = Number(readFilePrefix(lock, 32)?.toString("utf8") || "0");
      let alive = pid > 0;
      try {
        if (alive) process.kill(pid, 0);
      } catch {
        alive = false;
      }
      if (!alive) rmSync(lock, { force: true });
      else if (Date.now() - started > LOCK_WAIT_MS) throw new CairnError("RUN_INFRASTRUCTURE", `another process (pid ${pid}) holds ${lock}`, { path: lock });
      else await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

/**
 * The kit for a new record: set up when absent, the agent rebuilt when its
 * sources changed since setup. Never installs packages unless `isRoot`.
 */
export async function ensureKit(opts: SetupOptions): Promise<Kit> {
  const current = loadKit(opts.dir);
  if (current !== undefined && current.agent.source === agentSourceDigest()) return current;
  return withSetupLock(opts.dir, () => ensureKitLocked(opts));
}

async function ensureKitLocked(opts: SetupOptions): Promise<Kit> {
  const kit = loadKit(opts.dir); // another process may have finished while we waited
  if (kit === undefined) return setupKit(opts);
  if (kit.agent.source !== agentSourceDigest()) {
    opts.log("the agent sources changed since setup; rebuilding the agent");
    const agent = buildAgent();
    const updated: Kit = { ...kit, agent: { digest: putKitObject(kit.dir, "agents", agent.bytes), source: agentSourceDigest(), compiler: agent.compiler } };
    writeKit(updated);
    return updated;
  }
  return kit;
}
