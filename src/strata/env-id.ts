/**
 * A lockfile's two identities.
 *
 * Strata's EnvironmentID (spec/lock-file.ts, exactly as seed 002 and
 * Strata's lockfile_hash.go define it): bare hex SHA-256 over Go's JSON of
 * the base digest, the layer digests in mount order, env, on_ready and the
 * pinned packages. `cairn lock id` prints it first.
 *
 * cairn's content identity, defined here once:
 *
 *   content identity = "sha256:" + sha256( JCS( hash input ) )
 *
 * where the hash input is an object with `schema: "cairn.environment/2"` and
 * exactly the fields `ENVIRONMENT_ID_SCOPE` covers, read from the lockfile as
 * it travels (seed 002's LockFile), layers in mount order. It covers all that
 * Strata's covers and also the layer ids and sizes, the Lmod defaults, the
 * mutable-layer spec and the host requirements. Every field of the LockFile,
 * ResolvedBase and ResolvedLayer is in one of its two lists;
 * tests/strata/scope.test.ts fails when a field is added without being placed.
 * It is computed from the lockfile alone (cairn's records beside it are not
 * read), so a lockfile has the same identity wherever it travels.
 *
 * Equal identities promise identical instructions: the same base facts, the
 * same layer bytes in the same order, the same env, on_ready commands,
 * defaults, pinned packages, mutable-layer spec and host requirements. They
 * do not promise what on_ready does when it runs, what a package without a
 * digest installs, or what is written into a mutable upper layer.
 */
import { CairnError, compareBytes, declareIdentity, defineScope, identityDigest, scopeFieldNames, type Sha256Digest } from "../core/index.ts";
import { isFrozen, type Lockfile } from "./lockfile.ts";
import { refString } from "./ref.ts";
import { LAYER_MANIFEST } from "./spec/schema.ts";

export const ENVIRONMENT_ID_SCHEMA = "cairn.environment/2";

/** The tag is the `schema` field of the hash input. */
export const ENVIRONMENT_ID = declareIdentity({
  name: "cairn content identity",
  tag: ENVIRONMENT_ID_SCHEMA,
  algorithm: "sha256",
  framing: "jcs-schema-field",
  role: "identity",
  definedIn: "src/strata/env-id.ts",
});

