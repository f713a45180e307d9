/**
 * What layer application keeps of a layer between reading it and applying
 * it (src/tree/apply-layers.ts): whiteouts are applied against the tree the
 * lower layers left before any addition of the layer, so every member is
 * held until the layer has been read. The rule here is that a member costs
 * what the tree will keep of it and no more: a layer of 200,000 members
 * must not hold 200,000 gate records and location strings besides.
 */
import type { FsEntry } from "./entries.ts";

/**
 * A member kept between reading a layer and applying it: a directory,
 * symlink or file is kept as the very entry the tree will hold (so a member
 * costs one object, and the gate's record is not kept), anything else as the
 * little the later steps read. A file's entry replaces its placeholder when
 * its bytes are stored.
 */
export type Pending =
  | FsEntry
  | { readonly op: "file"; readonly path: string }
  | { readonly op: "whiteout"; readonly path: string; readonly target: string }
  | { readonly op: "opaque"; readonly path: string; readonly dir: string }
  | { readonly op: "device"; readonly path: string }
  | { readonly op: "hardlink"; readonly path: string; readonly linkname: string };

/**
 * A layer's pending members, and their names as the archive wrote them where
 * that is not the path without its "/" (`usr/`, `./x`): refusals name the
 * member as written, and most names need not be kept for that.
 */
export interface PendingLayer {
  readonly where: string;
  readonly members: Pending[];
  readonly names: Map<number, string>;
}

/** The location of member `i` in messages: `<layer>:<name as written>`. */
export function memberAt(layer: PendingLayer, i: number): string {
  const p = layer.members[i]!;
  return `${layer.where}:${(layer.names.get(i) ?? p.path.slice(1)).slice(0, 200)}`;
}
