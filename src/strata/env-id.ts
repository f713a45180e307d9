/**
 * EnvironmentID: the single definition of what a lockfile's identity covers.
 *
 *   EnvironmentID = "sha256:" + sha256( JCS( hash input ) )
 *
 * where the hash input is an object with `schema: "cairn.environment/1"` and
 * exactly the fields listed as hashed below, taken from the lockfile model
 * (`lockfileToModel`), with layers in mount order. Every lockfile field is in
 * one of the two lists; `tests/strata/scope.test.ts` fails when a field is
 * added to the lockfile without being placed.
 *
 * Equal IDs promise identical instructions: the same base facts, the same
 * layer bytes in the same order, the same env, on_ready commands, defaults,
 * package requests, mutable-layer switch and host requirements. They do not
 * promise what on_ready does when it runs, what a package manager installs for
 * a request without a digest, or what is written into a mutable upper layer.
 */
import { CairnError, canonicalBytes, sha256, type Sha256Digest } from "../core/index.ts";
import { isFrozen, lockfileToModel, type Lockfile } from "./lockfile.ts";

export const ENVIRONMENT_ID_SCHEMA = "cairn.environment/1";

/** The fields the ID covers, per lockfile object. */
export const HASHED = {
  lockfile: ["base", "layers", "env", "on_ready", "defaults", "packages", "mutable_layer", "requires_host"],
  base: ["name", "arch", "abi", "digest"],
  layer: ["id", "sha256", "size", "mount_order"],
} as const;

/** The fields the ID leaves out, each with the reason. */
export const EXCLUDED = {
  lockfile: {
    format: "the file format version, not the environment; a new format of the same environment keeps its ID by design of the hash input",
    profile: "provenance: two profiles that resolve to the same instructions are the same environment",
    profile_sha256: "provenance: as profile",
    resolved_at: "wall-clock time of resolution",
    cairn_version: "provenance: the tool that resolved, not what was resolved",
    verification_policy: "attestation label: how the inputs were checked, not what they are (shown by lock verify and provenance)",
    formations: "provenance: which formations brought layers in; the layers themselves are hashed",
    not_acted_upon: "instance and storage are recorded but cairn does not act on them",
  },
  base: {
    os_id: "covered by base.digest",
    version_id: "covered by base.digest",
    capabilities: "covered by base.digest",
    image: "covered by base.digest",
    source: "provenance: how the base facts were obtained (host, rootfs, oci, declared)",
    probed_at: "wall-clock time of the probe",
  },
  layer: {
    name: "restated from the layer manifest; the id and blob digest are hashed",
    version: "restated from the layer manifest; the id and blob digest are hashed",
    manifest_sha256: "provenance: the manifest adds provides/requires and build records, which do not change the bytes mounted",
    from_formation: "provenance: which formation brought the layer in",
    satisfied_by: "derived explanation of requirements; the mount order it produced is hashed",
    signature: "provenance: who signed the manifest, not what it holds",
    registry: "provenance: where the blob was found; the blob digest is hashed",
  },
} as const;

function pick(model: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) out[f] = model[f] ?? null;
  return out;
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
  const input = pick(model, HASHED.lockfile);
  input.schema = ENVIRONMENT_ID_SCHEMA;
  input.base = pick(model.base as Record<string, unknown>, HASHED.base);
  const layers = [...(model.layers as Record<string, unknown>[])].sort((a, b) => (a.mount_order as number) - (b.mount_order as number));
  input.layers = layers.map((l) => pick(l, HASHED.layer));
  return input;
}

export function environmentId(lock: Lockfile): Sha256Digest {
  return sha256(canonicalBytes(environmentIdInput(lock)));
}
