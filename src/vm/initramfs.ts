/**
 * The guest image: one cpio `newc` initramfs holding
 *
 *   /init                 the agent (PID 1), 0755 root
 *   /dev, /dev/console    mount point for devtmpfs; the kernel's console
 *   /cairn                0700, the agent's own files, outside the workload root
 *   /cairn/inputs         the recorded inputs (launch + scenario), 0400
 *   /cairn/tree           the tree manifest (tree-manifest.ts) the agent checks the template against, 0400
 *   /cairn/modules/NN-name.ko   kernel modules the agent loads in name order, 0400
 *   /cairn/disk           only with a root disk (`run.root: disk`): "erofs\n"; the
 *                         template is then an empty mount point (agent/disk.c)
 *   /cairn/template/...   the immutable workload template: the canonical tree,
 *                         with the metadata of its "/" on /cairn/template itself
 *
 * Entries are written in a fixed order (agent files, then the tree sorted by
 * the UTF-8 bytes of its paths), so the same workload and kit give the same
 * bytes on any host. Modes, owners, mtimes and symlink targets come from the
 * canonical tree only. The image is written as a stream and never held:
 * file contents pass a MiB at a time, verified as they pass, and exactly
 * the tree's size of them or the build fails (content-stream.ts).
 */
import { CairnError, checkLimit, FIXED_LIMIT_HINT, safeComponent, Sha256Hasher, type Sha256Digest } from "../core/index.ts";
import { type CanonicalTree, type ContentSource, entriesInByteOrder } from "../tree/index.ts";
import { streamFile } from "./content-stream.ts";
import { CpioWriter, S_IFCHR, S_IFDIR, S_IFLNK, S_IFREG, type ByteSink } from "./cpio.ts";
import type { TreeManifest } from "./tree-manifest.ts";

export const TEMPLATE_DIR = "cairn/template";
/** Paths the runtime overlay owns (cairn.overlay/1); see agent/root.c. */
export const OVERLAY_DIRS = ["/tmp", "/dev"] as const;
/** Mount points the overlay owns with `run.proc: true`. */
export const PROC_DIRS = ["/proc", "/sys"] as const;
/**
 * The standard symlinks a Debian root keeps in /dev (mmdebstrap and
 * debootstrap write them; runc makes the same ones), each with the one target
 * accepted: the agent keeps them in every fresh root (agent/root.c,
 * DEV_LINKS), so the workload sees exactly the entries its tree names. Any
 * other entry below /dev collides with the overlay's devices.
 */
export const DEV_SYMLINKS: Readonly<Record<string, string>> = Object.freeze({
  "/dev/fd": "/proc/self/fd",
  "/dev/stdin": "/proc/self/fd/0",
  "/dev/stdout": "/proc/self/fd/1",
  "/dev/stderr": "/proc/self/fd/2",
  "/dev/ptmx": "pts/ptmx",
});

export interface GuestImageParts {
  readonly agent: Uint8Array;
  readonly inputs: Uint8Array;
  /** The tree manifest of `tree` (encodeTreeManifest), derived from the canonical tree, never from image bytes; written, not held. */
  readonly treeManifest: Pick<TreeManifest, "size" | "write">;
  /** Kernel modules in load order. */
  readonly modules: ReadonlyArray<{ readonly name: string; readonly bytes: Uint8Array }>;
  readonly tree: CanonicalTree;
  readonly content: ContentSource;
  /**
   * The template is on a root disk (`run.root: disk`): the image then holds
   * `/cairn/disk` (the agent's cue to mount it) and an empty
   * `/cairn/template` as the mount point, and no tree entries.
   */
  readonly disk?: boolean;
  /** Opt-in parts of the runtime overlay (`run.proc`, `run.urandom`), written as `/cairn/overlay`. */
  readonly overlay?: { readonly proc?: boolean; readonly urandom?: boolean };
  /** `run.network`: eth0's static configuration line for the agent (agent/eth.c), written as `/cairn/network`. */
  readonly network?: string;
}

