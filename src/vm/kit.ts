/**
 * The guest kit: what every run needs besides the workload — the QEMU
 * version, the Debian kernel and the guest agent, kept content-addressed so a
 * replay finds exactly the bytes its VM identity names, even after the kit
 * was refreshed:
 *
 *   <kit>/kit.json                   current kernel, agent and QEMU version
 *   <kit>/kernels/sha256/<hex>       kernels and their virtio modules by digest (0644, never rewritten)
 *   <kit>/agents/sha256/<hex>        agent builds by digest
 *
 * Location: `--kit`, else `$CAIRN_KIT`, else `$CAIRN_HOME/kit`, else
 * `$XDG_CACHE_HOME/cairn/kit`, else `~/.cache/cairn/kit` (core/locations.ts). No root is needed
 * once set up; only `setupKit` installs Debian packages, and only as root.
 *
 * Everything inside the kit is reached through core/owned-root.ts, one
 * component at a time without following a symlink (`readKitFile`): a
 * `kernels`, `agents`, `kit.json` or object planted as a symlink is refused
 * (ROOT_UNSAFE), never followed, whatever it points at (issue 31: a symlinked
 * `kit/kernels` was followed). The kit directory itself is the user's choice
 * of path and is followed like any root.
 */
import { existsSync, lstatSync, readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  CairnError,
  cairnDir,
  Checker,
  declareIdentity,
  digestComponents,
  ensureDirsIn,
  hasDirIn,
  identityDigest,
  withDirIn,
  FIXED_LIMIT_HINT,
  parseJsonBytes,
  readFileBounded,
  parseSha256,
  sha256,
  verifyDigest,
  writeFileAtomic,
  writeRefusal,
  type RootKind,
  type Sha256Digest,
} from "../core/index.ts";
import { AGENT_SOURCE_DIR } from "./agentbuild.ts";
import { runTool } from "./host.ts";
import { KIT_MODULES } from "./kernel.ts";
import { QEMU_BINARY, QEMU_FIX } from "./qemu.ts";

export const KIT_SCHEMA = "cairn.kit/2";
/** Bounds on what the kit reads back (it is a directory anyone with the user's rights could have edited). */
export const KIT_LIMITS = {
  /** A kernel, a virtio module or an agent build. */
  "kit.max_object_bytes": 512 * 1024 * 1024,
  /** kit.json */
  "kit.max_json_bytes": 1024 * 1024,
} as const;

/**
 * The kit root's marker (core/owned-root.ts). Kits made before markers are
 * recognised by their kit.json or object directories and marked on the next setup.
 */
export const KIT_ROOT: RootKind = {
  what: "guest kit",
  format: "cairn.kit-root/1",
  marker: "cairn-kit.json",
  mode: 0o755,
  legacyMarkers: ["kit.json", "kernels", "agents"],
  hint: "pass --kit (or CAIRN_KIT) with a new, empty or cairn-made directory",
};

/** Kits written before the guest carried kernel modules; treated as absent (set up again). */
const OLD_KIT_SCHEMAS = ["cairn.kit/1"];

export interface Kit {
  readonly dir: string;
  readonly qemu: string;
  readonly kernel: {
    readonly digest: Sha256Digest;
    readonly package: string;
    readonly file: string;
    /** Every module the guest may load, in load order (KIT_MODULES: the protocol's, then a disk root's), by digest. */
    readonly modules: ReadonlyArray<{ readonly name: string; readonly digest: Sha256Digest }>;
  };
  readonly agent: { readonly digest: Sha256Digest; readonly source: Sha256Digest; readonly compiler: string };
}

/** `--kit DIR` when given, else core's one default-location rule (`cairnDir("kit", ...)`). */
export function kitDir(env: NodeJS.ProcessEnv, cwd: string, flag?: string): string {
  if (flag) return resolve(cwd, flag);
  return cairnDir("kit", env, cwd);
}

