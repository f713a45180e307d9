/**
 * Guest sizing by root: the one definition of where a guest's tree lives and
 * how big its images may be. `cairn run` applies it before launch
 * (prepareGuest, bootGuest) and `cairn workload check` applies the same
 * functions to the tree it checks (run-check.ts), so check refuses what run
 * would refuse, with the same limit, path and hint.
 *
 * Where the tree lives (`run.root`; absent: `chooseRoot`): a tree of more
 * than 64 MiB of files goes on a read-only EROFS root disk, a smaller one in
 * the initramfs. The initramfs is unpacked into guest RAM and copied per
 * start, so guest RAM and boot time grow with it; a disk is a file on the
 * host read through the guest's page cache, and its boot time stays flat
 * (bench/root-disk/README.md). Small trees keep the initramfs for its smaller
 * replay log (a disk needs icount sleep=on, which logs more during boot).
 *
 * Named limit `vm.image-bytes` bounds the workload's file bytes, then the
 * root disk, then the whole initramfs. Its default and ceiling follow the
 * root actually used, because what it protects differs:
 *
 *   initramfs  default 100 MiB, at most 1 GiB: guest RAM holds the image
 *              while it is unpacked, the template and a copy per start
 *              (about 3 × the image; at 1 GiB the kernel's unpacker already
 *              failed in 3200 MiB of RAM).
 *   disk       default 32 GiB (the images people run, CUDA and PyTorch
 *              images of 5–15 GB, fit), at most what EROFS addresses
 *              (2³² − 1 blocks of 4 KiB, 16 TiB) and, when the image is
 *              written, what the host's file system holding the run has
 *              free (`checkRoom`: statfs before the disk is hashed and
 *              before it is written).
 *
 * `run.limits.image-bytes` sets the limit for whichever root is used; it
 * may say up to the disk's ceiling, and with `run.root: initramfs` at most
 * the initramfs's. Attack stopped: a spec (hostile input) cannot make cairn
 * write a guest image larger than the limit it names, nor fill the host's
 * disk with one: the room is checked before the first byte is written.
 */
import { statfsSync } from "node:fs";
import { CairnError, checkLimit, formatBytes, ioError } from "../core/index.ts";
import type { CanonicalTree } from "../tree/index.ts";
import { EROFS_MAX_BYTES, planErofs, type ErofsPlan } from "./erofs.ts";

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

/** Where the guest keeps the workload's tree (`run.root`). */
export type GuestRoot = "initramfs" | "disk";
/** What sizing reads of a scenario's limits: `run.limits.image-bytes`, when the spec names it. */
interface ImageLimit {
  readonly imageBytes?: number;
}
/** What sizing reads of a scenario: the spec's root, if any, and its limits. */
interface Sized {
  readonly root?: GuestRoot;
  readonly limits: ImageLimit;
}

/**
 * run.min_free_bytes: the room a run directory's file system must still
 * have when QEMU has exited (rundir.ts `diskFullError`), and what a boot
 * keeps free beyond its images (`checkRoom`). QEMU does not report a failed write of its
 * replay log or of the protocol chardev: on a full disk the run came out as
 * "protocol stream invalid ... the guest agent or the transport misbehaved"
 * (or, had the protocol fitted and the log not, as a run whose replay log
 * is cut short). Less than this much room left means a write may have been
 * cut short, whatever else QEMU's output says.
 */
export const RUN_MIN_FREE_BYTES = 1024 * 1024;

/** Trees of more than this many file bytes get a root disk when the spec names no `run.root`. */
export const DISK_ROOT_FROM_BYTES = 64 * MIB;

/** The root the guest uses: the spec's `run.root`, else a disk above DISK_ROOT_FROM_BYTES of files. */
export function chooseRoot(scenario: Pick<Sized, "root">, treeBytes: number): GuestRoot {
  return scenario.root ?? (treeBytes > DISK_ROOT_FROM_BYTES ? "disk" : "initramfs");
}

/** `vm.image-bytes` per root: the default when the spec names none, and the most it may be raised to. */
export const IMAGE_BYTES: Readonly<Record<GuestRoot, { readonly default: number; readonly ceiling: number }>> = Object.freeze({
  initramfs: Object.freeze({ default: 100 * MIB, ceiling: 1 * GIB }),
  disk: Object.freeze({ default: 32 * GIB, ceiling: EROFS_MAX_BYTES }),
});

/** The most `run.limits.image-bytes` may say in a spec (the disk's ceiling; an initramfs root caps it lower). */
export const IMAGE_BYTES_CEILING = IMAGE_BYTES.disk.ceiling;

/** The effective `vm.image-bytes` for `root`: the spec's value or the root's default, never above the root's ceiling. */
export function imageBytesMax(limits: ImageLimit, root: GuestRoot): number {
  return Math.min(limits.imageBytes ?? IMAGE_BYTES[root].default, IMAGE_BYTES[root].ceiling);
}

