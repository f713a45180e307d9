/**
 * The resolver: profile + catalog + base → lockfile, one stage at a time
 *   base → expand formations → resolve refs → requirements → conflicts →
 *   mount order → attestation policy → lockfile.
 * Everything it depends on is an argument (the clock included), so the same
 * inputs give byte-identical lockfiles apart from `resolved_at`.
 */
import { compareBytes, declareIdentity, identityDigest, type Sha256Digest } from "../../core/index.ts";
import type { LockBase } from "../base.ts";
import type { LayerManifest } from "../layer-manifest.ts";
import type { Catalog } from "../catalog.ts";
import { LOCKFILE_FORMAT, type LockLayer, type Lockfile } from "../lockfile.ts";
import { hostRequirementSet } from "../capability.ts";
import { notActedUponModel, profileToModel, type Profile } from "../profile-model.ts";
import { stageBase } from "./base-stage.ts";
import { expandFormations } from "./formations.ts";
import { mergePicks, resolveRefs } from "./refs.ts";
import { checkRequirements } from "./requirements.ts";
import { checkConflicts } from "./conflicts.ts";
import { mountOrder } from "./mount-order.ts";
import { attestLayers } from "./attest-stage.ts";
import { pickId } from "./pick.ts";

export interface ResolveInput {
  readonly profile: Profile;
  readonly catalog: Catalog;
  /** The probed base, or undefined to record the profile's base as declared. */
  readonly probedBase?: LockBase;
  readonly allowUnsignedOffline: boolean;
  readonly now: Date;
  readonly cairnVersion: string;
}

/** Integrity, not identity: which profile was resolved (`profile_sha256` in the lockfile, provenance the EnvironmentID excludes). */
export const PROFILE_DIGEST = declareIdentity({
  name: "lockfile profile_sha256",
  tag: LOCKFILE_FORMAT,
  algorithm: "sha256",
  framing: "jcs",
  role: "integrity",
  definedIn: "src/strata/resolve/resolver.ts",
});

/** The profile digest: sha256 of the JCS encoding of the parsed profile, so comments and layout do not change it. */
export function profileDigest(p: Profile): Sha256Digest {
  return identityDigest(PROFILE_DIGEST, profileToModel(p));
}

/** The lockfile's record of a layer's modulefile: its path and the digest the content manifest gives it. */
function modulefileOf(m: LayerManifest): { modulefile?: { path: string; sha256: Sha256Digest } } {
  const sha = m.modulefile === undefined ? undefined : m.content_manifest.get(m.modulefile);
  return m.modulefile !== undefined && sha !== undefined ? { modulefile: { path: m.modulefile, sha256: sha } } : {};
}

export function resolveProfile(input: ResolveInput): Lockfile {
  const { profile, catalog } = input;
  const base = stageBase(profile, input.probedBase);
  const expanded = expandFormations(profile.software, catalog, base, input.allowUnsignedOffline);
  const picks = mergePicks(expanded.picks, resolveRefs(profile.software, catalog, base));
  const satisfiedBy = checkRequirements(picks, base);
  checkConflicts(picks);
  const ordered = mountOrder(picks, satisfiedBy);
  const { signatures, policy } = attestLayers(ordered, expanded.formations, input.allowUnsignedOffline);
  const layers: LockLayer[] = ordered.map((p, i) => {
    const m = p.layer.doc.value;
    return {
      id: m.id,
      name: m.name,
      version: m.version,
      sha256: m.sha256,
      size: m.size,
      manifest_sha256: p.layer.doc.payloadSha256,
      mount_order: i,
      ...(p.from_formation !== undefined ? { from_formation: p.from_formation } : {}),
      satisfied_by: satisfiedBy.get(pickId(p)) ?? new Map(),
      signature: signatures.get(pickId(p))!,
      registry: p.layer.source.url,
      manifest_envelope: p.layer.doc.envelopeBytes.toString("base64"),
      ...modulefileOf(m),
    };
  });
  const notActed = notActedUponModel(profile);
  return {
    format: LOCKFILE_FORMAT,
    profile: profile.name,
    profile_sha256: profileDigest(profile),
    resolved_at: input.now.toISOString(),
    cairn_version: input.cairnVersion,
    verification_policy: policy,
    base,
    layers,
    formations: [...expanded.formations].sort((a, b) => compareBytes(`${a.name}@${a.version}`, `${b.name}@${b.version}`)),
    env: profile.env,
    on_ready: profile.on_ready,
    defaults: profile.defaults,
    packages: profile.packages,
    mutable_layer: profile.mutable_layer,
    requires_host: hostRequirementSet(profile.requires_host),
    ...(Object.keys(notActed).length > 0 ? { not_acted_upon: notActed as Lockfile["not_acted_upon"] & object } : {}),
  };
}