/** The QEMU version string, e.g. "7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)". */
export function qemuVersion(): string {
  const r = runTool(QEMU_BINARY, ["--version"], { fix: QEMU_FIX });
  const m = /QEMU emulator version (\S+(?: \([^)]*\))?)/.exec(r.stdout.toString("utf8"));
  if (r.status !== 0 || m === null) throw new CairnError("PREREQUISITE_MISSING", "cannot read the QEMU version", { path: QEMU_BINARY, hint: QEMU_FIX });
  return m[1]!;
}

/** Integrity, not identity: notices an edited agent source tree so the kit rebuilds the agent. Recorded in the kit. */
export const AGENT_SOURCE_DIGEST = declareIdentity({
  name: "kit agent source digest",
  tag: KIT_SCHEMA,
  algorithm: "sha256",
  framing: "jcs",
  role: "integrity",
  definedIn: "src/vm/kit.ts",
});

/** Digest of the agent sources (sorted names and bytes), to notice an edited agent. */
export function agentSourceDigest(dir = AGENT_SOURCE_DIR): Sha256Digest {
  const files = readdirSync(dir)
    .filter((f) => /\.[ch]$/.test(f))
    .sort();
  return identityDigest(
    AGENT_SOURCE_DIGEST,
    files.map((f) => [f, sha256(readFileSync(join(dir, f)))]),
  );
}

function objectPath(dir: string, area: "kernels" | "agents", digest: Sha256Digest): string {
  const [alg, hex] = digestComponents(digest);
  return join(dir, area, alg, hex);
}

function errnoOf(e: unknown): string | undefined {
  return ((e as { cause?: { code?: string } } | null)?.cause as { code?: string } | undefined)?.code;
}

/**
 * Reads file `name` of directory `rel` inside the kit at `dir`, each
 * directory opened without following a symlink and the file itself with
 * O_NOFOLLOW; undefined when the directory or the file is absent. A symlink,
 * FIFO or anything but a regular file on the way is ROOT_UNSAFE naming its
 * kit path (the attack: a planted `kernels -> /elsewhere` made cairn boot
 * bytes from outside the kit, and the docs promised it would not).
 */
export function readKitFile(dir: string, rel: string, name: string, max: number, limit: string): Buffer | undefined {
  const shown = join(dir, rel, name);
  try {
    return withDirIn(dir, rel, (d) =>
      readFileBounded(`${d}/${name}`, max, limit, { limitHint: FIXED_LIMIT_HINT, missing: "IO_ERROR", notRegular: "ROOT_UNSAFE" }),
    );
  } catch (e) {
    if (!(e instanceof CairnError)) throw e;
    if (e.code === "IO_ERROR" && errnoOf(e) === "ENOENT") return undefined;
    // the reader names the descriptor path (/proc/self/fd/N/...); the user needs the kit's own
    if (e.path?.startsWith("/proc/self/fd/"))
      throw new CairnError(e.code, e.message.replace(e.path, shown), { path: shown, hint: e.hint ?? ROOT_UNSAFE_HINT, cause: e });
    throw e;
  }
}

const ROOT_UNSAFE_HINT = "something other than cairn changed the kit; remove what was planted there, or run `cairn setup` with a new --kit";

/** Whether the kit holds an object (a regular file, reached without following a symlink; anything else there is refused). */
export function hasKitObject(dir: string, area: "kernels" | "agents", digest: Sha256Digest): boolean {
  const [alg, hex] = digestComponents(digest);
  if (!hasDirIn(dir, `${area}/${alg}`)) return false;
  return withDirIn(dir, `${area}/${alg}`, (d) => {
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(`${d}/${hex}`);
    } catch {
      return false;
    }
    if (!st.isFile())
      throw new CairnError("ROOT_UNSAFE", `${objectPath(dir, area, digest)} is not a regular file; cairn does not follow or use it`, {
        path: objectPath(dir, area, digest),
        hint: ROOT_UNSAFE_HINT,
      });
    return true;
  });
}

