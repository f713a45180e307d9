/**
 * Layer application: base to top, on the in-memory TreeModel, never on the
 * host filesystem. File bytes go to the caller's content sink (addressed by
 * sha256); the tree decides everything else.
 *
 * One layer is applied in three steps, so that whiteouts remove only
 * lower-layer content whatever the member order:
 *   1. read: every member is parsed, normalized, checked (duplicates,
 *      whiteout names, setid, hard links, devices and FIFOs, xattrs) and its
 *      file bytes stored; the layer's DiffID is verified at the end, before
 *      the tree changes;
 *   2. whiteouts: `.wh.<name>` removes `<name>` and `.wh..wh..opq` empties
 *      its directory, both against the tree as the lower layers left it;
 *   3. additions, in archive order: a directory over a directory updates
 *      its attributes; any other replacement removes and recreates; writing
 *      beneath a symlink is refused, whichever layer planted it.
 * Whiteout markers never appear in the result. A device or FIFO skipped by
 * `devices: skip` and the xattrs dropped by `xattrs: drop` are listed in the
 * result, never silently lost.
 *
 * With `collect` (`cairn workload check`) a refusal does not end the
 * application: a member's refusal is handed over, with the policy that would
 * admit it, and the member is treated as that policy would treat it (or left
 * out when none would); a refusal of a layer's stream (framing, gzip,
 * DiffID, a limit) is handed over and the layer left out. So one pass lists
 * every problem of an image.
 */
import { CairnError, type Sha256Digest } from "../core/index.ts";
import { DEFAULT_LIMITS, enforceLimit, type LayerLimits } from "./layer-limits.ts";
import type { LayerPolicy } from "./layer-policy.ts";
import { admitMember, checkXattrs, type DroppedXattrs, type LayerIssue, type Listed, type SkippedMember } from "./member-policy.ts";

export type { DroppedXattrs, LayerIssue, SkippedMember } from "./member-policy.ts";
import type { CanonicalTree, ContentSink, FsEntry } from "./entries.ts";
import { IMPLICIT_DIR, TreeModel } from "./tree-builder.ts";
import { memberAt, type Pending, type PendingLayer } from "./pending-members.ts";
import { PathSet } from "./path-set.ts";
import { ancestors, classifyWhiteout, normalizeMemberPath, parentOf } from "./tree-paths.ts";
import type { GateRecord } from "./tar-gate.ts";
import { readLayer, type Budget, type InflationBound, type LayerCompression, type MemberBody } from "./layer-reader.ts";

/** One layer to apply: the staged blob and what it must hash to. `OciLayer` from the OCI source fits as is. */
export interface LayerInput {
  /** How the blob is compressed (the OCI side maps the layer's media type to this). */
  readonly compression: LayerCompression;
  /** The private staged copy of the blob. Give this or `bytes`. */
  readonly path?: string;
  /** The blob's bytes, already verified and held in memory by the caller. */
  readonly bytes?: Uint8Array;
  /** sha256 of the uncompressed tar stream; when given, a mismatch refuses the layer (OCI_DIFFID_MISMATCH). */
  readonly diffId?: Sha256Digest;
  /** Names the layer in messages; default "/layers/<index>". */
  readonly where?: string;
  /** The stored blob's digest and size; re-checked while reading when `recheckStored` is set. */
  readonly digest?: Sha256Digest;
  readonly size?: number;
  /** A descriptor of the caller's private copy, written with the stored bytes as read (tree/layer-reader.ts `copyFd`; needs `recheckStored`). */
  readonly copyFd?: number;
}

