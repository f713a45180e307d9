/**
 * EnvironmentID: the single definition of what a lockfile's identity covers.
 *
 *   EnvironmentID = "sha256:" + sha256( JCS( hash input ) )
 *
 * where the hash input is an object with `schema: "cairn.environment/2"` and
 * exactly the fields `ENVIRONMENT_ID_SCOPE` covers, taken from the lockfile
 * model (`lockfileToModel`), with layers in mount order. Every lockfile field
 * is in one of its two lists; `tests/strata/scope.test.ts` fails when a field
 * is added to the lockfile without being placed.
 *
 * Equal IDs promise identical instructions: the same base facts, the same
 * layer bytes in the same order, the same env, on_ready commands, defaults,
 * package requests, mutable-layer spec and host requirements. They do not
 * promise what on_ready does when it runs, what a package manager installs for
 * a request without a digest, or what is written into a mutable upper layer.
 */
import { CairnError, declareIdentity, defineScope, identityDigest, scopeFieldNames, type Sha256Digest } from "../core/index.ts";
import { hostRequirementSet, hostRequirementToModel } from "./capability.ts";
import { isFrozen, type Lockfile } from "./lockfile.ts";
import { lockfileToModel } from "./lockfile-model.ts";

export const ENVIRONMENT_ID_SCHEMA = "cairn.environment/2";

/** The tag is the `schema` field of the hash input (kept that way so no EnvironmentID changes). */
export const ENVIRONMENT_ID = declareIdentity({
  name: "EnvironmentID",
  tag: ENVIRONMENT_ID_SCHEMA,
  algorithm: "sha256",
  framing: "jcs-schema-field",
  role: "identity",
  definedIn: "src/strata/env-id.ts",
});

/** The fields the ID covers and the fields it leaves out, each with the reason; pointers into the lockfile model. */
export const ENVIRONMENT_ID_SCOPE = defineScope({
  identity: ENVIRONMENT_ID_SCHEMA,
  covers: {
    "/base": "the base the layers sit on, through the fields below",
    "/layers": "every layer, in mount order, through the fields below",
    "/env": "the environment variables every process sees",
    "/on_ready": "the commands run when the environment is ready, as text",
    "/defaults": "the software refs Lmod loads at login, in their order",
    "/packages":
      "the package requests handed to package managers and, once frozen, every pinned archive (name, version, kind, filename, sha256, size) and the target it was chosen for",
    "/mutable_layer": "whether a writable upper layer is mounted, and its spec (name, version, size_gb, volume_type, abi) when one is given",
    "/requires_host": "what the host must provide, as a set: sorted and de-duplicated before hashing, so its order never changes the ID",
    "/base/name": "the base's name",
    "/base/arch": "the machine architecture",
    "/base/abi": "the C library ABI layers are built against",
    "/base/digest": "the probed base facts (os-release, capabilities, image digest) through cairn.base/1",
    "/layers/*/id": "the layer's id (name, version, ABI, arch)",
    "/layers/*/sha256": "the blob bytes that are mounted",
    "/layers/*/size": "the blob size",
    "/layers/*/mount_order": "where the layer sits in the stack",
    "/packages/*/manager": "which package manager installs the set",
    "/packages/*/packages": "the requests as the profile wrote them (name and version or specifier)",
    "/packages/*/env": "the conda environment the set is installed into",
    "/packages/*/frozen/target": "what the pins were chosen for (Python, platform, conda subdir, R): other targets pick other archives",
    "/packages/*/frozen/pins/*/name": "the pinned package",
    "/packages/*/frozen/pins/*/version": "its exact version",
    "/packages/*/frozen/pins/*/kind": "wheel, sdist, conda or cran: how it is installed",
    "/packages/*/frozen/pins/*/filename": "the archive's file name (for a wheel, its tags)",
    "/packages/*/frozen/pins/*/sha256": "the archive's bytes",
    "/packages/*/frozen/pins/*/size": "the archive's size",
    "/packages/*/frozen/pins/*/requested_by": "which requirements chose it: the same pins reached through other requirements are another resolution",
    "/packages/*/frozen/pins/*/dependencies": "present (unknown) when the archive's dependencies could not be known, so they are not pinned",
  },
  excludes: {
    "/format": "the file format version, not the environment; a new format of the same environment keeps its ID by design of the hash input",
    "/profile": "provenance: two profiles that resolve to the same instructions are the same environment",
    "/profile_sha256": "provenance: as profile",
    "/resolved_at": "wall-clock time of resolution",
    "/cairn_version": "provenance: the tool that resolved, not what was resolved",
    "/verification_policy": "attestation label: how the inputs were checked, not what they are (shown by lock verify and provenance)",
    "/formations": "provenance: which formations brought layers in; the layers themselves are hashed",
    "/not_acted_upon": "instance and storage are recorded but cairn does not act on them",
    "/base/os_id": "covered by base.digest",
    "/base/version_id": "covered by base.digest",
    "/base/capabilities": "covered by base.digest",
    "/base/image": "covered by base.digest",
    "/base/source": "provenance: how the base facts were obtained (host, rootfs, oci, declared)",
    "/base/probed_at": "wall-clock time of the probe",
    "/layers/*/name": "restated from the layer manifest; the id and blob digest are hashed",
    "/layers/*/version": "restated from the layer manifest; the id and blob digest are hashed",
    "/layers/*/manifest_sha256": "provenance: the manifest adds provides/requires and build records, which do not change the bytes mounted",
    "/layers/*/from_formation": "provenance: which formation brought the layer in",
    "/layers/*/satisfied_by": "derived explanation of requirements; the mount order it produced is hashed",
    "/layers/*/signature": "provenance: who signed the manifest, not what it holds",
    "/layers/*/registry": "provenance: where the blob was found; the blob digest is hashed",
    "/layers/*/modulefile":
      "restated from the layer manifest (path and sha256 of the Lmod modulefile); its bytes are a file of the blob, whose digest is hashed",
    "/layers/*/manifest_envelope":
      "provenance for offline audit: the signed manifest's envelope, pinned by signature.envelope_sha256 and manifest_sha256; embedding it adds no instruction, so locks with and without it share an ID",
    "/packages/*/frozen/index": "provenance: the index the pins were read from; the same archives pinned from a mirror are the same environment",
    "/packages/*/frozen/pins/*/url": "provenance: where each archive was fetched; its sha256 and size are hashed",
  },
});

