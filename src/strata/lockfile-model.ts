/**
 * The environment lockfile written out: the plain model of a `Lockfile` in
 * field order (what `lockfileToYaml` writes and what the EnvironmentID picks
 * its fields from). The reading side, with every Validate rule, is
 * lockfile.ts; keeping the two apart keeps each readable, and the round-trip
 * tests (tests/strata/lockfile.test.ts) hold them to each other.
 */
import { sortedRecord, toYamlText } from "../core/index.ts";
import { capabilityString, hostRequirementToModel } from "./capability.ts";
import type { LockBase } from "./base.ts";
import type { LockLayer, Lockfile } from "./lockfile.ts";
import { defaultsToModel, mutableLayerToModel } from "./profile-forms.ts";
import type { Attestation } from "./trust.ts";
import { frozenToModel } from "./freeze/pins.ts";

function attestationModel(a: Attestation): Record<string, string> {
  return a.status === "signed"
    ? { status: a.status, keyid: a.keyid, envelope_sha256: a.envelope_sha256 }
    : { status: a.status, envelope_sha256: a.envelope_sha256 };
}

export function baseToModel(b: LockBase): Record<string, unknown> {
  const out: Record<string, unknown> = { name: b.name, arch: b.arch, abi: b.abi };
  if (b.os_id !== undefined) out.os_id = b.os_id;
  if (b.version_id !== undefined) out.version_id = b.version_id;
  out.capabilities = b.capabilities.map(capabilityString);
  out.source = b.source;
  if (b.image !== undefined) out.image = b.image;
  if (b.digest !== undefined) out.digest = b.digest;
  if (b.probed_at !== undefined) out.probed_at = b.probed_at;
  return out;
}

export function layerToModel(l: LockLayer): Record<string, unknown> {
  const out: Record<string, unknown> = { id: l.id, name: l.name, version: l.version };
  if (l.sha256 !== undefined) out.sha256 = l.sha256;
  if (l.size !== undefined) out.size = l.size;
  if (l.manifest_sha256 !== undefined) out.manifest_sha256 = l.manifest_sha256;
  if (l.mount_order !== undefined) out.mount_order = l.mount_order;
  if (l.from_formation !== undefined) out.from_formation = l.from_formation;
  out.satisfied_by = sortedRecord(new Map([...l.satisfied_by].map(([k, v]) => [k, [...v]])));
  if (l.signature !== undefined) out.signature = attestationModel(l.signature);
  if (l.registry !== undefined) out.registry = l.registry;
  if (l.manifest_envelope !== undefined) out.manifest_envelope = l.manifest_envelope;
  if (l.modulefile !== undefined) out.modulefile = { path: l.modulefile.path, sha256: l.modulefile.sha256 };
  return out;
}

/** The lockfile as a plain model in field order. */
export function lockfileToModel(l: Lockfile): Record<string, unknown> {
  const out: Record<string, unknown> = { format: l.format, profile: l.profile };
  if (l.profile_sha256 !== undefined) out.profile_sha256 = l.profile_sha256;
  Object.assign(out, { resolved_at: l.resolved_at, cairn_version: l.cairn_version, verification_policy: l.verification_policy });
  out.base = baseToModel(l.base);
  out.layers = l.layers.map(layerToModel);
  out.formations = l.formations.map((f) => ({ name: f.name, version: f.version, signature: attestationModel(f.signature) }));
  out.env = sortedRecord(l.env);
  out.on_ready = [...l.on_ready];
  out.defaults = defaultsToModel(l.defaults);
  out.packages = l.packages.map((s) => ({
    manager: s.manager,
    packages: s.packages.map((p) => ({ ...p })),
    ...(s.env !== undefined ? { env: s.env } : {}),
    ...(s.frozen !== undefined ? { frozen: frozenToModel(s.frozen) } : {}),
  }));
  out.mutable_layer = mutableLayerToModel(l.mutable_layer);
  out.requires_host = l.requires_host.map(hostRequirementToModel);
  if (l.not_acted_upon !== undefined) out.not_acted_upon = l.not_acted_upon;
  return out;
}

export function lockfileToYaml(l: Lockfile): string {
  return toYamlText(lockfileToModel(l));
}