/** What names a guest image: its bytes are written to a sink, never kept (writeGuestImage). */
export interface GuestImage {
  readonly digest: Sha256Digest;
  readonly size: number;
  readonly entries: number;
}

/**
 * Refuses a tree the runtime overlay would collide with: /tmp and /dev may
 * exist only as directories (the agent replaces their metadata) and may hold
 * only empty directories (Debian's /dev/pts and /dev/shm; the workload RFD
 * accepts them, the agent removes them from each fresh root: agent/root.c)
 * and, in /dev, the standard symlinks of DEV_SYMLINKS with their own targets;
 * /proc and /sys (with `run.proc`) must be empty.
 */
export function checkOverlay(tree: CanonicalTree, opts: { readonly proc?: boolean } = {}): void {
  const owned: readonly string[] = opts.proc === true ? [...OVERLAY_DIRS, ...PROC_DIRS] : OVERLAY_DIRS;
  for (const dir of owned) {
    const e = tree.get(dir);
    if (e !== undefined && e.type !== "dir") {
      throw new CairnError("RUN_INVALID", `the workload has a ${e.type} at ${dir}, which the runtime overlay owns`, {
        path: dir,
        hint: `${dir} is provided by the guest at run time; remove it from the workload or make it an empty directory`,
      });
    }
  }
  for (const [path, e] of tree) {
    if (e.type === "symlink" && DEV_SYMLINKS[path] === e.target) continue; // kept as it is by the agent
    for (const dir of owned) {
      if (path.startsWith(`${dir}/`) && !(e.type === "dir" && (OVERLAY_DIRS as readonly string[]).includes(dir))) {
        throw new CairnError("RUN_INVALID", `the workload has an entry below ${dir}, which the runtime overlay owns`, {
          path,
          hint: `${dir} starts empty in every run (only empty directories below it are accepted); move this entry elsewhere`,
        });
      }
    }
  }
}

/**
 * Fixed limits of what Linux can hold (named limits, not raisable): a name
 * of at most NAME_MAX (255) bytes, a symlink target of at most PATH_MAX - 1
 * (4095) bytes, and an archive name "cairn/template/..." of at most PATH_MAX
 * (4096) bytes with its NUL. The kernel's initramfs unpacker skips an entry
 * beyond these without any error, so the guest would silently see another
 * tree than the one the workload identity names; cairn refuses it instead.
 */
export const LINUX_LIMITS = { "vm.name-bytes": 255, "vm.symlink-target-bytes": 4095, "vm.path-bytes": 4096 } as const;

export function checkLinuxNames(tree: CanonicalTree): void {
  for (const e of tree.values()) {
    if (e.path === "/") continue;
    const hint = `${FIXED_LIMIT_HINT}: Linux cannot create this entry, and the guest would silently lack it`;
    for (const part of e.path.slice(1).split("/")) checkLimit("vm.name-bytes", Buffer.byteLength(part), LINUX_LIMITS["vm.name-bytes"], e.path, "bytes", hint);
    checkLimit("vm.path-bytes", Buffer.byteLength(`${TEMPLATE_DIR}${e.path}`) + 1, LINUX_LIMITS["vm.path-bytes"], e.path, "bytes", hint);
    if (e.type === "symlink")
      checkLimit("vm.symlink-target-bytes", Buffer.byteLength(e.target), LINUX_LIMITS["vm.symlink-target-bytes"], e.path, "bytes", hint);
  }
}

/**
 * Writes the guest image to `sink` in order and returns its digest and
 * size. Memory: the tree's entries and one MiB of a file at a time (file
 * contents come through `streamFile`), never the image: the caller hashes
 * it (prepareGuest) or writes it to a private file (writeGuestImageFile).
 */
