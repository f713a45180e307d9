/**
 * `lock provenance`: a citation-ready record of a verified lockfile — its
 * EnvironmentID, the profile digest, the base, every layer's digest and
 * signature reference, how each layer was built (the recorded build of the
 * layer manifest the lockfile embeds: builder, recipe, build environment,
 * built_at, sources), and the lockfile's own signature. Built from a lockfile
 * whose signature was already verified (Validate has checked each embedded
 * envelope against its pins); it restates, it does not check.
 */
import { parseJsonBytes, type Sha256Digest } from "../core/index.ts";
import { embeddedEnvelope } from "./lockfile-envelope.ts";
import { layerManifestToModel, parseLayerManifest, type BuildProvenance } from "./layer-manifest.ts";
import { capabilityString } from "./capability.ts";
import { environmentId } from "./env-id.ts";
import type { LockSignature } from "./lockfile-io.ts";
import type { Lockfile } from "./lockfile.ts";

export interface ProvenanceRecord {
  readonly environment_id: Sha256Digest;
  readonly profile: string;
  readonly profile_sha256: string | null;
  readonly resolved_at: string;
  readonly strata_version: string;
  readonly verification_policy: string;
  readonly base: { name: string; arch: string; digest: string | null; source: string; capabilities: string[] };
  readonly layers: { mount_order: number | null; id: string; sha256: string | null; signature: string; build: Record<string, unknown> | null }[];
  readonly lockfile_signature: LockSignature;
}

export function provenanceOf(lock: Lockfile, signature: LockSignature): ProvenanceRecord {
  return {
    environment_id: environmentId(lock),
    profile: lock.profile,
    profile_sha256: lock.profile_sha256 ?? null,
    resolved_at: lock.resolved_at,
    strata_version: lock.strata_version,
    verification_policy: lock.verification_policy,
    base: {
      name: lock.base.name,
      arch: lock.base.arch,
      digest: lock.base.digest ?? null,
      source: lock.base.source,
      capabilities: lock.base.capabilities.map(capabilityString),
    },
    layers: lock.layers.map((l) => ({
      mount_order: l.mount_order ?? null,
      id: l.id,
      sha256: l.sha256 ?? null,
      signature:
        l.signature === undefined
          ? "none"
          : l.signature.status === "signed"
            ? `signed by ${l.signature.keyid} (envelope ${l.signature.envelope_sha256})`
            : `unsigned-offline (envelope ${l.signature.envelope_sha256})`,
      build: l.manifest_envelope === undefined ? null : (layerManifestToModel(embeddedManifest(l.manifest_envelope, l.id)).build as Record<string, unknown>),
    })),
    lockfile_signature: signature,
  };
}

/** The layer manifest inside an embedded envelope (already checked against the lockfile's pins). */
function embeddedManifest(b64: string, id: string) {
  const { envelope } = embeddedEnvelope(b64, `layer ${id} manifest_envelope`);
  return parseLayerManifest(parseJsonBytes(Buffer.from(envelope.payload, "base64"), { source: `layer ${id} manifest` }), `layer ${id} manifest`);
}

/** A layer's recorded build, one fact per line (shared by `layer build` and `lock provenance`). */
export function buildProvenanceLines(
  b: Pick<BuildProvenance, "builder" | "recipe" | "environment" | "built_at" | "sources" | "capture">,
  indent = "",
): string[] {
  const c = b.capture;
  const env =
    b.environment === undefined
      ? []
      : [b.environment.lock_id && `lock ${b.environment.lock_id}`, b.environment.base_digest && `base ${b.environment.base_digest}`].filter(Boolean);
  return [
    `${indent}builder  ${b.builder}`,
    ...(b.recipe ? [`${indent}recipe   ${b.recipe}`] : []),
    ...(env.length > 0 ? [`${indent}built in ${env.join(", ")}`] : []),
    ...(b.built_at ? [`${indent}built at ${b.built_at}`] : []),
    ...(b.sources ?? []).map((s) => `${indent}source   ${s}`),
    ...(c
      ? [
          `${indent}captured ${c.source} install at ${c.original_prefix} (${c.normalized ? `normalized: ${c.rewritten.length} path(s) rewritten` : "not normalized"}${c.left.length > 0 ? `, ${c.left.length} binary file(s) still name it` : ""})`,
        ]
      : []),
  ];
}

export function provenanceText(p: ProvenanceRecord): string {
  const lines = [
    `environment ${p.environment_id}`,
    `profile     ${p.profile} ${p.profile_sha256 ?? "(no digest)"}`,
    `resolved    ${p.resolved_at} by ${p.strata_version}, policy ${p.verification_policy}`,
    `base        ${p.base.name} ${p.base.arch} ${p.base.digest ?? "(no digest)"} (${p.base.source}${p.base.capabilities.length ? `: ${p.base.capabilities.join(", ")}` : ""})`,
    "layers",
    ...p.layers.flatMap((l) => [
      `  ${l.mount_order ?? "-"}  ${l.id}  ${l.sha256 ?? "(no digest)"}  ${l.signature}`,
      ...(l.build === null
        ? ["       build: not recorded (the lockfile embeds no manifest for this layer)"]
        : buildProvenanceLines(l.build as unknown as BuildProvenance, "       ")),
    ]),
    `lockfile signed by ${p.lockfile_signature.keyid} (envelope ${p.lockfile_signature.envelope_sha256})`,
    "",
    `cite as: cairn environment ${p.environment_id} (profile ${p.profile}, resolved ${p.resolved_at.slice(0, 10)}, lockfile signature key ${p.lockfile_signature.keyid})`,
  ];
  return lines.join("\n");
}
