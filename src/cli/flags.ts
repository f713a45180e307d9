/**
 * Flag handling shared by several commands, and nothing else: repeatable
 * options, the clock (CAIRN_NOW, an RFC 3339 time, to reproduce a run), the
 * --timeout seconds, the closed-by-default signing flags (--key or an explicit
 * --unsigned), the --registry directory a publishing command writes to, and
 * `--base` turned into a probed base, and the registry flags (`--plain-http`, ...).
 * The library takes all of these as arguments; only the CLI reads them from
 * the command line and the process. Commands share these through this file
 * instead of importing each other.
 */
import { statSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { CairnError, readSigningKey, readVerifyingKey, type SigningKey } from "../core/index.ts";
import { directoryView } from "../tree/index.ts";
import {
  openPublishRegistry,
  openRegistries,
  parseMaxAge,
  probeOciBase,
  probeRoot,
  probedBase,
  readTrust,
  type ExportBase,
  type LayerRegistry,
  type LockBase,
  type RegistryPlace,
  type VerifyOptions,
} from "../strata/index.ts";
import type { Context } from "./context.ts";
import { remoteOptions, type RemoteFlags } from "./remote-flags.ts";

/** Commander's accumulator for a repeatable option. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** The time a command acts at: CAIRN_NOW when set (to reproduce a run), else the process clock. */
export function clock(env: NodeJS.ProcessEnv): Date {
  const fixed = env.CAIRN_NOW;
  if (fixed === undefined || fixed === "") return new Date();
  const t = Date.parse(fixed);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(fixed) || Number.isNaN(t)) throw new CairnError("USAGE", "CAIRN_NOW is not an RFC 3339 time");
  return new Date(t);
}

/** `--timeout SECONDS` → milliseconds (undefined: the library's default). */
export function parseTimeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,5}$/.test(value)) throw new CairnError("USAGE", "--timeout takes whole seconds", { path: "--timeout" });
  return Number(value) * 1000;
}

/** Signing is closed by default: --key, or an explicit --unsigned. */
export function signingKeys(o: { key?: string; unsigned?: boolean }): SigningKey[] {
  if (o.key !== undefined) return [readSigningKey(o.key)];
  if (o.unsigned === true) return [];
  throw new CairnError("USAGE", "give --key KEY to sign, or --unsigned to publish an unsigned document knowingly");
}

/** The registry a publishing command writes to: --registry DIR or oci://HOST/REPO, else the default registry; a directory is created only with --init-registry. */
export function openOrInit(ctx: Context, location: string | undefined, init: boolean | undefined, remote: RemoteFlags = {}): Promise<LayerRegistry> {
  return openPublishRegistry(registryPlace(ctx, remote), location, init === true);
}

/** Where registries are opened from: the command's environment, directory and registry flags. */
export function registryPlace(ctx: Context, remote: RemoteFlags): RegistryPlace {
  return { env: ctx.env, cwd: ctx.cwd, remote: remoteOptions(ctx, remote) };
}

/** `--base host | rootfs:DIR | oci:LAYOUT@sha256:DIGEST`, parsed (paths resolved against the cwd), not yet probed. */
export function parseBaseFlag(ctx: Context, flag: string): { readonly kind: "host" } | ExportBase {
  if (flag === "host") return { kind: "host" };
  if (flag.startsWith("rootfs:")) return { kind: "rootfs", dir: resolvePath(ctx.cwd, flag.slice("rootfs:".length)) };
  if (flag.startsWith("oci:")) {
    const m = /^(.+)@(sha256:[0-9a-f]{64})$/.exec(flag.slice("oci:".length));
    if (m === null) throw new CairnError("USAGE", "--base oci: needs LAYOUT@sha256:DIGEST (the image manifest digest)");
    return { kind: "oci", layoutDir: resolvePath(ctx.cwd, m[1]!), manifest: m[2]! };
  }
  throw new CairnError("USAGE", `--base ${JSON.stringify(flag).slice(0, 60)} is not host, rootfs:DIR or oci:LAYOUT@sha256:DIGEST`);
}

/** `--base host | rootfs:DIR | oci:LAYOUT@sha256:DIGEST` → a probed base; undefined means declared. */
export async function probeBaseFlag(ctx: Context, flag: string | undefined, now: Date): Promise<LockBase | undefined> {
  if (flag === undefined) return undefined;
  const b = parseBaseFlag(ctx, flag);
  if (b.kind === "host") return probedBase(await probeRoot(directoryView("/"), "host"), "host", now);
  if (b.kind === "rootfs") return probedBase(await probeRoot(directoryView(b.dir), b.dir), `rootfs:${b.dir}`, now);
  return probeOciBase({ layoutDir: b.layoutDir, manifestDigest: b.manifest, now });
}

