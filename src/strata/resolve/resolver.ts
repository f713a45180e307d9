/**
 * The resolver: profile + catalog + base → lockfile, one stage at a time
 *   base → expand formations → resolve refs → requirements → conflicts →
 *   mount order → attestation policy → lockfile.
 * Everything it depends on is an argument (the clock included), so the same
 * inputs give byte-identical lockfiles apart from `resolved_at`.
 */
import { compareBytes, declareIdentity, identityDigest, type Progress, type Sha256Digest } from "../../core/index.ts";
import type { LockBase } from "../base.ts";
import type { Catalog } from "../catalog.ts";
import { type LockRecords, type Lockfile, viewLock } from "../lockfile.ts";
import { bareHex, toSpecLayerManifest } from "../layer-spec.ts";
import { specBase } from "../base.ts";
import { profileToModel, type Profile } from "../profile-model.ts";
import { specHostRequirements, specMutableLayer } from "../profile-spec.ts";
import { VERIFY_UNSIGNED_OFFLINE } from "../spec/schema.ts";
import type * as spec from "../spec/types.ts";
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
  /** Progress: phase "resolve" in the resolver's stages done (base, formations, references, requirements, conflicts, mount order, attestation). */
  readonly progress?: Progress | undefined;
}

const STAGES = 7;

/** Integrity, not identity: which profile was resolved (`profile_sha256` in the lockfile, provenance the EnvironmentID excludes). The tag is cairn's first lockfile format's, kept so no profile digest changes. */
export const PROFILE_DIGEST = declareIdentity({
  name: "lockfile profile_sha256",
  tag: "cairn.lock/1",
  algorithm: "sha256",
  framing: "jcs",
  role: "integrity",
  definedIn: "src/strata/resolve/resolver.ts",
});

/** The profile digest: sha256 of the JCS encoding of the parsed profile, so comments and layout do not change it. */
export function profileDigest(p: Profile): Sha256Digest {
  return identityDigest(PROFILE_DIGEST, profileToModel(p));
}

export function resolveProfile(input: ResolveInput): Lockfile {
  const { profile, catalog } = input;
  let stage = 0;
  const step = (): void => input.progress?.({ phase: "resolve", done: stage++, total: STAGES, unit: "steps" });
  step();
  const base = stageBase(profile, input.probedBase);
  step();
  const expanded = expandFormations(profile.software, catalog, base, input.allowUnsignedOffline);
  step();
  const picks = mergePicks(expanded.picks, resolveRefs(profile.software, catalog, base));
  step();
  const satisfiedBy = checkRequirements(picks, base);
  step();
  checkConflicts(picks);
  step();
  const ordered = mountOrder(picks, satisfiedBy);
  step();
  const { signatures, policy } = attestLayers(ordered, expanded.formations, input.allowUnsignedOffline);
  step();
  const layers: spec.ResolvedLayer[] = ordered.map((p, i) => {
    const sig = signatures.get(pickId(p))!;
    return {
      ...toSpecLayerManifest(p.layer.doc.value, sig.status === "signed" ? sig.keyid : ""),
      mount_order: i + 1,
      satisfied_by: (p.requested_by ?? []).join(", "),
      from_formation: p.from_formation ?? "",
    };
  });
  const records: LockRecords = {
    policy,
    base_source: base.source,
    layers: new Map(
      ordered.map((p) => [
        pickId(p),
        {
          signature: signatures.get(pickId(p))!,
          registry: p.layer.source.url,
          manifest_sha256: p.layer.doc.payloadSha256,
          manifest_envelope: p.layer.doc.envelopeBytes.toString("base64"),
        },
      ]),
    ),
    formations: [...expanded.formations].sort((a, b) => compareBytes(`${a.name}@${a.version}`, `${b.name}@${b.version}`)),
    packages: profile.packages,
  };
  const lock: spec.LockFile = {
    profile: profile.name,
    profile_sha256: bareHex(profileDigest(profile)),
    resolved_at: input.now.toISOString(),
    strata_version: `cairn ${input.cairnVersion}`,
    rekor_entry: "",
    bundle: "",
    // The seed's two values: unsigned-offline when some layer was accepted unsigned; cairn's DSSE
    // checks are not Strata's Rekor references, so a fully signed resolve claims neither (records say signed).
    verification_policy: policy === "unsigned-offline" ? VERIFY_UNSIGNED_OFFLINE : "",
    base: specBase(base, profile.base.os),
    layers,
    env: Object.fromEntries(profile.env),
    on_ready: profile.on_ready,
    defaults: profile.defaults,
    packages: [],
    ...(profile.mutable_layer !== false ? { mutable_layer: specMutableLayer(profile.mutable_layer) } : {}),
    requires_host: specHostRequirements(profile.requires_host),
  };
  return viewLock(lock, records);
}