export async function writeGuestImage(parts: GuestImageParts, sink: ByteSink): Promise<GuestImage> {
  checkOverlay(parts.tree, { proc: parts.overlay?.proc === true });
  checkLinuxNames(parts.tree);
  const root = parts.tree.get("/");
  if (root === undefined || root.type !== "dir") {
    throw new CairnError("RUN_INVALID", "the canonical tree has no root directory", { path: "/" });
  }
  const hasher = new Sha256Hasher();
  const w = new CpioWriter({
    write(chunk) {
      hasher.update(chunk);
      sink.write(chunk);
    },
  });
  const sys = { uid: 0, gid: 0, mtime: 0 };
  w.add({ name: "cairn", mode: S_IFDIR | 0o700, ...sys });
  w.add({ name: "cairn/inputs", mode: S_IFREG | 0o400, ...sys, data: parts.inputs });
  await w.addStreamed({ name: "cairn/tree", mode: S_IFREG | 0o400, ...sys }, parts.treeManifest.size, async (emit) => parts.treeManifest.write(emit));
  w.add({ name: "cairn/modules", mode: S_IFDIR | 0o700, ...sys });
  parts.modules.forEach((m, i) => {
    w.add({ name: `cairn/modules/${String(i).padStart(2, "0")}-${safeComponent(m.name)}.ko`, mode: S_IFREG | 0o400, ...sys, data: m.bytes });
  });
  const flags = [parts.overlay?.proc === true ? "proc\n" : "", parts.overlay?.urandom === true ? "urandom\n" : ""].join("");
  if (flags !== "") w.add({ name: "cairn/overlay", mode: S_IFREG | 0o400, ...sys, data: Buffer.from(flags) });
  if (parts.disk === true) w.add({ name: "cairn/disk", mode: S_IFREG | 0o400, ...sys, data: Buffer.from("erofs\n") });
  if (parts.network !== undefined) w.add({ name: "cairn/network", mode: S_IFREG | 0o400, ...sys, data: Buffer.from(parts.network) });
  w.add({ name: "dev", mode: S_IFDIR | 0o755, ...sys });
  w.add({ name: "dev/console", mode: S_IFCHR | 0o600, ...sys, rdevMajor: 5, rdevMinor: 1 });
  w.add({ name: "init", mode: S_IFREG | 0o755, ...sys, data: parts.agent });
  const optional = parts.modules.length + (flags !== "" ? 1 : 0) + (parts.network !== undefined ? 1 : 0);
  if (parts.disk === true) {
    w.add({ name: TEMPLATE_DIR, mode: S_IFDIR | 0o700, ...sys }); // the mount point; the disk's root carries the tree's "/"
    w.finish();
    return { digest: hasher.digest(), size: w.size, entries: 10 + optional };
  }
  w.add({ name: TEMPLATE_DIR, mode: S_IFDIR | root.mode, uid: root.uid, gid: root.gid, mtime: root.mtime });
  // a frozen tree is held in byte order: its own array, no filtered copy and no sort
  const ordered = entriesInByteOrder(parts.tree);
  w.beginOrdered(`${TEMPLATE_DIR}/`); // the names below are the tree's paths in its byte order: unique without being kept
  for (const e of ordered) {
    if (e.path === "/") continue;
    const name = `${TEMPLATE_DIR}${e.path}`;
    const meta = { uid: e.uid, gid: e.gid, mtime: e.mtime };
    if (e.type === "dir") {
      w.add({ name, mode: S_IFDIR | e.mode, ...meta });
    } else if (e.type === "symlink") {
      w.add({ name, mode: S_IFLNK | 0o777, ...meta, data: Buffer.from(e.target, "utf8") });
    } else {
      // the source verifies the digest as the bytes pass; exactly e.size of them, or SIZE_MISMATCH
      await w.addStreamed({ name, mode: S_IFREG | e.mode, ...meta }, e.size, (emit) => streamFile(parts.content, e, emit));
    }
  }
  w.finish();
  return { digest: hasher.digest(), size: w.size, entries: ordered.length - 1 + 8 + optional };
}
