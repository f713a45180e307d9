/**
 * What one particular lockfile's EnvironmentID cannot promise: the caveats
 * `lock verify` and `lock explain` print under the ID, and a library user can
 * show the same. A label never says more than the code checked (a declared
 * base, unpinned package requests, a mutable layer, an unsigned-offline
 * policy); keeping the list here, beside the lockfile, keeps every caller
 * saying the same thing about the same lockfile.
 */
import { hostRequirementSet, hostRequirementString } from "./capability.ts";
import type { Lockfile } from "./lockfile.ts";

/** Notes on what this particular lockfile's ID cannot promise. */
export function lockfileCaveats(l: Lockfile): string[] {
  const out: string[] = [];
  if (l.base.source === "declared") out.push("the base was declared, not probed: its capabilities and ABI were not checked");
  const unpinned = l.packages.filter((s) => s.frozen === undefined && s.pinned === undefined);
  const bare = l.packages.filter((s) => s.frozen === undefined && s.pinned !== undefined);
  if (bare.length > 0) {
    const noDigest = bare.flatMap((s) => (s.pinned ?? []).filter((p) => p.sha256 === undefined).map((p) => `${s.manager}:${p.name}`));
    out.push(
      `packages are pinned by the lockfile (name, version${noDigest.length ? "" : ", sha256"}) but cairn has no record of their archives, so it cannot place them in an image (run cairn freeze with their index)${noDigest.length ? `; pinned without a digest: ${noDigest.join(", ")}` : ""}`,
    );
  }
  const loose = unpinned.flatMap((s) => s.packages.filter((p) => p.version === undefined).map((p) => `${s.manager}:${p.name}`));
  if (unpinned.length > 0) {
    const which = unpinned.length < l.packages.length ? ` (unpinned: ${unpinned.map((s) => s.manager).join(", ")}; run cairn freeze with their index)` : "";
    out.push(`package requests are recorded, not pinned by digest${which}${loose.length ? ` (no version: ${loose.join(", ")})` : ""}`);
  }
  const pins = l.packages.flatMap((s) => s.frozen?.pins ?? []);
  const sdists = pins.filter((p) => p.kind === "sdist" || p.kind === "cran").map((p) => `${p.name} ${p.version}`);
  if (sdists.length > 0)
    out.push(`source archives are pinned by digest, but building them runs their code and may fetch unpinned build dependencies: ${sdists.join(", ")}`);
  const unknown = pins.filter((p) => p.dependencies === "unknown").map((p) => `${p.name} ${p.version}`);
  if (unknown.length > 0) out.push(`dependencies not known without building (no static metadata), so not pinned: ${unknown.join(", ")}`);
  if (l.on_ready.length > 0) out.push("on_ready commands are covered as text; what they do when run is not");
  if (l.mutable_layer) out.push("a mutable upper layer is enabled: what is written there is not covered");
  if (l.verification_policy === "signed" && l.layers.length === 0 && l.formations.length === 0) {
    out.push("policy signed covers nothing: the lockfile has no layers or formations, so no signature was checked");
  }
  if (l.verification_policy === "unsigned-offline") out.push("some layers or formations were not signed by a trusted key (unsigned-offline)");
  if (l.requires_host.length > 0) {
    out.push(
      `host requirements are recorded, not checked: the resolver cannot see the host this runs on (${hostRequirementSet(l.requires_host).map(hostRequirementString).join(", ")})`,
    );
  }
  return out;
}
