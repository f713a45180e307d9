/**
 * The launch model and its identity `cairn.launch/1`: exactly what the guest
 * agent will `execve`, with what environment, where and as whom. It is fixed
 * at assembly and never taken from the host or a per-run flag:
 *  - argv: from a binary spec, [install path, ...args]; from an OCI config,
 *    Entrypoint followed by Cmd. argv[0] must be an absolute path: there is no
 *    shell and no PATH search, so what runs is decided here, not in the guest.
 *  - env: "NAME=value" strings, names unique. From an OCI config, in the
 *    image's order (a program may read its environment in order, and the
 *    workload RFD keeps it), variables the spec adds after them sorted by the
 *    UTF-8 bytes of the name; from a binary spec (a map), sorted by the UTF-8
 *    bytes of the name. Nothing from the host environment is added.
 *  - workdir: an absolute, normalized path (for an OCI image, a directory
 *    of the tree itself, not missing and not reached through a symlink:
 *    oci-workload.ts).
 *  - an image config's Volumes, StopSignal and ArgsEscaped: true are refused:
 *    cairn provides no volumes, sends no stop signal and runs no Windows
 *    command line, so running such an image would silently differ from what
 *    the image asks for.
 *  - uid, gid: numeric and nonzero. A named user would be resolved against an
 *    /etc/passwd inside the image at run time, so it is refused; root is
 *    refused because a workload never needs to own the guest.
 * Env values are secrets for error purposes: messages name the variable, never its value.
 */
import { CairnError, checkLimit, compareBytes, declareIdentity, defineScope, identityDigest, type Sha256Digest } from "../core/index.ts";
import { isCanonicalPath } from "../tree/index.ts";

export const LAUNCH_IDENTITY_TAG = "cairn.launch/1";

export const LAUNCH_IDENTITY = declareIdentity({
  name: "launch identity",
  tag: LAUNCH_IDENTITY_TAG,
  algorithm: "sha256",
  framing: "tag-nul-jcs",
  role: "identity",
  definedIn: "src/workload/launch.ts",
});

/** The launch model is exactly what the agent executes, so the identity covers all of it. */
export const LAUNCH_IDENTITY_SCOPE = defineScope({
  identity: LAUNCH_IDENTITY_TAG,
  covers: {
    "/argv": "the program (an absolute path) and its arguments, exactly as execve receives them",
    "/env":
      "the whole environment in launch order (an image's own order, then the spec's additions sorted by name bytes; a binary spec's sorted by name bytes); nothing comes from the host",
    "/workdir": "the working directory the program starts in",
    "/uid": "the numeric user the program runs as",
    "/gid": "the numeric group the program runs as",
  },
  excludes: {},
});

/** Named launch limits (a kernel's ARG_MAX is the real ceiling; these stay well under it). */
export const LAUNCH_LIMITS = {
  "launch.argv_count": 4096,
  "launch.env_count": 4096,
  "launch.total_bytes": 128 * 1024,
} as const;

export interface Launch {
  readonly argv: readonly string[];
  readonly env: readonly string[];
  readonly workdir: string;
  readonly uid: number;
  readonly gid: number;
}

/** Raw OCI config launch fields, as the OCI reader hands them over (absent fields undefined). */
export interface OciLaunchFields {
  readonly entrypoint?: readonly string[] | undefined;
  readonly cmd?: readonly string[] | undefined;
  readonly env?: readonly string[] | undefined;
  readonly workingDir?: string | undefined;
  readonly user?: string | undefined;
  readonly volumes?: readonly string[] | undefined;
  readonly stopSignal?: string | undefined;
  readonly argsEscaped?: true | undefined;
}

function invalid(path: string, message: string, hint?: string): never {
  throw new CairnError("LAUNCH_INVALID", message, { path, hint });
}

const ID_RE = /^(0|[1-9][0-9]{0,9}):(0|[1-9][0-9]{0,9})$/;
const ID_MAX = 0xfffffffe; // 2^32-1 is (uid_t)-1, "no change" to the kernel

