/**
 * How a manifest is shown to people. An unpinned manifest says so on its own
 * line, with the references whose bytes the address does not cover, wherever
 * a manifest is printed.
 */
import type { EnvManifest } from "../manifest/index.ts";

/** The pinning label: "pinned" or an UNPINNED warning naming the unpinned references. */
export function pinningLabel(m: Pick<EnvManifest, "pinned" | "unpinned">): string {
  if (m.pinned) return "pinned";
  return `UNPINNED (the bytes behind ${m.unpinned.join(", ")} are not covered)`;
}

/** A short human summary of a manifest, one fact per line. */
export function manifestSummary(m: EnvManifest): string[] {
  const unpinnedFeatures = m.unpinned.filter((p) => p.startsWith("/features/")).length;
  const localPins = Object.keys(m.extension.local_features ?? {}).length;
  const lines = [
    `address   ${m.address} (${m.core.schema}: the standard's core)`,
    `extension ${m.extension_address} (${m.extension.schema}: fields the standard does not name)`,
    `pinned    ${m.pinned ? `yes — image and every feature addressed by @sha256${localPins > 0 ? " or by its directory's digest" : ""}` : `NO — ${pinningLabel(m)}`}`,
    `image     ${m.core.image}${m.image_pinned ? "" : " (unpinned)"}`,
    `features  ${m.core.features.length}${unpinnedFeatures > 0 ? ` (${unpinnedFeatures} unpinned)` : ""}${localPins > 0 ? ` (${localPins} local, pinned by directory: cairn.fs/1)` : ""}`,
    `env       ${Object.keys(m.core.containerEnv).length} containerEnv, ${Object.keys(m.extension.remoteEnv).length} remoteEnv (values not shown)`,
    `mounts    ${m.core.mounts.length}${m.extension.workspaceMount ? " + workspaceMount" : ""}`,
  ];
  lines.push(m.signature ? `signed    by ${m.signature.key_id}` : "signed    no");
  return lines;
}
