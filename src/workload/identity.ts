/**
 * The workload identity, defined here and only here.
 *
 *   workload = sha256( "cairn.workload.identity/1" 0x00 || JCS({
 *       source_kind, source, fs, launch, policy }) )
 *
 * where `source` is the source identity `cairn.source/1` (below), `fs` the
 * `cairn.fs/1` digest of the canonical tree, `launch` the `cairn.launch/1`
 * digest, and `policy` the layer policy model with its version.
 *
 * `WORKLOAD_SCOPE` places every field of the workload spec and of the
 * workload lock as covered or not covered, with the reason. A test walks the
 * real models and fails when a field appears that is in neither list.
 */
import type { Sha256Digest } from "../core/index.ts";
import { policyModel, type LayerPolicy } from "../tree/index.ts";
import { taggedJsonDigest } from "./tagged.ts";

export const WORKLOAD_IDENTITY_TAG = "cairn.workload.identity/1";
export const SOURCE_IDENTITY_TAG = "cairn.source/1";

export type SourceKind = "binary" | "oci";

/**
 * The source identity: what bytes the workload was built from.
 * binary: the executable's sha256 and size. oci: the selected manifest's
 * digest, which through the manifest covers the config (and so the DiffIDs
 * and launch fields) and every layer blob.
 */
export type SourceFacts = { kind: "binary"; executable: Sha256Digest; size: number } | { kind: "oci"; manifest: Sha256Digest };

export function sourceIdentity(facts: SourceFacts): Sha256Digest {
  return taggedJsonDigest(SOURCE_IDENTITY_TAG, facts);
}

export interface WorkloadIdentities {
  readonly workload: Sha256Digest;
  readonly source: Sha256Digest;
  readonly fs: Sha256Digest;
  readonly launch: Sha256Digest;
}

export function workloadIdentity(parts: { kind: SourceKind; source: Sha256Digest; fs: Sha256Digest; launch: Sha256Digest; policy: LayerPolicy }): Sha256Digest {
  return taggedJsonDigest(WORKLOAD_IDENTITY_TAG, {
    source_kind: parts.kind,
    source: parts.source,
    fs: parts.fs,
    launch: parts.launch,
    policy: policyModel(parts.policy),
  });
}

export interface ScopeRow {
  readonly covered: boolean;
  readonly why: string;
}

/**
 * Every field of the spec (`spec:` JSON pointers) and the lock (`lock:`),
 * covered by the workload identity or not, and why. The single list.
 */
export const WORKLOAD_SCOPE: Readonly<Record<string, ScopeRow>> = Object.freeze({
  "spec:/schema": { covered: true, why: "the spec version decides how every other field is read (through the identity tags)" },
  "spec:/source/binary/path": { covered: false, why: "a locator: where the executable was found, not what it is; its bytes are covered through the source identity" },
  "spec:/source/binary/args": { covered: true, why: "part of the launch identity (argv)" },
  "spec:/source/binary/env": { covered: true, why: "part of the launch identity (env)" },
  "spec:/source/binary/workdir": { covered: true, why: "part of the launch identity, and of the tree when it adds directories" },
  "spec:/source/binary/user": { covered: true, why: "part of the launch identity and the executable's owner in the tree" },
  "spec:/source/oci/layout": { covered: false, why: "a locator: the layout directory's path; the selected content is covered through the manifest digest" },
  "spec:/source/oci/manifest": { covered: true, why: "selects the image; it is the OCI source identity" },
  "spec:/policy": { covered: true, why: "decides how layers become a tree (version and relaxations)" },
  "spec:/limits": { covered: false, why: "limits only accept or refuse input; they never change an accepted tree" },
  "spec:/run": { covered: false, why: "belongs to runs (scenario steps, assertions); one workload serves many runs" },
  "lock:/schema": { covered: false, why: "the lock format version; not a property of the workload" },
  "lock:/workload": { covered: true, why: "the workload identity itself" },
  "lock:/source_kind": { covered: true, why: "binary or oci" },
  "lock:/identities": { covered: true, why: "source, fs and launch identities" },
  "lock:/policy": { covered: true, why: "the layer policy model" },
  "lock:/raw": { covered: false, why: "the raw closure (spec, oci-layout, index.json, descriptor, ...) is how the identity is re-derived; oci-layout, index.json and other index entries are not part of what runs" },
  "lock:/derived": { covered: false, why: "the stored derived entry's digest; it also names the raw closure and the canonical spec, so it changes with limits and run" },
  "lock:/created": { covered: false, why: "wall-clock provenance" },
  "lock:/cairn_version": { covered: false, why: "provenance: which cairn wrote the lock" },
  "lock:/lock_digest": { covered: false, why: "integrity of the lock file itself" },
});