/** Parses `"uid:gid"`; both numeric, nonzero, below 2^32-1. */
export function parseUser(unsafeUser: string, path: string): { uid: number; gid: number } {
  const m = ID_RE.exec(unsafeUser);
  if (m === null) {
    invalid(
      path,
      'user must be numeric "uid:gid" (a named user is refused)',
      'write the numeric ids, e.g. "1000:1000"; names would be resolved inside the image at run time',
    );
  }
  const uid = Number(m[1]);
  const gid = Number(m[2]);
  if (uid > ID_MAX || gid > ID_MAX) invalid(path, "uid or gid out of range", "ids are below 4294967295");
  if (uid === 0 || gid === 0) invalid(path, "uid and gid must be nonzero (root is refused)", 'run as an unprivileged id, e.g. "1000:1000"');
  return { uid, gid };
}

function checkString(s: string, path: string, what: string): void {
  if (s.includes("\0")) invalid(path, `${what} holds a NUL byte`);
}

/**
 * Builds and checks a launch; `env` entries are "NAME=value". `envOrder`:
 * `sorted` (default; a binary spec's map) sorts them by the UTF-8 bytes of
 * the name, `kept` keeps them as given (an OCI image's Env, see launchFromOci).
 */
export function makeLaunch(
  unsafe: { argv: readonly string[]; env: readonly string[]; workdir: string; user: string },
  base: string,
  envOrder: "sorted" | "kept" = "sorted",
): Launch {
  const { uid, gid } = parseUser(unsafe.user, `${base}/user`);
  if (unsafe.argv.length === 0) invalid(`${base}/argv`, "the command is empty", "set an entrypoint or command");
  unsafe.argv.forEach((a, i) => {
    checkString(a, `${base}/argv/${i}`, "argument");
  });
  if (!unsafe.argv[0]!.startsWith("/")) {
    invalid(`${base}/argv/0`, "the program must be an absolute path (there is no shell and no PATH search)", "give the full path, e.g. /usr/bin/app");
  }
  if (!isCanonicalPath(unsafe.workdir)) invalid(`${base}/workdir`, "workdir must be an absolute, normalized path");
  const names = new Set<string>();
  const env: Array<[string, string]> = [];
  unsafe.env.forEach((kv, i) => {
    const eq = kv.indexOf("=");
    const name = eq < 0 ? kv : kv.slice(0, eq);
    if (eq <= 0) invalid(`${base}/env/${i}`, "environment entry is not NAME=value (value not shown)");
    checkString(kv, `${base}/env/${i}`, `environment variable ${name}`);
    if (names.has(name)) invalid(`${base}/env/${i}`, `environment variable ${name} is set twice`);
    names.add(name);
    env.push([name, kv]);
  });
  if (envOrder === "sorted") env.sort((a, b) => compareBytes(a[0], b[0]));
  const launch: Launch = { argv: [...unsafe.argv], env: env.map((e) => e[1]), workdir: unsafe.workdir, uid, gid };
  checkLimit("launch.argv_count", launch.argv.length, LAUNCH_LIMITS["launch.argv_count"], `${base}/argv`);
  checkLimit("launch.env_count", launch.env.length, LAUNCH_LIMITS["launch.env_count"], `${base}/env`);
  const total = [...launch.argv, ...launch.env].reduce((n, s) => n + Buffer.byteLength(s) + 1, 0);
  checkLimit("launch.total_bytes", total, LAUNCH_LIMITS["launch.total_bytes"], base, "bytes");
  return launch;
}

/**
 * The user an OCI image without `User` runs as: 65534:65534 (nobody:nogroup),
 * as the workload RFD says. Most upstream images set no User; refusing them
 * (the old rule) kept ordinary images out, and running them as root is never done.
 */
export const DEFAULT_OCI_USER = "65534:65534";

/**
 * The config fields a workload refuses, each naming its field (LAUNCH_INVALID),
 * in a fixed order: Volumes, StopSignal, ArgsEscaped. Empty when none is set.
 */