/** The fields the content identity covers and the fields it leaves out, each with the reason: pointers into the lockfile (seed 002's LockFile). */
export const ENVIRONMENT_ID_SCOPE = defineScope({
  identity: ENVIRONMENT_ID_SCHEMA,
  covers: {
    "/base": "the base the layers sit on, through its digest",
    "/layers": "every layer, in mount order, through the fields below",
    "/env": "the environment variables every process sees",
    "/on_ready": "the commands run when the environment is ready, as text",
    "/defaults": "the software Lmod loads at login, in order (refs as their canonical strings)",
    "/packages": "the pinned package sets: manager, conda env, and every package's name, exact version and sha256 when known",
    "/mutable_layer": "whether a writable upper layer is mounted, and its spec",
    "/requires_host": "what the host must provide, as a set: sorted and de-duplicated before hashing",
    "/base/ami_sha256": "the probed base facts (capabilities record) through cairn.base/2",
    "/layers/*/id": "the layer's id (name, version, ABI, arch)",
    "/layers/*/sha256": "the blob bytes that are mounted",
    "/layers/*/size": "the blob size",
    "/layers/*/mount_order": "where the layer sits in the stack",
  },
  excludes: {
    "/profile": "provenance: two profiles that resolve to the same instructions are the same environment",
    "/profile_sha256": "provenance: as profile",
    "/resolved_at": "wall-clock time of resolution",
    "/strata_version": "provenance: the tool that resolved, not what was resolved",
    "/rekor_entry": "attestation of the lockfile, not its content",
    "/bundle": "attestation of the lockfile, not its content",
    "/verification_policy": "attestation label: how the inputs were checked, not what they are",
    "/base/declared_os": "the profile's name for the base; the probed facts are hashed through ami_sha256",
    "/base/ami_id": "covered by ami_sha256",
    "/base/capabilities": "covered by ami_sha256 (less probed_at, the probe's wall-clock time)",
    "/layers/*/name": "restated in the id; the blob digest is hashed",
    "/layers/*/version": "restated in the id; the blob digest is hashed",
    "/layers/*/source": "provenance: where the blob was found; its digest is hashed",
    "/layers/*/content_manifest": "restated from the blob: every file's digest follows from the blob digest, which is hashed",
    "/layers/*/rekor_entry": "attestation: who vouched for the manifest, not what it holds",
    "/layers/*/bundle": "attestation: who vouched for the manifest, not what it holds",
    "/layers/*/signed_by": "attestation: who vouched for the manifest, not what it holds",
    "/layers/*/cosign_version": "attestation: the tool that signed",
    "/layers/*/provides": "the layer's contract for resolution; the bytes mounted are hashed",
    "/layers/*/requires": "the layer's contract for resolution; the mount order it produced is hashed",
    "/layers/*/arch": "restated in the id",
    "/layers/*/abi": "restated in the id",
    "/layers/*/built_at": "wall-clock provenance of the build",
    "/layers/*/user_selectable": "catalog presentation, not content",
    "/layers/*/install_layout": "how the recipe installed; the resulting bytes are hashed",
    "/layers/*/has_modulefile": "restated from the blob (the modulefile is a file of it)",
    "/layers/*/recipe_sha256": "build provenance: what produced the bytes, which are hashed",
    "/layers/*/build_env_lock_id": "build provenance",
    "/layers/*/built_with": "build provenance",
    "/layers/*/bootstrap_build": "build provenance",
    "/layers/*/bootstrap_compiler": "build provenance",
    "/layers/*/build_environment": "build provenance",
    "/layers/*/capture_source": "build provenance",
    "/layers/*/folded_from": "build provenance: the layers folded; the result's bytes are hashed",
    "/layers/*/original_prefix": "build provenance",
    "/layers/*/normalized": "build provenance",
    "/layers/*/satisfied_by": "why the resolver chose the layer, not what it is",
    "/layers/*/from_formation": "provenance: which formation brought the layer in; the layer itself is hashed",
  },
});

/** The exact object whose JCS bytes are hashed. Throws LOCK_UNFROZEN for an unfrozen lockfile. */
export function environmentIdInput(lock: Lockfile): Record<string, unknown> {
  if (!isFrozen(lock)) {
    throw new CairnError("LOCK_UNFROZEN", "an unfrozen lockfile (a layer or the base without a digest) has no identity", {
      path: "/layers",
      hint: "resolve the profile again to freeze every layer",
    });
  }
  const s = lock.spec;
  const layerFields = scopeFieldNames(ENVIRONMENT_ID_SCOPE, "covers", "/layers/*");
  const layers = [...s.layers].sort((a, b) => a.mount_order - b.mount_order);
  const hosts = [...new Map(s.requires_host.map((h) => [JSON.stringify([h.key, h.value]), h])).entries()].sort(([a], [b]) => compareBytes(a, b));
  return {
    schema: ENVIRONMENT_ID_SCHEMA,
    base: { ami_sha256: s.base.ami_sha256 },
    layers: layers.map((l) => Object.fromEntries(layerFields.map((f) => [f, (l as unknown as Record<string, unknown>)[f]]))),
    env: { ...s.env },
    on_ready: [...s.on_ready],
    defaults: s.defaults.map(refString),
    packages: s.packages.map((p) => ({ manager: p.manager, env: p.env, packages: p.packages })),
    mutable_layer: s.mutable_layer ?? null,
    requires_host: hosts.map(([, h]) => ({ key: h.key, value: h.value })),
  };
}

export function environmentId(lock: Lockfile): Sha256Digest {
  return identityDigest(ENVIRONMENT_ID, environmentIdInput(lock));
}

/** Every field a layer carries on the wire (for the scope test). */
export const LAYER_WIRE_FIELDS = [...LAYER_MANIFEST.fields.map((f) => f.name), "mount_order", "satisfied_by", "from_formation"];