export interface ApplyLayersOptions {
  readonly layers: readonly LayerInput[];
  /** Required: verification is closed by default, and the policy is part of identity. */
  readonly policy: LayerPolicy;
  readonly limits?: LayerLimits;
  readonly sink: ContentSink;
  /**
   * Re-hash each stored blob against its `digest` and `size` while reading it.
   * Staged copies made by `readOciSource` were verified when they were copied
   * and are private, so assembly leaves this off; set it for blobs that did
   * not come through `readOciSource`.
   */
  readonly recheckStored?: boolean;
  /**
   * `implicit` (default, OCI): a member whose parent directory no member
   * named gets one with IMPLICIT_DIR attributes. `required` (cairn's own
   * layer blobs, whose writer names every parent): such a member is refused
   * (TAR_INVALID), so a hand-made blob cannot differ from what cairn writes.
   */
  readonly parents?: "implicit" | "required";
  /**
   * Called before a member replaces an existing entry at the same path (in
   * this or an earlier layer); it may throw to refuse the replacement. Only
   * consulted when given (layer fold keeps "a directory never replaces a
   * file or the reverse" here).
   */
  readonly onReplace?: (old: FsEntry, next: FsEntry, where: string) => void;
  /** Bounds on each gzip layer's inflated bytes and ratio, checked as gunzip emits (strata blobs name theirs). */
  readonly inflation?: InflationBound;
  /**
   * Progress for large layers: called as stored bytes are read (about once
   * per MiB) with the layer index, its stored size when known, and the
   * running totals. The caller throttles and draws (on a TTY only).
   */
  readonly onProgress?: (p: { layer: number; layers: number; layerSize: number | undefined; compressedBytes: number; expandedBytes: number }) => void;
  /** Check mode: every refusal goes here instead of being thrown (see the module comment). */
  readonly collect?: (issue: LayerIssue) => void;
}

export interface ApplyStats {
  layers: number;
  /** Tar members read (extended headers included). */
  members: number;
  compressedBytes: number;
  expandedBytes: number;
  files: number;
  dirs: number;
  symlinks: number;
  /** Sum of regular-file sizes in the result. */
  contentBytes: number;
  whiteouts: number;
  opaques: number;
  hardlinksCopied: number;
  setidStripped: number;
  devicesSkipped: number;
  xattrsDropped: number;
}

export interface ApplyResult {
  readonly tree: CanonicalTree;
  readonly stats: ApplyStats;
  /** Device and FIFO members left out (`devices: skip`, or check mode), in layer and archive order. */
  readonly skipped: readonly SkippedMember[];
  /** Members whose xattrs were dropped (`xattrs: drop`, or check mode), in layer and archive order. */
  readonly droppedXattrs: readonly DroppedXattrs[];
}

/** Refuses when any ancestor of `path` is a symlink (writing or deleting through it) or not a directory. */
function checkParents(model: TreeModel, path: string, at: () => string, create: boolean, required = false): void {
  // Fast path: the model keeps every ancestor of an entry a directory (see
  // TreeModel), so a directory parent means the whole chain is directories.
  if (model.get(parentOf(path))?.type === "dir") return;
  for (const a of ancestors(path)) {
    const e = model.get(a);
    if (e === undefined) {
      if (!create) return;
      if (required)
        throw new CairnError("TAR_INVALID", `${path} has no parent directory ${a} in the layer`, {
          path: at(),
          hint: "cairn's layer writer names every parent directory before its contents; this blob was not written by it",
        });
      model.set({ path: a, type: "dir", ...IMPLICIT_DIR });
    } else if (e.type === "symlink") {
      throw new CairnError("TAR_THROUGH_SYMLINK", `${path} lies beneath the symlink ${a}`, {
        path: at(),
        hint: "a layer may not write or delete through a symlink (planted by this or an earlier layer)",
      });
    } else if (e.type !== "dir") {
      throw new CairnError("TAR_INVALID", `${path} lies beneath the regular file ${a}`, { path: at() });
    }
  }
}