export function ociConfigRefusals(fields: OciLaunchFields, base = "/config/config"): CairnError[] {
  const out: CairnError[] = [];
  if (fields.volumes !== undefined && fields.volumes.length > 0)
    out.push(
      new CairnError("LAUNCH_INVALID", `the image declares Volumes (${fields.volumes.length}), which cairn does not provide`, {
        path: `${base}/Volumes`,
        hint: "a run has no volumes: the program would write into the image's own directories instead; rebuild the image without VOLUME",
      }),
    );
  if (fields.stopSignal !== undefined)
    out.push(
      new CairnError("LAUNCH_INVALID", "the image declares a StopSignal, which cairn never sends", {
        path: `${base}/StopSignal`,
        hint: "a run ends when the program exits or its step limit is reached; rebuild the image without STOPSIGNAL",
      }),
    );
  if (fields.argsEscaped === true)
    out.push(
      new CairnError("LAUNCH_INVALID", "the image sets ArgsEscaped: true (a Windows command line in one string)", {
        path: `${base}/ArgsEscaped`,
        hint: "cairn runs argv as given, with no command-line parsing; rebuild the image for Linux",
      }),
    );
  return out;
}

/**
 * The launch of an OCI image: Entrypoint+Cmd, Env (in the image's order),
 * WorkingDir (default "/"), User (default DEFAULT_OCI_USER). Volumes,
 * StopSignal and ArgsEscaped: true are refused (ociConfigRefusals).
 */
export function launchFromOci(fields: OciLaunchFields, base = "/config/config"): Launch {
  const refused = ociConfigRefusals(fields, base);
  if (refused.length > 0) throw refused[0];
  return makeLaunch(
    {
      argv: [...(fields.entrypoint ?? []), ...(fields.cmd ?? [])],
      env: fields.env ?? [],
      workdir: fields.workingDir === undefined || fields.workingDir === "" ? "/" : fields.workingDir,
      user: fields.user === undefined || fields.user === "" ? DEFAULT_OCI_USER : fields.user,
    },
    base,
    "kept",
  );
}

/**
 * The image's launch fields with the spec's `source.oci.launch` over them:
 * `args` replaces Cmd, `env` sets variables by name (replacing the image's
 * entry of that name in place, else appended; the appended ones sorted by
 * the UTF-8 bytes of the name, since the spec's map has no order that
 * survives its canonical form), `workdir` and `user` replace WorkingDir and User.
 */
export function ociLaunchWithSpec(
  image: OciLaunchFields,
  spec: { readonly args?: readonly string[]; readonly env?: ReadonlyMap<string, string>; readonly workdir?: string; readonly user?: string } | undefined,
): OciLaunchFields {
  if (spec === undefined) return image;
  let env = image.env;
  if (spec.env !== undefined) {
    const out = [...(image.env ?? [])];
    const added: Array<[string, string]> = [];
    for (const [name, value] of spec.env) {
      const i = out.findIndex((kv) => kv === name || kv.startsWith(`${name}=`));
      if (i >= 0) out[i] = `${name}=${value}`;
      else added.push([name, `${name}=${value}`]);
    }
    added.sort((a, b) => compareBytes(a[0], b[0]));
    env = [...out, ...added.map((a) => a[1])];
  }
  return {
    ...image,
    entrypoint: image.entrypoint,
    cmd: spec.args ?? image.cmd,
    env,
    workingDir: spec.workdir ?? image.workingDir,
    user: spec.user ?? image.user,
  };
}

/** The JSON model hashed for the identity and stored in derived entries. */
export function launchModel(l: Launch): { argv: string[]; env: string[]; workdir: string; uid: number; gid: number } {
  return { argv: [...l.argv], env: [...l.env], workdir: l.workdir, uid: l.uid, gid: l.gid };
}

/** The `cairn.launch/1` identity. */
export function launchIdentity(l: Launch): Sha256Digest {
  return identityDigest(LAUNCH_IDENTITY, launchModel(l));
}
