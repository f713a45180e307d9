/**
 * Fetches the guest kernel from Debian's archive: resolves the ABI package
 * that `linux-image-cloud-amd64` depends on (it changes with updates), runs
 * `apt-get download` into a private temporary directory (or takes a local
 * .deb), and reads `./boot/vmlinuz-*` and the virtio modules the protocol
 * port needs out of the package's data tar (`dpkg-deb --fsys-tarfile`,
 * parsed with tar-stream; no tar process, nothing written outside the kit).
 * The kernel is Debian's own archive package, not a workload input.
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { Readable } from "node:stream";
import tarStream from "tar-stream";
import { CairnError } from "../core/index.ts";
import { runTool, toolEnv } from "./host.ts";

export const KERNEL_META_PACKAGE = "linux-image-cloud-amd64";
const APT_FIX = "cairn setup needs Debian's apt-get and dpkg-deb (a Debian 12 host) to fetch the guest kernel";
const KERNEL_MAX = 256 * 1024 * 1024;

/**
 * The kernel modules the agent loads, in load order (each after the ones its
 * `depends=` names). Debian's cloud kernel builds virtio as modules only;
 * these give the guest a virtio-serial port for the protocol, whose writes
 * QEMU's record/replay logs once per buffer instead of once per byte (the
 * 8250 UART costs about 14 bytes of replay log per byte of output).
 */
export const GUEST_MODULES = [
  ["virtio_ring", "drivers/virtio"],
  ["virtio", "drivers/virtio"],
  ["virtio_pci_modern_dev", "drivers/virtio"],
  ["virtio_pci_legacy_dev", "drivers/virtio"],
  ["virtio_pci", "drivers/virtio"],
  ["virtio_console", "drivers/char"],
] as const;

/**
 * The modules a disk-backed root (`run.root: disk`) adds after GUEST_MODULES,
 * in load order: the virtio block driver, erofs (which `depends=libcrc32c`)
 * and overlayfs for the fresh writable root per start. Debian's cloud kernel
 * builds all four as modules; ext4 is built in but `mkfs.ext4 -d` is not
 * reproducible, and erofs is simple enough for cairn to write (erofs.ts).
 */
export const DISK_MODULES = [
  ["virtio_blk", "drivers/block"],
  ["libcrc32c", "lib"],
  ["erofs", "fs/erofs"],
  ["overlay", "fs/overlayfs"],
] as const;

/**
 * The module a network run (`run.network`) adds last: VMware's paravirtual
 * NIC, which QEMU emulates as `-device vmxnet3`. Debian's cloud kernel has no
 * e1000, e1000e, rtl8139, ne2k or pcnet driver, and virtio-net replays hang
 * on QEMU 7.2 (bench/network/README.md); its `.modinfo` says `depends=`
 * (none), so it loads after the protocol's modules in any order.
 */
export const NET_MODULES = [["vmxnet3", "drivers/net/vmxnet3"]] as const;

/** Every module the kit keeps, in load order. */
export const KIT_MODULES = [...GUEST_MODULES, ...DISK_MODULES, ...NET_MODULES] as const;

/** The ABI package name, e.g. linux-image-6.1.0-57-cloud-amd64. */
export function resolveKernelPackage(): string {
  const r = runTool("apt-cache", ["depends", KERNEL_META_PACKAGE], { fix: APT_FIX });
  const m = /Depends:\s*(linux-image-[0-9][A-Za-z0-9.+-]*-cloud-amd64)\b/.exec(r.stdout.toString("utf8"));
  if (r.status !== 0 || m === null) {
    throw new CairnError("PREREQUISITE_MISSING", `cannot resolve the kernel package behind ${KERNEL_META_PACKAGE}`, {
      path: KERNEL_META_PACKAGE,
      hint: "run `apt-get update` (as root) so apt knows the package, then `cairn setup` again",
    });
  }
  return m[1]!;
}

export interface FetchedKernel {
  readonly packageFile: string;
  readonly fileName: string;
  readonly bytes: Buffer;
  /** In KIT_MODULES order. */
  readonly modules: ReadonlyArray<{ readonly name: string; readonly bytes: Buffer }>;
}

