/**
 * The one path from verified source bytes to a workload's tree, launch and
 * identities. `assemble` feeds it bytes it just read from the user's files;
 * `verify` feeds it bytes it re-read from the store. Because both go through
 * here, a lock can only verify if the stored raw closure still produces
 * exactly the identities the lock names.
 */
import { CairnError, canonicalBytes, sha256, type Sha256Digest } from "../core/index.ts";
import { buildBinaryWorkload } from "./binary.ts";
import type { RawRef } from "./closure.ts";
import { hashDerived, type DerivedEntry } from "./derived-entry.ts";
import { fsIdentityOf, sortedEntries } from "../tree/index.ts";
import { sourceIdentity, workloadIdentity, type SourceFacts, type SourceKind, type WorkloadIdentities } from "./workload-identity.ts";
import { launchIdentity, type Launch } from "./launch.ts";
import type { LayerPolicy } from "../tree/index.ts";
import { canonicalSpecModel, type BinarySourceSpec, type WorkloadSpec } from "./spec.ts";
import type { CanonicalTree } from "../tree/index.ts";

export interface Derived {
  readonly kind: SourceKind;
  readonly specBytes: Buffer;
  readonly tree: CanonicalTree;
  readonly launch: Launch;
  readonly policy: LayerPolicy;
  readonly identities: WorkloadIdentities;
  readonly raw: readonly RawRef[];
  readonly derivedDigest: Sha256Digest;
  readonly derivedSize: number;
}

/** What a derivation is for: `verify` re-hashes each stored layer as it reads it (recheckStored). */
export type DeriveFor = "assemble" | "verify";

/** The derived entry of a derivation (what hashDerived and encodeDerived encode). */
export function derivedEntryOf(d: Derived): DerivedEntry {
  return { kind: d.kind, identities: d.identities, policy: d.policy, launch: d.launch, raw: d.raw, tree: d.tree };
}

/** The canonical spec bytes (the spec's raw object). */
export function canonicalSpecBytes(spec: WorkloadSpec): Buffer {
  return canonicalBytes(canonicalSpecModel(spec));
}

/** Computes every identity and the derived entry from a tree, launch and source facts. */
export function finishDerivation(input: { spec: WorkloadSpec; tree: CanonicalTree; launch: Launch; source: SourceFacts; raw: readonly RawRef[] }): Derived {
  const specBytes = canonicalSpecBytes(input.spec);
  const specRef: RawRef = { role: "spec", digest: sha256(specBytes), size: specBytes.length };
  const raw = [specRef, ...input.raw];
  const kind = input.source.kind;
  // the tree's invariants checked once, for both encoders of it (the fs identity and the derived entry)
  const entries = sortedEntries(input.tree);
  const fs = fsIdentityOf(entries);
  const launch = launchIdentity(input.launch);
  const source = sourceIdentity(input.source);
  const workload = workloadIdentity({ kind, source, fs, launch, policy: input.spec.policy });
  const identities = { workload, source, fs, launch };
  const entry = { kind, identities, policy: input.spec.policy, launch: input.launch, raw, tree: input.tree };
  // hashed as it is made, never held: assembly writes it into the store by the same pass again (hashDerived)
  const hashed = hashDerived(entry, undefined, entries);
  return {
    kind,
    specBytes,
    tree: input.tree,
    launch: input.launch,
    policy: input.spec.policy,
    identities,
    raw,
    derivedDigest: hashed.digest,
    derivedSize: hashed.size,
  };
}

/** A binary workload from the executable's bytes (already read, bounded). */
export function deriveBinary(spec: WorkloadSpec, exeBytes: Uint8Array, where: string): Derived {
  if (spec.source.kind !== "binary") throw new CairnError("WORKLOAD_SPEC_INVALID", "not a binary spec", { path: "/source" });
  const source: BinarySourceSpec = spec.source;
  const exe = { bytes: exeBytes, sha256: sha256(exeBytes) };
  const { tree, launch } = buildBinaryWorkload(source, exe, where);
  return finishDerivation({
    spec,
    tree,
    launch,
    source: { kind: "binary", executable: exe.sha256, size: exeBytes.length },
    raw: [{ role: "executable", digest: exe.sha256, size: exeBytes.length }],
  });
}
