/**
 * A cairn layer manifest in Strata's LayerManifest form (seed 002): what a
 * lockfile's ResolvedLayer carries inline. The mapping is the one definition
 * of how cairn's facts land in the seed's fields:
 * - digests lose their `sha256:` prefix (the seed's digests are bare
 *   lowercase hex);
 * - `content_manifest` holds every regular file's sha256, and also every
 *   symlink (the sha256 of its target text, as git hashes a link) and every
 *   whiteout marker (the sha256 of its empty content), so Strata's
 *   path-level conflict check sees all three;
 * - `install_layout`: cairn's `rootfs` is the seed's `flat`, `prefix` (under
 *   /opt/NAME/VERSION) is `versioned`;
 * - `has_modulefile` when the layer carries an Lmod modulefile;
 * - the recorded build: `recipe_sha256`, `build_env_lock_id` (the
 *   EnvironmentID the build ran in), `built_at`, `folded_from` (the source
 *   layers' blob digests) and `capture_source` (`fold` for a folded layer;
 *   `filesystem`, `conda` or `lmod` with `original_prefix` and `normalized`
 *   for a captured one, from its capture record).
 * What has no field in the seed (the builder's name, the diff_id, recorded
 * sources, the build base's digest, which path is a symlink, which paths a capture rewrote or left) stays in the
 * signed manifest in the registry and is not repeated in the lockfile.
 * Attestation fields (`rekor_entry`, `bundle`, `cosign_version`) are empty:
 * cairn's signatures are DSSE envelopes beside the documents, not Sigstore.
 */
import { sha256 } from "../core/index.ts";
import type { Formation as CairnFormation } from "./formation-document.ts";
import type { LayerManifest as CairnLayerManifest } from "./layer-manifest.ts";
import { LAYER_MANIFEST } from "./spec/schema.ts";
import type { Formation, LayerManifest } from "./spec/types.ts";
import { writeStruct } from "./spec/struct-wire.ts";

/** `sha256:HEX` → `HEX`; the seed's digests are bare. */
export function bareHex(d: string | undefined): string {
  return d === undefined ? "" : d.startsWith("sha256:") ? d.slice(7) : d;
}

const EMPTY_SHA256 = bareHex(sha256(new Uint8Array(0)));

export function toSpecLayerManifest(m: CairnLayerManifest, signedBy = ""): LayerManifest {
  const content: Record<string, string> = Object.create(null);
  for (const [p, d] of m.content_manifest) content[p] = bareHex(d);
  for (const [p, target] of m.symlinks) content[p] = bareHex(sha256(target));
  for (const p of m.whiteouts ?? []) content[p] = EMPTY_SHA256;
  return {
    id: m.id,
    name: m.name,
    version: m.version,
    source: "",
    sha256: bareHex(m.sha256),
    size: m.size,
    content_manifest: content,
    rekor_entry: "",
    bundle: "",
    signed_by: signedBy,
    cosign_version: "",
    provides: m.provides.map((c) => ({ name: c.name, version: c.version })),
    requires: m.requires.map((r) => ({ name: r.name, min_version: r.min ?? "", max_version: r.max ?? "" })),
    arch: m.arch,
    abi: m.abi,
    built_at: m.build.built_at ?? "",
    user_selectable: m.user_selectable,
    install_layout: m.install_layout === "rootfs" ? "flat" : "versioned",
    has_modulefile: m.modulefile !== undefined,
    recipe_sha256: bareHex(m.build.recipe),
    build_env_lock_id: bareHex(m.build.environment?.lock_id),
    built_with: [],
    bootstrap_build: false,
    bootstrap_compiler: "",
    capture_source: m.build.capture?.source ?? (m.build.folded_from !== undefined ? "fold" : ""),
    folded_from: (m.build.folded_from ?? []).map((f) => bareHex(f.sha256)),
    original_prefix: m.build.capture?.original_prefix ?? "",
    normalized: m.build.capture?.normalized ?? false,
  };
}

/**
 * A cairn formation record in Strata's Formation form (seed 002): members as
 * `name@version` software refs in mount order, `provides` the record's union
 * of its members' capabilities; `built_at` is the zero time (a formation
 * record is built deterministically from its members), and the Sigstore
 * fields are empty (cairn's signature is the DSSE envelope beside it). The
 * members' ids and blob digests stay in the signed record.
 */
export function toSpecFormation(f: CairnFormation, signedBy = ""): Formation {
  return {
    name: f.name,
    version: f.version,
    description: f.description ?? "",
    layers: f.layers.map((l) => ({ kind: "layer" as const, name: l.name, version: l.version })),
    provides: f.provides.map((c) => ({ name: c.name, version: c.version })),
    rekor_entry: "",
    bundle: "",
    signed_by: signedBy,
    built_at: "",
  };
}

/** Fields of a lockfile's inline layer manifest that say where it was found and who vouched for it, not what it is. */
const ATTESTATION_FIELDS = new Set(["source", "rekor_entry", "bundle", "signed_by", "cosign_version"]);

/** The first field (in the seed's order) where two manifests differ, attestation fields aside; undefined when they agree. */
export function specManifestDifference(a: LayerManifest, b: LayerManifest): string | undefined {
  const one = (m: LayerManifest, f: (typeof LAYER_MANIFEST.fields)[number]) =>
    JSON.stringify(writeStruct({ v: (m as unknown as Record<string, unknown>)[f.name] }, { type: "field", fields: [{ ...f, name: "v" }] }));
  for (const f of LAYER_MANIFEST.fields) {
    if (!ATTESTATION_FIELDS.has(f.name) && one(a, f) !== one(b, f)) return f.name;
  }
  return undefined;
}