async function extractFromTar(tarBytes: Buffer, deb: string): Promise<Omit<FetchedKernel, "packageFile">> {
  const extract = tarStream.extract();
  let kernel: { name: string; bytes: Buffer } | undefined;
  const modules = new Map<string, Buffer>();
  const moduleRe = /^\.\/lib\/modules\/[^/]+\/kernel\/(drivers\/(?:virtio|char|block|net\/vmxnet3)|lib|fs\/erofs|fs\/overlayfs)\/([a-z0-9_]+)\.ko$/;
  const done = new Promise<void>((resolve, reject) => {
    extract.on("entry", (header, stream, next) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const isKernel = header.type === "file" && /^\.\/boot\/vmlinuz-[^/]+$/.test(header.name) && kernel === undefined;
      const m = header.type === "file" ? moduleRe.exec(header.name) : null;
      const isModule = m !== null && KIT_MODULES.some(([n, d]) => n === m[2] && d === m[1]);
      stream.on("data", (c: unknown) => {
        if (!isKernel && !isModule) return;
        size += (c as Buffer).length;
        if (size > KERNEL_MAX) reject(new CairnError("LIMIT_EXCEEDED", "limit kit.kernel-bytes exceeded", { path: header.name }));
        else chunks.push(c as Buffer);
      });
      stream.on("end", () => {
        if (isKernel) kernel = { name: header.name.slice("./boot/".length), bytes: Buffer.concat(chunks) };
        if (isModule) modules.set(m[2]!, Buffer.concat(chunks));
        next();
      });
      stream.resume();
    });
    extract.on("finish", resolve);
    extract.on("error", reject);
  });
  Readable.from([tarBytes]).pipe(extract);
  await done;
  if (kernel === undefined) throw new CairnError("PREREQUISITE_MISSING", `${deb} holds no ./boot/vmlinuz-*`, { path: deb });
  const missing = KIT_MODULES.filter(([n]) => !modules.has(n)).map(([n]) => n);
  if (missing.length > 0) {
    throw new CairnError("PREREQUISITE_MISSING", `${deb} lacks the kernel modules ${missing.join(", ")}`, {
      path: deb,
      hint: "use a Debian cloud kernel package (linux-image-*-cloud-amd64), which builds virtio as modules",
    });
  }
  return { fileName: kernel.name, bytes: kernel.bytes, modules: KIT_MODULES.map(([n]) => ({ name: n, bytes: modules.get(n)! })) };
}

/** The ABI package name; as root, refreshes apt's package lists once when they do not know it yet. */
function resolveWithUpdate(isRoot: boolean, log: (line: string) => void): string {
  try {
    return resolveKernelPackage();
  } catch (e) {
    if (!isRoot) throw e;
    log("apt does not know the kernel package yet; running apt-get update");
    runTool("apt-get", ["update", "-qq"], { fix: APT_FIX, env: toolEnv({ DEBIAN_FRONTEND: "noninteractive" }) });
    return resolveKernelPackage();
  }
}

/** Downloads the current cloud kernel package, or reads `localDeb`, and extracts the kernel and modules. */
export async function fetchKernel(log: (line: string) => void, localDeb?: string, isRoot = false): Promise<FetchedKernel> {
  const work = mkdtempSync(join(tmpdir(), "cairn-kernel-"));
  try {
    let deb: string | undefined;
    if (localDeb !== undefined) {
      deb = basename(localDeb);
      copyFileSync(localDeb, join(work, deb));
    } else {
      const packageName = resolveWithUpdate(isRoot, log);
      log(`downloading ${packageName} from the Debian archive`);
      const dl = runTool("apt-get", ["download", "-q", packageName], { cwd: work, fix: APT_FIX });
      deb = readdirSync(work).find((f) => f.endsWith(".deb"));
      if (dl.status !== 0 || deb === undefined) {
        throw new CairnError("PREREQUISITE_MISSING", `apt-get download ${packageName} failed:\n${dl.stderr}`, {
          path: packageName,
          hint: "check network access to the Debian archive, or run `apt-get update` as root first",
        });
      }
    }
    const tar = runTool("dpkg-deb", ["--fsys-tarfile", join(work, deb)], { fix: APT_FIX });
    if (tar.status !== 0) throw new CairnError("PREREQUISITE_MISSING", `dpkg-deb could not read ${deb}: ${tar.stderr}`, { path: deb });
    return { packageFile: deb, ...(await extractFromTar(tar.stdout, deb)) };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