async function readMembers(
  input: LayerInput,
  where: string,
  options: ApplyLayersOptions,
  limits: LayerLimits,
  budget: Budget,
  stats: ApplyStats,
  layer: number,
  listed: Listed,
): Promise<PendingLayer> {
  const { sink } = options;
  const collect = options.collect;
  const pending: PendingLayer = { where, members: [], names: new Map() };
  const members = pending.members;
  const seen = new PathSet();
  if (options.recheckStored && (input.digest === undefined || input.size === undefined)) {
    throw new CairnError("USAGE", "recheckStored needs each layer's digest and size", { path: where });
  }
  const recheck = options.recheckStored ? { digest: input.digest, size: input.size } : {};
  const inflation = options.inflation === undefined ? {} : { inflation: options.inflation };
  if (input.copyFd !== undefined && !options.recheckStored) {
    throw new CairnError("USAGE", "a layer copy needs recheckStored: it must hold exactly the bytes re-hashed", { path: where });
  }
  const stream = {
    path: input.path,
    bytes: input.bytes,
    compression: input.compression,
    diffId: input.diffId,
    copyFd: input.copyFd,
    ...recheck,
    ...inflation,
    collect: collect !== undefined,
    where,
  };
  const onMember = (rec: GateRecord): MemberBody | undefined => {
    if (collect === undefined) return member(rec);
    for (const error of rec.issues ?? []) collect({ error, layer, policy: undefined, fatal: false });
    try {
      return member(rec);
    } catch (e) {
      // check mode: a member refused by no policy is listed and left out
      if (!(e instanceof CairnError)) throw e;
      collect({ error: e, layer, policy: undefined, fatal: false });
    }
  };
  const keep = (rec: GateRecord, p: Pending): number => {
    if (rec.name !== p.path.slice(1)) pending.names.set(members.length, rec.name);
    return members.push(p) - 1;
  };
  const member = (rec: GateRecord): MemberBody | undefined => {
    const at = `${where}:${rec.name.slice(0, 200)}`;
    const path = normalizeMemberPath(rec.name, limits, at);
    if (!seen.add(path))
      throw new CairnError("TAR_DUPLICATE", `two members of one layer normalize to ${path}`, {
        path: at,
        hint: "a layer must name each path once ('a' and './a//' are the same path)",
      });
    checkXattrs(rec, path, at, options, layer, listed, stats);
    const wh = classifyWhiteout(path, at);
    if (wh.kind !== "none") {
      if (rec.type !== "file" || rec.size !== 0) throw new CairnError("TAR_WHITEOUT", "a whiteout marker must be an empty regular file", { path: at });
      keep(rec, wh.kind === "whiteout" ? { op: "whiteout", path, target: wh.target } : { op: "opaque", path, dir: wh.dir });
      return;
    }
    const mode = admitMember(rec, path, at, options, layer, listed, stats);
    const { uid, gid, mtime } = rec;
    // Entries are built field by field (no spreads): this runs once per member.
    switch (rec.type) {
      case "dir":
        keep(rec, { path, type: "dir", mode, uid, gid, mtime });
        return;
      case "symlink":
        enforceLimit(limits, "pathLength", Buffer.byteLength(rec.linkname ?? ""), at);
        keep(rec, { path, type: "symlink", mode: 0o777, uid, gid, mtime, target: rec.linkname! });
        return;
      case "hardlink":
        keep(rec, { op: "hardlink", path, linkname: rec.linkname! });
        return;
      case "file":
        break;
      default:
        keep(rec, { op: "device", path });
        return;
    }
    const i = keep(rec, { op: "file", path });
    // The bytes stream into the sink as they are read, never gathered whole.
    const writer = sink.begin(rec.size);
    return {
      write: (chunk) => writer.write(chunk),
      end: () => {
        const c = writer.end();
        members[i] = { path, type: "file", mode, uid, gid, mtime, size: c.size, sha256: c.sha256 };
      },
    };
  };
  await readLayer(stream, limits, budget, onMember);
  return pending;
}

/** Runs `step` for each pending member; in check mode a member's refusal is collected and the member left out. */
function eachMember(pending: PendingLayer, options: ApplyLayersOptions, layer: number, step: (p: Pending, at: () => string) => void): void {
  const collect = options.collect;
  const { members } = pending;
  // one locator for the pass, reading the index as it advances (steps use it only to build a refusal, at once)
  let i = 0;
  const at = (): string => memberAt(pending, i);
  for (; i < members.length; i++) {
    if (collect === undefined) {
      step(members[i]!, at);
      continue;
    }
    try {
      step(members[i]!, at);
    } catch (e) {
      if (!(e instanceof CairnError)) throw e;
      collect({ error: e, layer, policy: undefined, fatal: false });
    }
  }
}

function applyWhiteouts(model: TreeModel, pending: PendingLayer, stats: ApplyStats, options: ApplyLayersOptions, layer: number): void {
  eachMember(pending, options, layer, (p, at) => {
    if (!("op" in p)) return;
    if (p.op === "whiteout") {
      checkParents(model, p.target, at, false);
      model.remove(p.target);
      stats.whiteouts++;
    } else if (p.op === "opaque") {
      checkParents(model, p.dir, at, false);
      const d = model.get(p.dir);
      if (d?.type === "symlink") throw new CairnError("TAR_THROUGH_SYMLINK", `opaque marker inside the symlink ${p.dir}`, { path: at() });
      if (d?.type === "dir") for (const c of model.children(p.dir)) model.remove(c);
      stats.opaques++;
    }
  });
}

