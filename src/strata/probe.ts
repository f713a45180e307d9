/**
 * The static base probe: reads a root filesystem (through a RootView) and
 * derives what it offers, without running anything from it.
 *
 * - os-release `ID` and `VERSION_ID` (from /etc/os-release, else
 *   /usr/lib/os-release) → the base name (`debian12`) and `os:<id>@<version>`;
 * - the architecture from the ELF header of /bin/sh (falling back to the
 *   dynamic loader's name);
 * - the C library: glibc's version from the `libc-X.Y.so` file name (older
 *   layouts) or from libc.so.6's "release version X.Y" banner, else its highest
 *   `GLIBC_X.Y` symbol version → `glibc@X.Y`, ABI `gnu`; a musl loader → ABI `musl`;
 * - the system compiler: when /usr/bin/gcc (or cc) exists, the highest
 *   /usr/lib/gcc/<triplet>/<version> → `gcc@<version>`.
 *
 * Capabilities come only from here; a profile can never hand-write them.
 */
import { CairnError } from "../core/index.ts";
import type { Capability } from "./capability.ts";
import { compareVersions, isVersion } from "./version.ts";
import { baseNameOf, type Arch } from "./platform.ts";
import { resolveInRoot, type RootView } from "../tree/index.ts";

export interface ProbeResult {
  readonly name: string;
  readonly os_id: string;
  readonly version_id: string;
  readonly arch: Arch;
  readonly abi: "gnu" | "musl" | "none";
  readonly capabilities: readonly Capability[];
}

/** probe.max_os_release_bytes, probe.max_libc_bytes */
export const PROBE_LIMITS = { osReleaseBytes: 64 * 1024, libcBytes: 32 * 1024 * 1024, elfHeaderBytes: 64 } as const;

/** ELF e_machine: EM_X86_64 0x3e, EM_AARCH64 0xb7, EM_RISCV 0xf3, EM_PPC64 0x15, EM_S390 0x16. */
const ELF_MACHINE: Readonly<Record<number, Arch>> = { 62: "x86_64", 183: "aarch64", 243: "riscv64", 21: "ppc64le", 22: "s390x" };
const LOADER_ARCH: ReadonlyArray<[RegExp, Arch]> = [
  [/^ld-linux-x86-64\.so\.2$|^ld-musl-x86_64\.so\.1$/, "x86_64"],
  [/^ld-linux-aarch64\.so\.1$|^ld-musl-aarch64\.so\.1$/, "aarch64"],
  [/^ld-linux-riscv64-lp64d\.so\.1$|^ld-musl-riscv64\.so\.1$/, "riscv64"],
];
const LIB_DIRS = [
  "/lib64",
  "/lib",
  "/usr/lib64",
  "/usr/lib",
  "/lib/x86_64-linux-gnu",
  "/lib/aarch64-linux-gnu",
  "/usr/lib/x86_64-linux-gnu",
  "/usr/lib/aarch64-linux-gnu",
];

/** `path` resolved inside the view's root (tree.max_symlink_hops applies), or undefined when it names nothing. */
function resolved(view: RootView, path: string): Promise<string | undefined> {
  return resolveInRoot((p) => view.lookup(p), path);
}

async function readResolved(view: RootView, path: string, max: number): Promise<Uint8Array | undefined> {
  const real = await resolved(view, path);
  return real === undefined ? undefined : view.readFile(real, max);
}

/** Parses os-release text: KEY=value lines, values optionally quoted. */
export function parseOsRelease(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m === null) continue;
    let v = m[2]!;
    if ((v.startsWith('"') && v.endsWith('"') && v.length >= 2) || (v.startsWith("'") && v.endsWith("'") && v.length >= 2))
      v = v.slice(1, -1).replace(/\\(.)/g, "$1");
    out.set(m[1]!, v);
  }
  return out;
}

async function probeArch(view: RootView, loaders: readonly string[]): Promise<Arch | undefined> {
  for (const p of ["/bin/sh", "/usr/bin/env", "/bin/busybox"]) {
    const h = await readResolved(view, p, PROBE_LIMITS.elfHeaderBytes).catch(() => undefined);
    if (h !== undefined && h.length >= 20 && h[0] === 0x7f && h[1] === 0x45 && h[2] === 0x4c && h[3] === 0x46) {
      const little = h[5] === 1;
      const machine = little ? h[18]! | (h[19]! << 8) : (h[18]! << 8) | h[19]!;
      const arch = ELF_MACHINE[machine];
      if (arch !== undefined) return arch;
    }
  }
  for (const name of loaders) for (const [re, arch] of LOADER_ARCH) if (re.test(name)) return arch;
  return undefined;
}