/** The flags `lock verify` takes, shared by every command that verifies a lockfile before using it (`lock export`, `run LOCK`). */
export interface LockVerifyFlags extends RemoteFlags {
  pub?: string;
  registry: string[];
  trust: string[];
  maxAge?: string;
  allowUnsignedOffline?: boolean;
  base?: string;
  contents?: boolean;
}

export function withLockVerifyFlags(cmd: Command, pubRequired: boolean): Command {
  const pubHelp = "the Ed25519 public key the lockfile must be signed by";
  (pubRequired ? cmd.requiredOption("--pub <key>", pubHelp) : cmd.option("--pub <key>", `${pubHelp} (a lockfile input only)`))
    .option("--registry <dir>", "check every layer's manifest and blob bytes in this registry: a directory or oci://HOST/REPO (repeatable)", collect, [])
    .option(
      "--trust <keyfile://PATH>",
      "also verify each layer manifest's own signature with this key (repeatable); without --registry, on the manifests the lockfile embeds",
      collect,
      [],
    )
    .option("--max-age <age>", "refuse a lockfile older than this: a Go duration (90m, 1h30m, 720h), 30d or 2w; 0 for no bound")
    .option("--allow-unsigned-offline", "accept a lockfile whose policy is unsigned-offline")
    .option("--base <base>", "probe the base now (host, rootfs:DIR or oci:LAYOUT@sha256:DIGEST) and require the lockfile's base digest")
    .option("--contents", "with --registry: also unpack every layer and check it holds exactly the files its manifest lists");
  return cmd;
}

/** The verification the flags ask for, as `verifyLock` takes it (without the probed base). */
export async function lockVerifyOptions(ctx: Context, opts: LockVerifyFlags, now: Date): Promise<Omit<VerifyOptions, "probedBase">> {
  if (opts.pub === undefined) throw new CairnError("USAGE", "a lockfile is verified before use: give --pub KEY", { path: "--pub" });
  const maxAgeMs = opts.maxAge !== undefined ? parseMaxAge(opts.maxAge) : undefined;
  const regs = opts.registry.length > 0 ? await openRegistries({ ...registryPlace(ctx, opts), registries: opts.registry, trust: [] }) : [];
  return {
    keys: [readVerifyingKey(opts.pub)],
    now,
    ...(maxAgeMs !== undefined ? { maxAgeMs, maxAgeText: opts.maxAge! } : {}),
    registries: regs.map((r) => r.registry),
    layerKeys: opts.trust.map((t) => readTrust(t, ctx.cwd)),
    allowUnsignedOffline: opts.allowUnsignedOffline === true,
    progress: ctx.progress,
  };
}

/** `--base` for an export: a root directory or an OCI image whose bytes become the image's base (the host cannot be exported). */
export function exportBaseFlag(ctx: Context, flag: string | undefined): ExportBase {
  if (flag === undefined)
    throw new CairnError("USAGE", "an export needs the base's bytes: give --base rootfs:DIR or --base oci:LAYOUT@sha256:DIGEST", { path: "--base" });
  const b = parseBaseFlag(ctx, flag);
  if (b.kind === "host")
    throw new CairnError("EXPORT_REFUSED", "the host cannot be exported as an image base", {
      path: "--base",
      hint: "give --base rootfs:DIR or oci:LAYOUT@sha256:DIGEST",
    });
  return b;
}

/**
 * The program and arguments of a launch: `--cmd PROG ARG...` (commander reads
 * an argument that starts with `-` as an option), or everything after `--`
 * (`-- /bin/sh -c 'echo hi'`), never both. Undefined when neither was given.
 */
export function launchArgv(cmdFlag: readonly string[] | undefined, afterDashes: readonly string[]): string[] | undefined {
  if (cmdFlag !== undefined && afterDashes.length > 0)
    throw new CairnError("USAGE", "give the command either with --cmd or after --, not both", { path: "--cmd" });
  if (cmdFlag !== undefined) return [...cmdFlag];
  return afterDashes.length > 0 ? [...afterDashes] : undefined;
}

/** `--inputs-root DIR`, on every command that reads a spec's host paths (`run`, `workload check`, `workload assemble`). */
export const INPUTS_ROOT_HELP =
  "the directory a spec may read host files from: its source (binary path, OCI layout, lockfile), run.inputs and served directory may lie anywhere under it (absolute paths too); without it they must be relative and inside the spec's directory";

/** `--inputs-root DIR`: an existing directory (the user's choice, so a symlink to one is fine). */
export function inputsRootFlag(cwd: string, unsafeDir: string): string {
  const dir = resolvePath(cwd, unsafeDir);
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {}
  if (!isDir) throw new CairnError("USAGE", `--inputs-root ${dir} is not a directory`, { path: "--inputs-root", hint: "name an existing directory" });
  return dir;
}