function applyAdditions(model: TreeModel, pending: PendingLayer, options: ApplyLayersOptions, limits: LayerLimits, layer: number): void {
  const { onReplace } = options;
  const required = options.parents === "required";
  eachMember(pending, options, layer, (p, at) => {
    if ("op" in p && (p.op === "whiteout" || p.op === "opaque")) return;
    const { path } = p;
    if (path === "/") {
      if (!("type" in p) || p.type !== "dir") throw new CairnError("TAR_UNSAFE_PATH", "refusing to change the type of the root directory", { path: at() });
      model.set(p);
      return;
    }
    checkParents(model, path, at, true, required);
    let entry: FsEntry;
    if (!("op" in p)) entry = p;
    else if (p.op === "device") {
      // left out (`devices: skip`; refused earlier otherwise): the node would have replaced what a lower layer had here
      model.remove(path);
      return;
    } else if (p.op === "hardlink") {
      // policy.hardlinks === "copy" (refused earlier otherwise): the copy takes the target's
      // content and attributes, as the shared inode would have given it.
      const target = normalizeMemberPath(p.linkname, limits, at());
      checkParents(model, target, at, false);
      const t = model.get(target);
      if (t?.type !== "file" || target === path) {
        throw new CairnError("TAR_HARDLINK", `hard link ${path} does not point at a regular file already in the tree`, { path: at() });
      }
      entry = { ...t, path };
    } else {
      throw new CairnError("TAR_INVALID", `the bytes of ${path} were never stored`, { path: at() });
    }
    if (onReplace !== undefined) {
      const old = model.get(path);
      if (old !== undefined) onReplace(old, entry, at());
    }
    model.set(entry);
  });
}

/** Applies `layers` base to top and returns the complete canonical tree; see the module comment. */
export async function applyLayers(options: ApplyLayersOptions): Promise<ApplyResult> {
  const limits = options.limits ?? DEFAULT_LIMITS;
  const stats: ApplyStats = {
    layers: 0,
    members: 0,
    compressedBytes: 0,
    expandedBytes: 0,
    files: 0,
    dirs: 0,
    symlinks: 0,
    contentBytes: 0,
    whiteouts: 0,
    opaques: 0,
    hardlinksCopied: 0,
    setidStripped: 0,
    devicesSkipped: 0,
    xattrsDropped: 0,
  };
  const listed: Listed = { skipped: [], droppedXattrs: [] };
  const budget: Budget = { compressedBytes: 0, expandedBytes: 0, entries: 0 };
  const report = options.onProgress;
  enforceLimit(limits, "descriptors", options.layers.length, "/layers");
  const model = new TreeModel();
  for (const [i, layer] of options.layers.entries()) {
    const where = layer.where ?? `/layers/${i}`;
    if (report) budget.onProgress = (t) => report({ layer: i, layers: options.layers.length, layerSize: layer.size, ...t });
    let pending: PendingLayer;
    try {
      pending = await readMembers(layer, where, options, limits, budget, stats, i, listed);
    } catch (e) {
      // check mode: a layer whose stream cannot be read is listed and left out
      if (options.collect === undefined || !(e instanceof CairnError)) throw e;
      options.collect({ error: e, layer: i, policy: undefined, fatal: true });
      continue;
    }
    applyWhiteouts(model, pending, stats, options, i);
    applyAdditions(model, pending, options, limits, i);
    for (const p of pending.members) if ("op" in p && p.op === "hardlink") stats.hardlinksCopied++;
    stats.layers++;
  }
  const tree = model.freeze();
  for (const e of tree.values()) {
    if (e.type === "file") {
      stats.files++;
      stats.contentBytes += e.size;
    } else if (e.type === "dir") stats.dirs++;
    else stats.symlinks++;
  }
  stats.members = budget.entries;
  stats.compressedBytes = budget.compressedBytes;
  stats.expandedBytes = budget.expandedBytes;
  return { tree, stats, skipped: listed.skipped, droppedXattrs: listed.droppedXattrs };
}
