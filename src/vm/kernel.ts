/**
 * Fetches the guest kernel from Debian's archive: resolves the ABI package
 * that `linux-image-cloud-amd64` depends on (it changes with updates), runs
 * `apt-get download` into a private temporary directory, and reads
 * `./boot/vmlinuz-*` out of the package's data tar (`dpkg-deb --fsys-tarfile`,
 * parsed with tar-stream; no tar process, nothing written outside the kit).
 * The kernel is Debian's own signed-archive package, not a workload input.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import tarStream from "tar-stream";
import { CairnError } from "../core/index.ts";
import { runTool } from "./host.ts";

export const KERNEL_META_PACKAGE = "linux-image-cloud-amd64";
const APT_FIX = "cairn setup needs Debian's apt-get and dpkg-deb (a Debian 12 host) to fetch the guest kernel";
const KERNEL_MAX = 256 * 1024 * 1024;

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
  readonly packageName: string;
  readonly packageFile: string;
  readonly fileName: string;
  readonly bytes: Buffer;
}

async function extractVmlinuz(tarBytes: Buffer): Promise<{ name: string; bytes: Buffer } | undefined> {
  const extract = tarStream.extract();
  let found: { name: string; bytes: Buffer } | undefined;
  const done = new Promise<void>((resolve, reject) => {
    extract.on("entry", (header, stream, next) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const want = header.type === "file" && /^\.\/boot\/vmlinuz-[^/]+$/.test(header.name) && found === undefined;
      stream.on("data", (c: unknown) => {
        if (!want) return;
        size += (c as Buffer).length;
        if (size > KERNEL_MAX) reject(new CairnError("LIMIT_EXCEEDED", "limit kit.kernel-bytes exceeded", { path: header.name }));
        else chunks.push(c as Buffer);
      });
      stream.on("end", () => {
        if (want) found = { name: header.name.slice("./boot/".length), bytes: Buffer.concat(chunks) };
        next();
      });
      stream.resume();
    });
    extract.on("finish", resolve);
    extract.on("error", reject);
  });
  Readable.from([tarBytes]).pipe(extract);
  await done;
  return found;
}

export async function fetchKernel(log: (line: string) => void): Promise<FetchedKernel> {
  const packageName = resolveKernelPackage();
  const work = mkdtempSync(join(tmpdir(), "cairn-kernel-"));
  try {
    log(`downloading ${packageName} from the Debian archive`);
    const dl = runTool("apt-get", ["download", "-q", packageName], { cwd: work, fix: APT_FIX });
    const deb = readdirSync(work).find((f) => f.endsWith(".deb"));
    if (dl.status !== 0 || deb === undefined) {
      throw new CairnError("PREREQUISITE_MISSING", `apt-get download ${packageName} failed:\n${dl.stderr}`, {
        path: packageName,
        hint: "check network access to the Debian archive, or run `apt-get update` as root first",
      });
    }
    const tar = runTool("dpkg-deb", ["--fsys-tarfile", join(work, deb)], { fix: APT_FIX });
    if (tar.status !== 0) throw new CairnError("PREREQUISITE_MISSING", `dpkg-deb could not read ${deb}: ${tar.stderr}`, { path: deb });
    const k = await extractVmlinuz(tar.stdout);
    if (k === undefined) throw new CairnError("PREREQUISITE_MISSING", `${deb} holds no ./boot/vmlinuz-*`, { path: deb });
    return { packageName, packageFile: deb, fileName: k.name, bytes: k.bytes };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