/** The glibc version from a libc.so.6 image: the release banner, else the highest GLIBC_X.Y symbol version. */
export function glibcVersionFromBytes(bytes: Uint8Array): string | undefined {
  const text = Buffer.from(bytes).toString("latin1");
  const banner = /release version (\d+\.\d+(?:\.\d+)?)/.exec(text);
  if (banner) return banner[1];
  let best: string | undefined;
  for (const m of text.matchAll(/GLIBC_(\d+\.\d+(?:\.\d+)?)/g)) if (best === undefined || compareVersions(m[1]!, best) > 0) best = m[1]!;
  return best;
}

async function probeLibc(view: RootView): Promise<{ abi: ProbeResult["abi"]; glibc?: string; loaders: string[] }> {
  const loaders: string[] = [];
  let glibc: string | undefined;
  let musl = false;
  for (const dir of LIB_DIRS) {
    const real = await resolved(view, dir).catch(() => undefined);
    const names = real === undefined ? undefined : await view.list(real);
    if (names === undefined) continue;
    for (const n of names) {
      if (/^ld-linux.*\.so\.\d$/.test(n)) loaders.push(n);
      if (/^ld-musl-.*\.so\.1$/.test(n)) {
        loaders.push(n);
        musl = true;
      }
      const old = /^libc-(\d+\.\d+(?:\.\d+)?)\.so$/.exec(n);
      if (old && glibc === undefined) glibc = old[1];
    }
    if (glibc === undefined && names.includes("libc.so.6")) {
      const node = await view.lookup(`${real}/libc.so.6`);
      const fromName = node?.type !== "symlink" ? undefined : /libc-(\d+\.\d+(?:\.\d+)?)\.so$/.exec(node.target)?.[1];
      if (fromName !== undefined) glibc = fromName;
      else {
        const bytes = await readResolved(view, `${real}/libc.so.6`, PROBE_LIMITS.libcBytes);
        if (bytes !== undefined) glibc = glibcVersionFromBytes(bytes);
      }
    }
  }
  const abi = glibc !== undefined ? "gnu" : musl ? "musl" : "none";
  return { abi, ...(glibc !== undefined ? { glibc } : {}), loaders };
}

async function probeGcc(view: RootView): Promise<string | undefined> {
  let present = false;
  for (const p of ["/usr/bin/gcc", "/usr/bin/cc"]) {
    const real = await resolved(view, p).catch(() => undefined);
    if (real !== undefined && (await view.readFile(real, 4)) !== undefined) present = true;
  }
  if (!present) return undefined;
  let best: string | undefined;
  const root = await resolved(view, "/usr/lib/gcc");
  if (root === undefined) return undefined;
  for (const triplet of (await view.list(root)) ?? []) {
    for (const v of (await view.list(`${root}/${triplet}`)) ?? []) {
      if (isVersion(v) && /^\d/.test(v) && (best === undefined || compareVersions(v, best) > 0)) best = v;
    }
  }
  return best;
}

/** Probes a root filesystem. Throws BASE_PROBE_FAILED naming what it could not find. */
export async function probeRoot(view: RootView, where: string): Promise<ProbeResult> {
  let osRelease: Uint8Array | undefined;
  for (const p of ["/etc/os-release", "/usr/lib/os-release"]) {
    osRelease = await readResolved(view, p, PROBE_LIMITS.osReleaseBytes);
    if (osRelease !== undefined) break;
  }
  if (osRelease === undefined) {
    throw new CairnError("BASE_PROBE_FAILED", `${where}: no /etc/os-release or /usr/lib/os-release`, {
      path: where,
      hint: "the base must be a Linux root filesystem with os-release",
    });
  }
  const osr = parseOsRelease(Buffer.from(osRelease).toString("utf8"));
  const os_id = osr.get("ID") ?? "";
  const version_id = osr.get("VERSION_ID") ?? "";
  const name = baseNameOf(os_id, version_id);
  if (name === undefined || !isVersion(version_id)) {
    throw new CairnError("BASE_PROBE_FAILED", `${where}: os-release has no usable ID and VERSION_ID`, { path: `${where}/etc/os-release` });
  }
  const libc = await probeLibc(view);
  const arch = await probeArch(view, libc.loaders);
  if (arch === undefined) {
    throw new CairnError("BASE_PROBE_FAILED", `${where}: cannot tell the architecture (no ELF /bin/sh, no known loader)`, { path: where });
  }
  const gcc = await probeGcc(view);
  const capabilities: Capability[] = [{ name: `os:${os_id}`, version: version_id }];
  if (libc.glibc !== undefined) capabilities.push({ name: "glibc", version: libc.glibc });
  if (gcc !== undefined) capabilities.push({ name: "gcc", version: gcc });
  return { name, os_id, version_id, arch, abi: libc.abi, capabilities };
}
