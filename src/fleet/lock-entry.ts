/**
 * A `lock:` entry of a record campaign: an environment lockfile and the
 * verification policy `cairn run LOCKFILE` takes on its command line
 * (`--pub`, `--registry`, `--base`, `--cmd`, `--user`, `--workdir`), given
 * as fields of the entry:
 *
 *   - lock: ./env.lock
 *     pub: ./lock.pub                      # the key the lockfile must be signed by
 *     registry: [./registry]               # a directory or oci://HOST/REPO; one or a list
 *     base: rootfs:./rootfs                # or oci:LAYOUT@sha256:DIGEST (the host cannot be exported)
 *     cmd: [/usr/local/bin/prog, arg]
 *     user: "1000:1000"                    # optional, as --user
 *     workdir: /                           # optional, as --workdir
 *
 * Strict: an unknown field is refused, a missing required one is named, and
 * every path is made absolute against the campaign file's directory, so the
 * plan (campaign.json) holds the whole policy and a task reads it from
 * there, never from argv. The policy holds no secret: a public key, paths,
 * a command. A lock run has no run section (the exported spec carries none),
 * so a matrix has nothing to vary in it and is refused on a campaign that
 * names a lock (campaign-file.ts).
 *
 * The policy is turned into `exportLock`'s options by this one function for
 * both the plan (which verifies and exports the lockfile to name its task by
 * the workload identity, vm/lockfile-run.ts `assembleLockfileWorkload`) and
 * the task (which records it with `recordLockfileRun`).
 */
import { isAbsolute, resolve } from "node:path";
import { childPath, readVerifyingKey, type Checker, type JsonObject } from "../core/index.ts";
import type { RemoteOptions } from "../oci/index.ts";
import { DEFAULT_EXPORT_LAUNCH, openRegistries, type ExportBase, type ExportLockOptions } from "../strata/index.ts";

export interface LockPolicy {
  /** The public key file (absolute). */
  readonly pub: string;
  /** Registry directories (absolute) or `oci://HOST/REPO` (as written). */
  readonly registry: readonly string[];
  /** `rootfs:/ABS` or `oci:/ABS@sha256:…`. */
  readonly base: string;
  readonly cmd: readonly string[];
  readonly user: string;
  readonly workdir: string;
}

export const LOCK_ENTRY_FIELDS = ["lock", "pub", "registry", "base", "cmd", "user", "workdir"] as const;

const OCI_BASE = /^(.+)@(sha256:[0-9a-f]{64})$/;

function absolute(base: string, p: string): string {
  return isAbsolute(p) ? p : resolve(base, p);
}

/**
 * Reads the policy fields of a `lock:` entry (`o`, at pointer `at`), paths
 * made absolute against `dir`; undefined when one is missing or wrong (each
 * said to `c` with its pointer).
 */
export function readLockPolicy(c: Checker, o: JsonObject, at: string, dir: string): LockPolicy | undefined {
  const str = (k: string) => c.string(c.required(o, k, at), childPath(at, k), { nonEmpty: true });
  const pub = str("pub");
  let unsafeRegs: string[] | undefined;
  if (!Object.hasOwn(o, "registry"))
    c.add(childPath(at, "registry"), "is required: the lockfile's layers are read and checked from it (as `cairn run LOCKFILE --registry`)");
  else unsafeRegs = typeof o.registry === "string" ? [o.registry] : c.stringArray(o.registry, childPath(at, "registry"));
  if (unsafeRegs !== undefined && unsafeRegs.length === 0) c.add(childPath(at, "registry"), "must name at least one registry");
  if (unsafeRegs?.some((r) => r === "" || r.includes("\0"))) {
    c.add(childPath(at, "registry"), "must not name an empty path or hold a NUL");
    unsafeRegs = undefined;
  }
  const unsafeBase = str("base");
  let base: string | undefined;
  if (unsafeBase !== undefined) {
    if (unsafeBase.startsWith("rootfs:") && unsafeBase.length > "rootfs:".length) base = `rootfs:${absolute(dir, unsafeBase.slice("rootfs:".length))}`;
    else if (unsafeBase.startsWith("oci:")) {
      const m = OCI_BASE.exec(unsafeBase.slice("oci:".length));
      if (m === null) c.add(childPath(at, "base"), "oci: needs LAYOUT@sha256:DIGEST (the image manifest digest)");
      else base = `oci:${absolute(dir, m[1]!)}@${m[2]!}`;
    } else c.add(childPath(at, "base"), "must be rootfs:DIR or oci:LAYOUT@sha256:DIGEST (the host cannot be exported as an image base)");
  }
  const cmd = c.stringArray(c.required(o, "cmd", at), childPath(at, "cmd"));
  if (cmd !== undefined && cmd.length === 0) c.add(childPath(at, "cmd"), "must name the program (an absolute path) and its arguments");
  const user = Object.hasOwn(o, "user") ? c.string(o.user, childPath(at, "user"), { nonEmpty: true }) : DEFAULT_EXPORT_LAUNCH.user;
  const workdir = Object.hasOwn(o, "workdir") ? c.string(o.workdir, childPath(at, "workdir"), { nonEmpty: true }) : DEFAULT_EXPORT_LAUNCH.workdir;
  for (const [k, v] of [
    ["pub", pub],
    ["base", base],
    ["user", user],
    ["workdir", workdir],
  ] as const)
    if (v?.includes("\0")) c.add(childPath(at, k), "must not hold a NUL");
  if (pub === undefined || unsafeRegs === undefined || unsafeRegs.length === 0 || base === undefined || cmd === undefined || cmd.length === 0) return undefined;
  if (user === undefined || workdir === undefined) return undefined;
  return {
    pub: absolute(dir, pub),
    registry: unsafeRegs.map((r) => (r.startsWith("oci://") ? r : absolute(dir, r))),
    base,
    cmd,
    user,
    workdir,
  };
}

/** The policy's base as `exportLock` takes it. */
function exportBase(base: string): ExportBase {
  if (base.startsWith("rootfs:")) return { kind: "rootfs", dir: base.slice("rootfs:".length) };
  const m = OCI_BASE.exec(base.slice("oci:".length))!;
  return { kind: "oci", layoutDir: m[1]!, manifest: m[2]! };
}

export interface LockExportPlace {
  /** The environment `oci://` registry credentials are read from (by their files' names). */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly remote?: RemoteOptions;
  /** The content store `oci://` registry blobs are cached in (the campaign's). */
  readonly storeDir: string;
  readonly now: Date;
}

/** `exportLock`'s options for a lock entry: what `cairn run LOCKFILE` builds from its flags (cli/flags.ts `lockVerifyOptions`). */
export async function lockExportOptions(lockPath: string, policy: LockPolicy, place: LockExportPlace): Promise<Omit<ExportLockOptions, "outDir">> {
  const regs = await openRegistries({
    env: place.env,
    cwd: "/",
    storeDir: place.storeDir,
    ...(place.remote !== undefined ? { remote: place.remote } : {}),
    registries: [...policy.registry],
    trust: [],
  });
  return {
    lockPath,
    verify: { keys: [readVerifyingKey(policy.pub)], now: place.now, registries: regs.map((r) => r.registry), layerKeys: [], allowUnsignedOffline: false },
    base: exportBase(policy.base),
    launch: { argv: policy.cmd, user: policy.user, workdir: policy.workdir },
  };
}