function pick(model: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) out[f] = model[f] ?? null;
  return out;
}

/** A package set's model without the fields FROZEN_PROVENANCE names (an unfrozen set is unchanged, so its locks keep their IDs). */
function withoutFrozenProvenance(set: Record<string, unknown>): Record<string, unknown> {
  if (set.frozen === undefined) return set;
  const { index: _index, pins, ...frozen } = set.frozen as Record<string, unknown>;
  return { ...set, frozen: { ...frozen, pins: (pins as Record<string, unknown>[]).map(({ url: _url, ...pin }) => pin) } };
}

/** The exact object whose JCS bytes are hashed. Throws LOCK_UNFROZEN for an unfrozen lockfile. */
export function environmentIdInput(lock: Lockfile): Record<string, unknown> {
  if (!isFrozen(lock)) {
    throw new CairnError("LOCK_UNFROZEN", "an unfrozen lockfile (a layer without digest or mount order, or a base without digest) has no EnvironmentID", {
      path: "/layers",
      hint: "resolve the profile again to freeze every layer",
    });
  }
  const model = lockfileToModel(lock);
  const input = pick(model, scopeFieldNames(ENVIRONMENT_ID_SCOPE, "covers"));
  input.schema = ENVIRONMENT_ID_SCHEMA;
  input.base = pick(model.base as Record<string, unknown>, scopeFieldNames(ENVIRONMENT_ID_SCOPE, "covers", "/base"));
  const layers = [...(model.layers as Record<string, unknown>[])].sort((a, b) => (a.mount_order as number) - (b.mount_order as number));
  const layerFields = scopeFieldNames(ENVIRONMENT_ID_SCOPE, "covers", "/layers/*");
  input.layers = layers.map((l) => pick(l, layerFields));
  input.packages = (model.packages as Record<string, unknown>[]).map(withoutFrozenProvenance);
  // A set: the order a profile lists host requirements in is not part of the environment.
  input.requires_host = hostRequirementSet(lock.requires_host).map(hostRequirementToModel);
  return input;
}

export function environmentId(lock: Lockfile): Sha256Digest {
  return identityDigest(ENVIRONMENT_ID, environmentIdInput(lock));
}
