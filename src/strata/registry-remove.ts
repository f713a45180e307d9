/**
 * `cairn registry remove`: takes a layer (its manifest, and its blob when no
 * other manifest names that blob) or a formation out of a directory
 * registry. Everything is decided before anything is deleted: every manifest
 * of the registry is parsed first (one that cannot be read refuses the
 * removal, since it might name the blob or the layer), and a layer that a
 * formation of the registry still names is refused, naming the formation,
 * unless `force`, because removing it would leave that formation pointing at
 * nothing and every profile that names the formation unresolvable.
 *
 * Order keeps the registry's reading rule (registry.ts): a reader lists
 * documents and never sees one whose signature or blob is missing, so the
 * seed document goes first, then its signature (`.dsse`), then the blob. A crash in between leaves an unreferenced blob, which
 * `cairn registry index` reports. When the registry has an index
 * (registry-index.ts) it is rewritten, atomically, without the entry.
 */
import { existsSync, rmSync } from "node:fs";
import { CairnError, ioError, type Sha256Digest } from "../core/index.ts";
import type { LocalRegistry } from "./registry.ts";
import { buildRegistryIndex, readRegistryIndexBytes, writeRegistryIndex } from "./registry-index.ts";

export type RemoveTarget = { readonly kind: "layer"; readonly id: string } | { readonly kind: "formation"; readonly name: string; readonly version: string };

/** `LAYER_ID` or `formation:NAME@VERSION`, as the command line spells it. */
export function parseRemoveTarget(unsafe: string): RemoveTarget {
  if (!unsafe.startsWith("formation:")) return { kind: "layer", id: unsafe };
  const m = /^formation:([^@]+)@(.+)$/.exec(unsafe);
  if (m === null) {
    throw new CairnError("USAGE", "a formation is named formation:NAME@VERSION", { path: "<target>", hint: "list them with `cairn search '' --formation`" });
  }
  return { kind: "formation", name: m[1]!, version: m[2]! };
}

export interface RemoveResult {
  /** `LAYER_ID` or `formation:NAME@VERSION`. */
  readonly removed: string;
  /** The files deleted, in order. */
  readonly deleted: readonly string[];
  /** The layer's blob when it was kept because other manifests name it (their ids). */
  readonly blobKept?: { readonly sha256: Sha256Digest; readonly namedBy: readonly string[] };
  /** Formations that still name the removed layer (only with `force`). */
  readonly brokenFormations: readonly string[];
  /** The index path when one was rewritten. */
  readonly index?: string;
}

const label = (f: { name: string; version: string }): string => `formation:${f.name}@${f.version}`;

function unlink(path: string): void {
  try {
    rmSync(path);
  } catch (cause) {
    throw ioError(path, cause);
  }
}

/** The signature beside a removed document (always there for a document cairn published, which reads only with one). */
function unlinkIfPresent(path: string, deleted: string[]): void {
  if (!existsSync(path)) return;
  unlink(path);
  deleted.push(path);
}

export function removeFromRegistry(reg: LocalRegistry, target: RemoveTarget, options: { readonly force?: boolean } = {}): RemoveResult {
  // every manifest parsed before anything is deleted (a malformed one refuses, naming its file)
  const layers = reg.listLayers();
  const formations = reg.listFormations();
  const hadIndex = readRegistryIndexBytes(reg) !== undefined;
  const deleted: string[] = [];
  let blobKept: RemoveResult["blobKept"];
  let brokenFormations: string[] = [];
  let removed: string;
  let rest = { layers, formations };
  if (target.kind === "layer") {
    const path = reg.layerPath(target.id); // PATH_UNSAFE for an id that is not one safe component
    const doc = layers.find((d) => d.value.id === target.id);
    if (doc === undefined) {
      throw new CairnError("REGISTRY_NOT_FOUND", `${reg.root} holds no layer ${target.id}`, {
        path: target.id,
        hint: "list layer ids with `cairn registry index --registry DIR` or `cairn search '' --all --json`",
      });
    }
    brokenFormations = formations.filter((f) => f.value.layers.some((m) => m.id === target.id)).map((f) => label(f.value));
    if (brokenFormations.length > 0 && options.force !== true) {
      throw new CairnError("REGISTRY_REFERENCED", `layer ${target.id} is a member of ${brokenFormations.join(", ")} in this registry`, {
        path: target.id,
        hint: `remove ${brokenFormations.length === 1 ? "that formation" : "those formations"} first, or pass --force to leave ${brokenFormations.length === 1 ? "it" : "them"} naming a missing layer`,
      });
    }
    const namedBy = layers.filter((d) => d !== doc && d.value.sha256 === doc.value.sha256).map((d) => d.value.id);
    unlink(path);
    deleted.push(path);
    unlinkIfPresent(reg.layerSignaturePath(target.id), deleted);
    if (namedBy.length > 0) blobKept = { sha256: doc.value.sha256, namedBy };
    else if (reg.hasBlob(doc.value.sha256)) {
      unlink(reg.blobPath(doc.value.sha256));
      deleted.push(reg.blobPath(doc.value.sha256));
    }
    removed = target.id;
    rest = { layers: layers.filter((d) => d !== doc), formations };
  } else {
    const path = reg.formationPath(target.name, target.version);
    const doc = formations.find((f) => f.value.name === target.name && f.value.version === target.version);
    if (doc === undefined || reg.formationEnvelope(target.name, target.version) === undefined) {
      throw new CairnError("REGISTRY_NOT_FOUND", `${reg.root} holds no ${label(target)}`, {
        path: label(target),
        hint: "list formations with `cairn search '' --formation`",
      });
    }
    unlink(path);
    deleted.push(path);
    unlinkIfPresent(reg.formationSignaturePath(target.name, target.version), deleted);
    removed = label(target);
    rest = { layers, formations: formations.filter((f) => f !== doc) };
  }
  const index = hadIndex ? writeRegistryIndex(reg, buildRegistryIndex(reg, [], rest).bytes) : undefined;
  return { removed, deleted, ...(blobKept ? { blobKept } : {}), brokenFormations, ...(index ? { index } : {}) };
}
