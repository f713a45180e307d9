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
 * `WORKLOAD_IDENTITY_SCOPE` places every field of the workload spec and of
 * the workload lock as covered or not covered, with the reason. A test walks
 * real models and fails when a field appears that is in neither list.
 */
import { declareIdentity, defineScope, identityDigest, type Sha256Digest } from "../core/index.ts";
import { policyModel, type LayerPolicy } from "../tree/index.ts";

export const WORKLOAD_IDENTITY_TAG = "cairn.workload.identity/1";
export const SOURCE_IDENTITY_TAG = "cairn.source/1";

export const WORKLOAD_IDENTITY = declareIdentity({
  name: "workload identity",
  tag: WORKLOAD_IDENTITY_TAG,
  algorithm: "sha256",
  framing: "tag-nul-jcs",
  role: "identity",
  definedIn: "src/workload/workload-identity.ts",
});

export const SOURCE_IDENTITY = declareIdentity({
  name: "source identity",
  tag: SOURCE_IDENTITY_TAG,
  algorithm: "sha256",
  framing: "tag-nul-jcs",
  role: "identity",
  definedIn: "src/workload/workload-identity.ts",
});

export type SourceKind = "binary" | "oci";

/**
 * The source identity: what bytes the workload was built from.
 * binary: the executable's sha256 and size. oci: the selected manifest's
 * digest, which through the manifest covers the config (and so the DiffIDs
 * and launch fields) and every layer blob.
 */
export type SourceFacts = { kind: "binary"; executable: Sha256Digest; size: number } | { kind: "oci"; manifest: Sha256Digest };

/** Both kinds of source facts; a field of either kind is covered (the kind itself too). */
export const SOURCE_IDENTITY_SCOPE = defineScope({
  identity: SOURCE_IDENTITY_TAG,
  covers: {
    "/kind": "binary or oci: the two kinds never share a value",
    "/executable": "binary: the sha256 of the executable's bytes",
    "/size": "binary: the executable's size in bytes",
    "/manifest": "oci: the selected manifest digest, which covers the config and every layer blob",
  },
  excludes: {},
});

export function sourceIdentity(facts: SourceFacts): Sha256Digest {
  return identityDigest(SOURCE_IDENTITY, facts);
}

export interface WorkloadIdentities {
  readonly workload: Sha256Digest;
  readonly source: Sha256Digest;
  readonly fs: Sha256Digest;
  readonly launch: Sha256Digest;
}

export function workloadIdentity(parts: { kind: SourceKind; source: Sha256Digest; fs: Sha256Digest; launch: Sha256Digest; policy: LayerPolicy }): Sha256Digest {
  return identityDigest(WORKLOAD_IDENTITY, {
    source_kind: parts.kind,
    source: parts.source,
    fs: parts.fs,
    launch: parts.launch,
    policy: policyModel(parts.policy),
  });
}

/**
 * Every field of the spec (`spec:` JSON pointers) and the lock (`lock:`),
 * covered by the workload identity or not, and why. The single list.
 */
export const WORKLOAD_IDENTITY_SCOPE = defineScope({
  identity: WORKLOAD_IDENTITY_TAG,
  covers: {
    "spec:/schema": "the spec version decides how every other field is read (through the identity tags)",
    "spec:/source/binary/args": "part of the launch identity (argv)",
    "spec:/source/binary/env": "part of the launch identity (env)",
    "spec:/source/binary/workdir": "part of the launch identity, and of the tree when it adds directories",
    "spec:/source/binary/user": "part of the launch identity and the executable's owner in the tree",
    "spec:/source/oci/manifest": "selects the image; it is the OCI source identity",
    "spec:/source/oci/launch":
      "the spec's launch over the image config's (args, env, workdir, user): part of the launch identity through the launch it produces",
    "spec:/policy": "decides how layers become a tree (version and relaxations)",
    "spec:/policy/hardlinks": "copy: in-root hard links become copies (the tree has the copies)",
    "spec:/policy/setid": "strip: setuid and setgid bits are cleared (the tree has the cleared modes)",
    "spec:/policy/devices": "skip: device nodes and FIFOs are left out of the tree (named in the policy model only when taken)",
    "spec:/policy/xattrs": "drop: extended attributes, file capabilities included, are dropped (named in the policy model only when taken)",
    "spec:/policy/platform":
      "config: a selected descriptor without platform is accepted on the config's linux/amd64 (named in the policy model only when taken)",
    "lock:/workload": "the workload identity itself",
    "lock:/source_kind": "binary or oci",
    "lock:/identities": "source, fs and launch identities",
    "lock:/policy": "the layer policy model",
    "lock:/policy/version": "the policy semantics version, cairn.policy/1",
    "lock:/policy/hardlinks": "the hard-link relaxation, refuse or copy",
    "lock:/policy/setid": "the setid relaxation, refuse or strip",
    "lock:/policy/devices": "present only as skip: devices and FIFOs left out",
    "lock:/policy/xattrs": "present only as drop: xattrs dropped",
    "lock:/policy/platform": "present only as config: platform taken from the image config",
  },
  excludes: {
    "spec:/source/binary/path": "a locator: where the executable was found, not what it is; its bytes are covered through the source identity",
    "spec:/source/oci/layout": "a locator: the layout directory's path; the selected content is covered through the manifest digest",
    "spec:/source/oci/ref":
      "a locator: the registry and repository the image is pulled from; the selected content is covered through the manifest digest (the ref's digest selects it and is verified against the bytes)",
    "spec:/limits": "limits only accept or refuse input; they never change an accepted tree",
    "spec:/run": "belongs to runs (scenario steps, assertions); one workload serves many runs",
    "lock:/schema": "the lock format version; not a property of the workload",
    "lock:/raw":
      "the raw closure (spec, executable or manifest, config, layers) is how the identity is re-derived; the layout's oci-layout and index.json are not in it and not part of what runs",
    "lock:/derived": "the stored derived entry's digest; it also names the raw closure and the canonical spec, so it changes with limits and run",
    "lock:/created": "wall-clock provenance",
    "lock:/cairn_version": "provenance: which cairn wrote the lock",
    "lock:/lock_digest": "integrity of the lock file itself",
  },
});
