/**
 * The derived entry `cairn.derived/1`: the canonical tree of a workload,
 * stored in the content store under the sha256 of its JCS bytes. It names its
 * complete raw closure, the launch values and their digest, the policy with
 * its version, and the filesystem digest, so a reader holding only the entry
 * can tell what it was made from and check it.
 *
 * Nothing parses a stored entry: `openVerifiedWorkload` rebuilds the entry
 * from the raw closure and requires the stored bytes to be identical, then
 * hands out the rebuilt values.
 */
import { declareIdentity, defineScope, identityBytes } from "../core/index.ts";
import { rawModel, type RawRef } from "./closure.ts";
import type { SourceKind, WorkloadIdentities } from "./workload-identity.ts";
import { launchModel, type Launch } from "./launch.ts";
import { policyModel, sortedEntries, type CanonicalTree, type FsEntry, type LayerPolicy } from "../tree/index.ts";

export const DERIVED_SCHEMA = "cairn.derived/1";

/** The derived entry is stored under the sha256 of exactly these bytes (the store's content address). */
export const DERIVED_ENTRY_IDENTITY = declareIdentity({
  name: "derived entry",
  tag: DERIVED_SCHEMA,
  algorithm: "sha256",
  framing: "jcs-schema-field",
  role: "identity",
  definedIn: "src/workload/derived-entry.ts",
});

/** The entry is a complete record: everything in it is covered, so a reader holding only the entry can check it. */
export const DERIVED_ENTRY_SCOPE = defineScope({
  identity: DERIVED_SCHEMA,
  covers: {
    "/schema": "the entry format version",
    "/source_kind": "binary or oci",
    "/identities": "the workload, source, fs and launch identities",
    "/policy": "the layer policy with its version",
    "/launch": "the launch values the launch identity hashes",
    "/raw": "the complete raw closure the entry was derived from",
    "/tree": "every entry of the canonical tree, sorted by path bytes",
  },
  excludes: {},
});

export interface DerivedEntry {
  readonly kind: SourceKind;
  readonly identities: WorkloadIdentities;
  readonly policy: LayerPolicy;
  readonly launch: Launch;
  readonly raw: readonly RawRef[];
  readonly tree: CanonicalTree;
}

function entryModel(e: FsEntry): Record<string, string | number> {
  const base = { path: e.path, type: e.type, mode: e.mode, uid: e.uid, gid: e.gid, mtime: e.mtime };
  if (e.type === "file") return { ...base, size: e.size, sha256: e.sha256 };
  if (e.type === "symlink") return { ...base, target: e.target };
  return base;
}

/** The JCS bytes of a derived entry (deterministic: the same workload always gives the same bytes). */
export function encodeDerived(d: DerivedEntry): Buffer {
  return identityBytes(DERIVED_ENTRY_IDENTITY, {
    source_kind: d.kind,
    identities: { ...d.identities },
    policy: policyModel(d.policy),
    launch: launchModel(d.launch),
    raw: rawModel(d.raw),
    tree: sortedEntries(d.tree).map(entryModel),
  });
}