/** What to do about `vm.image-bytes`, said for the root actually used. */
export function imageHint(limits: ImageLimit, root: GuestRoot): string {
  if (root === "disk")
    return `the tree is on a root disk (a file on the host, written per boot and removed after): raise run.limits.image-bytes in the workload spec (default ${formatBytes(IMAGE_BYTES.disk.default)}; at most ${formatBytes(IMAGE_BYTES.disk.ceiling)}, EROFS's ceiling, and the host's free space)`;
  const atCeiling = (limits.imageBytes ?? 0) >= IMAGE_BYTES.initramfs.ceiling;
  return atCeiling
    ? `the tree is in the initramfs, which lives in guest RAM and holds at most ${formatBytes(IMAGE_BYTES.initramfs.ceiling)}: set run.root: disk (a read-only root disk, read through the guest's page cache)`
    : `the tree is in the initramfs, which lives in guest RAM (about 3 × the image): raise run.limits.image-bytes (at most ${formatBytes(IMAGE_BYTES.initramfs.ceiling)}; guest RAM follows the image, or set run.memory-mib), or set run.root: disk`;
}

/** The tree's file bytes (what `vm.image-bytes` bounds first, and what `chooseRoot` decides by). */
export function treeFileBytes(tree: CanonicalTree): number {
  let n = 0;
  for (const e of tree.values()) if (e.type === "file") n += e.size;
  return n;
}

export interface GuestSize {
  readonly root: GuestRoot;
  readonly treeBytes: number;
  /** The root disk's layout (a disk root only); its size passed `vm.image-bytes`. */
  readonly plan?: ErofsPlan;
}

/**
 * Chooses the root and checks `vm.image-bytes` on what the tree alone
 * decides: its file bytes, then (a disk root) the planned root disk. Pure:
 * reads no content. The whole initramfs is checked once it is built
 * (`checkInitramfsSize`), the host's room once the images' sizes are known.
 */
export function sizeGuest(tree: CanonicalTree, scenario: Sized): GuestSize {
  const treeBytes = treeFileBytes(tree);
  const root = chooseRoot(scenario, treeBytes);
  const max = imageBytesMax(scenario.limits, root);
  const hint = imageHint(scenario.limits, root);
  checkLimit("vm.image-bytes", treeBytes, max, "/tree", "bytes", hint);
  if (root === "initramfs") return { root, treeBytes };
  const plan = planErofs(tree);
  checkLimit("vm.image-bytes", plan.size, max, "/guest_image/disk", "bytes", hint);
  return { root, treeBytes, plan };
}

/** `vm.image-bytes` on the whole initramfs (the kit's agent and modules, the tree manifest, and the tree unless it is on a disk). */
export function checkInitramfsSize(size: number, scenario: Pick<Sized, "limits">, root: GuestRoot): void {
  checkLimit("vm.image-bytes", size, imageBytesMax(scenario.limits, root), "/guest_image", "bytes", imageHint(scenario.limits, root));
}

/**
 * Refuses (LIMIT_EXCEEDED, naming `vm.image-bytes` and the free bytes)
 * unless the file system holding `dir` has room for `bytes` of guest images
 * with `run.min_free_bytes` left over for the replay log and the streams.
 * Called before a root disk is hashed (record, replay) and again before the
 * images are written (every boot), so a full disk is found before, not
 * after, minutes of writing.
 */
export function checkRoom(dir: string, bytes: number, what: string): void {
  let free: number;
  try {
    const st = statfsSync(dir);
    free = Number(st.bavail) * Number(st.bsize);
  } catch (e) {
    throw ioError(dir, e, "read the free space of");
  }
  if (bytes + RUN_MIN_FREE_BYTES <= free) return;
  throw new CairnError(
    "LIMIT_EXCEEDED",
    `limit vm.image-bytes exceeded: ${what} (${formatBytes(bytes)}) and run.min_free_bytes (${formatBytes(RUN_MIN_FREE_BYTES)}) need more than the ${formatBytes(free)} (${free} bytes) free on the file system holding ${dir}`,
    {
      path: dir,
      hint: "with a root disk, vm.image-bytes is at most what the host has free: free space there, or pass --runs on a file system with room (the image is written for each boot and removed after)",
    },
  );
}

/** The guest RAM every image up to BASE_MEMORY_IMAGE_MIB gets, and every root disk (the VM identity of small runs did not move). */
export const BASE_MEMORY_MIB = 256;
const BASE_MEMORY_IMAGE_MIB = 64;

/**
 * Guest RAM when the spec names none (`run.memory-mib`). A root disk is read
 * through the page cache: 256 MiB whatever its size. An initramfs: 256 MiB
 * up to a 64 MiB image; above it 128 MiB for the kernel and agent plus three
 * times the image (the image while unpacking, the template, one fresh copy
 * per start), rounded up to 64 MiB. Measured: at 256 MiB the kernel's
 * unpacker fails from about 70 MiB of tree on; docs/runs.md has the figures.
 */
export function defaultMemoryMib(imageBytes: number, root: GuestRoot = "initramfs"): number {
  if (root === "disk") return BASE_MEMORY_MIB;
  const image = Math.ceil(imageBytes / MIB);
  if (image <= BASE_MEMORY_IMAGE_MIB) return BASE_MEMORY_MIB;
  return Math.ceil((128 + 3 * image) / 64) * 64;
}
