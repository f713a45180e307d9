/**
 * Stage 7, attestation policy: every chosen layer's manifest envelope is
 * checked against the trusted keys of the registry it came from (trust.ts
 * decides signed / tampered / unsigned). The lockfile's verification policy is
 * `signed` only when every layer and formation is signed by a trusted key;
 * otherwise, and only under --allow-unsigned-offline, `unsigned-offline`.
 */
import { attest, type Attestation } from "../trust.ts";
import type { FormationRecord } from "./formations.ts";
import { pickId, type Pick } from "./pick.ts";

export function attestLayers(
  picks: readonly Pick[],
  formations: readonly FormationRecord[],
  allowUnsignedOffline: boolean,
): { signatures: Map<string, Attestation>; policy: "signed" | "unsigned-offline" } {
  const signatures = new Map<string, Attestation>();
  for (const p of picks) {
    signatures.set(pickId(p), attest(p.layer.doc, p.layer.source.keys, allowUnsignedOffline, `layer ${pickId(p)}`));
  }
  const all = [...signatures.values(), ...formations.map((f) => f.signature)];
  return { signatures, policy: all.every((a) => a.status === "signed") ? "signed" : "unsigned-offline" };
}
