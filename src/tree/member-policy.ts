/**
 * The policy decisions on one tar member (cairn.policy/1, layer-policy.ts):
 * setuid/setgid bits, hard links, device nodes and FIFOs, extended
 * attributes. Each is refused under the strict profile, naming the member
 * (`/layers/<i>:<path>`) and the policy that would admit it; under that
 * policy it is stripped, copied, left out or dropped, and what was left out
 * or dropped is listed, so a relaxation never loses content silently.
 *
 * In check mode (`collect`) a refusal is handed over instead of thrown and
 * the member is treated as the admitting policy would treat it.
 */
import { CairnError } from "../core/index.ts";
import type { LayerPolicy, PolicyKey } from "./layer-policy.ts";
import type { GateRecord } from "./tar-gate.ts";

/** One refusal found in check mode. */
export interface LayerIssue {
  readonly error: CairnError;
  /** The layer (its index among the layers given). */
  readonly layer: number;
  /** The policy whose relaxation would admit it; undefined when none would. */
  readonly policy: PolicyKey | undefined;
  /** True when the rest of the layer could not be read (framing, gzip, DiffID, a limit): it was left out. */
  readonly fatal: boolean;
}

/** A device node or FIFO member left out of the tree (`devices: skip`). */
export interface SkippedMember {
  readonly layer: number;
  readonly path: string;
  readonly type: "chardev" | "blockdev" | "fifo";
  /** major:minor of a device node. */
  readonly device?: { readonly major: number; readonly minor: number };
}

/** The extended attributes dropped from one member (`xattrs: drop`). */
export interface DroppedXattrs {
  readonly layer: number;
  readonly path: string;
  readonly names: readonly string[];
}

/** What one layer's reading lists besides its members. */
export interface Listed {
  readonly skipped: SkippedMember[];
  readonly droppedXattrs: DroppedXattrs[];
}

/** What the decisions need of the layer application's options (ApplyLayersOptions fits). */
interface Decide {
  readonly policy: LayerPolicy;
  readonly collect?: (issue: LayerIssue) => void;
}

/** The counters the decisions keep (ApplyStats fits). */
interface Counts {
  setidStripped: number;
  devicesSkipped: number;
  xattrsDropped: number;
}

/** Throws `error`, or in check mode hands it to `collect` and returns. */
function refuse(options: Decide, layer: number, error: CairnError, policy: PolicyKey | undefined): void {
  if (options.collect === undefined) throw error;
  options.collect({ error, layer, policy, fatal: false });
}

/** Extended attributes: refused (TAR_XATTR) unless `xattrs: drop`, then dropped and listed. Whiteout markers too. */
export function checkXattrs(rec: GateRecord, path: string, at: string, options: Decide, layer: number, listed: Listed, stats: Counts): void {
  const { policy } = options;
  if (rec.xattrs !== undefined) {
    if (policy.xattrs !== "drop") {
      refuse(
        options,
        layer,
        new CairnError("TAR_XATTR", `${path} has extended attributes (${rec.xattrs.join(", ").slice(0, 200)})`, {
          path: at,
          hint: 'xattrs are not part of a cairn tree; name the policy "xattrs: drop" to drop them (file capabilities included) knowingly',
        }),
        "xattrs",
      );
    }
    stats.xattrsDropped += rec.xattrs.length;
    listed.droppedXattrs.push({ layer, path, names: rec.xattrs });
  }
}

/**
 * Setid bits, hard links, devices and FIFOs: refused, or admitted by their
 * policy (a device or FIFO then listed, to be left out by the caller).
 * Returns the permission bits the member keeps.
 */
export function admitMember(rec: GateRecord, path: string, at: string, options: Decide, layer: number, listed: Listed, stats: Counts): number {
  const { policy } = options;
  let mode = rec.mode;
  if ((rec.mode & 0o6000) !== 0) {
    if (policy.setid === "refuse")
      refuse(
        options,
        layer,
        new CairnError("TAR_SETID", `${path} has the setuid or setgid bit`, {
          path: at,
          hint: 'name the policy "setid: strip" to clear these bits knowingly',
        }),
        "setid",
      );
    stats.setidStripped++;
    mode = rec.mode & ~0o6000;
  }
  if (rec.type === "hardlink" && policy.hardlinks === "refuse") {
    refuse(
      options,
      layer,
      new CairnError("TAR_HARDLINK", `${path} is a hard link`, {
        path: at,
        hint: 'name the policy "hardlinks: copy" to turn in-root hard links into copies',
      }),
      "hardlinks",
    );
  }
  if (rec.type === "chardev" || rec.type === "blockdev" || rec.type === "fifo") {
    if (policy.devices !== "skip") {
      const what = rec.type === "fifo" ? "a FIFO" : `a ${rec.type === "chardev" ? "character" : "block"} device (${rec.device?.major}:${rec.device?.minor})`;
      refuse(
        options,
        layer,
        new CairnError("TAR_UNSUPPORTED_TYPE", `${path} is ${what}`, {
          path: at,
          hint: 'cairn trees hold directories, regular files and symlinks only; name the policy "devices: skip" to leave device nodes and FIFOs out knowingly',
        }),
        "devices",
      );
    }
    stats.devicesSkipped++;
    listed.skipped.push({ layer, path, type: rec.type, ...(rec.device ? { device: rec.device } : {}) });
  }
  return mode;
}