/** Puts a kit object by its digest (written atomically, never rewritten; written through the held directory, never a symlink). */
export function putKitObject(dir: string, area: "kernels" | "agents", bytes: Buffer, options: { readonly replace?: boolean } = {}): Sha256Digest {
  try {
    return putKitObjectIn(dir, area, bytes, options.replace === true);
  } catch (e) {
    throw writeRefusal(dir, e, "into the guest kit"); // read-only or full media, named (issue 31), never INTERNAL
  }
}

/** `replace`: the present object was found corrupt, the verified bytes are written in its place (by rename). */
function putKitObjectIn(dir: string, area: "kernels" | "agents", bytes: Buffer, replace: boolean): Sha256Digest {
  const digest = sha256(bytes);
  ensureDirsIn(dir, [area, `${area}/sha256`], 0o755);
  if (!replace && hasKitObject(dir, area, digest)) return digest;
  const [alg, hex] = digestComponents(digest);
  withDirIn(dir, `${area}/${alg}`, (d) => writeFileAtomic(`${d}/${hex}`, bytes, { mode: 0o644 }), { write: true });
  return digest;
}

/** Reads a kit object by digest, verifying it; missing → VM_MISMATCH naming `field`. */
export function readKitObject(dir: string, area: "kernels" | "agents", digest: Sha256Digest, field: string): { path: string; bytes: Buffer } {
  const path = objectPath(dir, area, digest);
  const [alg, hex] = digestComponents(digest);
  const bytes = readKitFile(dir, `${area}/${alg}`, hex, KIT_LIMITS["kit.max_object_bytes"], "kit.max_object_bytes");
  if (bytes === undefined) {
    throw new CairnError("VM_MISMATCH", `the kit has no ${area === "kernels" ? "kernel object" : "agent"} ${digest}`, {
      path: field,
      hint: "this run was recorded with another kit; copy that kit's objects into this one or set CAIRN_KIT",
    });
  }
  verifyDigest(bytes, digest, path);
  return { path, bytes };
}

/**
 * The kit for a new record: its kit.json must list every module the guest
 * may load (KIT_MODULES); a kit set up before disk roots, or one an import
 * wrote with a single run's modules, reads as absent and is set up again.
 * A recorded run is replayed or bundled with `kitForRun`, which asks only
 * for what that run names.
 */
export function loadKit(dir: string): Kit | undefined {
  const kit = readKitJson(dir);
  // a kit set up before disk roots lacks their modules: treated as absent, so it is set up again
  if (kit === undefined || kit.kernel.modules.map((m) => m.name).join(",") !== KIT_MODULES.map(([n]) => n).join(",")) return undefined;
  return kit;
}

/** What a recorded run needs of a kit: the kernel, modules and agent its VM identity names, by digest. */
export interface KitNeeds {
  readonly kernel: Sha256Digest;
  readonly modules: ReadonlyArray<{ readonly name: string; readonly digest: Sha256Digest }>;
  readonly agent: Sha256Digest;
}

/**
 * The kit a recorded run is replayed or bundled with: every object the run
 * names is read from the kit and verified by its digest (VM_MISMATCH naming
 * the first one missing or damaged). What kit.json lists does not matter:
 * a kit imported from a bundle holds that run's modules only, and a kit
 * refreshed since the record names another kernel; both replay the run when
 * its objects are there. kit.json, when present and naming the same kernel
 * or agent, only lends their descriptive facts (package, file, compiler).
 * No kit at all is PREREQUISITE_MISSING.
 */
/** What kitForRun says of a kernel package, file or agent compiler its kit.json does not describe. */
export const UNKNOWN_KIT_FACT = "unknown";

export function kitForRun(dir: string, needs: KitNeeds, hint?: string): Kit {
  requireKit(dir, hint);
  readKitObject(dir, "kernels", needs.kernel, "/vm/kernel");
  for (const [i, m] of needs.modules.entries()) readKitObject(dir, "kernels", m.digest, `/vm/kernel_modules/${i}`);
  readKitObject(dir, "agents", needs.agent, "/vm/agent");
  const listed = readKitJson(dir);
  const sameKernel = listed?.kernel.digest === needs.kernel ? listed.kernel : undefined;
  const sameAgent = listed?.agent.digest === needs.agent ? listed.agent : undefined;
  return {
    dir,
    qemu: listed?.qemu ?? UNKNOWN_KIT_FACT,
    kernel: {
      digest: needs.kernel,
      package: sameKernel?.package ?? UNKNOWN_KIT_FACT,
      file: sameKernel?.file ?? UNKNOWN_KIT_FACT,
      modules: needs.modules,
    },
    agent: { digest: needs.agent, source: sameAgent?.source ?? needs.agent, compiler: sameAgent?.compiler ?? UNKNOWN_KIT_FACT },
  };
}

/** PREREQUISITE_MISSING unless `dir` holds a kit (its kit.json or object directories). */
export function requireKit(dir: string, hint = "run `cairn setup` first (or pass --kit)"): void {
  if (!["kit.json", "kernels", "agents"].some((n) => existsSync(join(dir, n))))
    throw new CairnError("PREREQUISITE_MISSING", `no guest kit at ${dir}`, { path: dir, hint });
}

/** kit.json parsed strictly, whatever modules it lists; undefined when absent or of an old schema. */
function readKitJson(dir: string): Kit | undefined {
  const file = join(dir, "kit.json");
  const bytes = readKitFile(dir, "", "kit.json", KIT_LIMITS["kit.max_json_bytes"], "kit.max_json_bytes");
  if (bytes === undefined) return undefined;
  const model = parseJsonBytes(bytes);
  const c = new Checker("RUN_INVALID");
  const o = c.object(model, "", ["schema", "qemu", "kernel", "agent"]);
  if (!o) {
    c.done("invalid kit.json");
    return undefined;
  }
  if (typeof o.schema === "string" && OLD_KIT_SCHEMAS.includes(o.schema)) return undefined;
  if (o.schema !== KIT_SCHEMA) c.add("/schema", `must be "${KIT_SCHEMA}"`);
  const k = c.object(o.kernel, "/kernel", ["digest", "package", "file", "modules"]);
  const mods = (k ? c.array(k.modules, "/kernel/modules") : undefined) ?? [];
  const modules = mods.map((m, i) => {
    const mo = c.object(m, `/kernel/modules/${i}`, ["name", "digest"]);
    return { name: c.string(mo?.name, `/kernel/modules/${i}/name`) ?? "", digest: mo?.digest };
  });
  const a = c.object(o.agent, "/agent", ["digest", "source", "compiler"]);
  const qemu = c.string(o.qemu, "/qemu");
  c.done(`invalid ${file}`, "run `cairn setup` again");
  const d = (v: unknown, p: string) => parseSha256(v, p);
  return {
    dir,
    qemu: qemu!,
    kernel: {
      digest: d(k!.digest, "/kernel/digest"),
      package: String(k!.package),
      file: String(k!.file),
      modules: modules.map((m, i) => ({ name: m.name, digest: d(m.digest, `/kernel/modules/${i}/digest`) })),
    },
    agent: { digest: d(a!.digest, "/agent/digest"), source: d(a!.source, "/agent/source"), compiler: String(a!.compiler) },
  };
}

export function writeKit(kit: Kit): void {
  const model = {
    schema: KIT_SCHEMA,
    qemu: kit.qemu,
    kernel: kit.kernel,
    agent: kit.agent,
  };
  try {
    writeFileAtomic(join(kit.dir, "kit.json"), `${JSON.stringify(model, null, 2)}\n`, { mode: 0o644 });
  } catch (e) {
    throw writeRefusal(kit.dir, e, "into the guest kit");
  }
}
