/**
 * Strata's `spec` types as they travel: every struct of the reference in
 * seed 002 (`../shared/seeds/002_bbb23a1942433a8c.txt`, Strata v0.29.0) as a
 * table of its fields in declaration order, each with its YAML/JSON name
 * (the struct tag), its Go type and whether the tag says `omitempty`.
 *
 * This table is the one definition of the wire format: the strict reader
 * (struct-wire.ts) knows exactly these names, the writer emits exactly these names
 * in this order with Go's omitempty rule, and nothing else. An embedded struct
 * with `yaml:",inline"` (ResolvedLayer's LayerManifest) is spelled out in
 * place, as the encoder flattens it.
 */

/** A field's Go type, reduced to what decides how it is read and written. */
export type Kind =
  | "string"
  | "int"
  | "bool"
  /** time.Time: RFC 3339 text; the zero time is written as Go writes it. */
  | "time"
  /** map[string]string. */
  | "map"
  /** SoftwareRef: a scalar (`cuda@12.3`, `formation:x@v`) or a mapping. */
  | "ref"
  | { readonly list: Kind }
  | { readonly struct: StructSchema }
  /** A pointer to a struct: absent (nil) or the struct. */
  | { readonly ptr: StructSchema };

export interface Field {
  readonly name: string;
  readonly kind: Kind;
  readonly omitempty?: true;
}

export interface StructSchema {
  readonly type: string;
  readonly fields: readonly Field[];
}

const s = (name: string, omitempty?: true): Field => ({ name, kind: "string", ...(omitempty ? { omitempty } : {}) });
const f = (name: string, kind: Kind, omitempty?: true): Field => ({ name, kind, ...(omitempty ? { omitempty } : {}) });

export const CAPABILITY: StructSchema = { type: "Capability", fields: [s("name"), s("version")] };
export const REQUIREMENT: StructSchema = { type: "Requirement", fields: [s("name"), s("min_version", true), s("max_version", true)] };
export const HOST_REQUIREMENT: StructSchema = { type: "HostRequirement", fields: [s("key"), s("value")] };
export const REGISTRY_REF: StructSchema = { type: "RegistryRef", fields: [s("url"), s("trust")] };
export const BASE_REF: StructSchema = { type: "BaseRef", fields: [s("os"), s("arch", true)] };
export const INSTANCE_CONFIG: StructSchema = {
  type: "InstanceConfig",
  fields: [s("type", true), f("spot", "bool", true), s("spot_fallback", true), s("placement", true), s("region", true)],
};
export const STORAGE_MOUNT: StructSchema = {
  type: "StorageMount",
  fields: [s("type"), s("mount"), s("bucket", true), s("id", true), f("read_only", "bool", true)],
};
export const PACKAGE_ENTRY: StructSchema = { type: "PackageEntry", fields: [s("name"), s("version", true)] };
export const PACKAGE_SPEC: StructSchema = { type: "PackageSpec", fields: [s("manager"), f("packages", { list: { struct: PACKAGE_ENTRY } }), s("env", true)] };
export const MUTABLE_LAYER_SPEC: StructSchema = {
  type: "MutableLayerSpec",
  fields: [s("name"), s("version"), f("size_gb", "int", true), s("volume_type", true), s("abi", true)],
};

export const PROFILE: StructSchema = {
  type: "Profile",
  fields: [
    s("name"),
    s("description", true),
    s("version", true),
    f("base", { struct: BASE_REF }),
    f("software", { list: "ref" }),
    f("registries", { list: { struct: REGISTRY_REF } }, true),
    f("instance", { struct: INSTANCE_CONFIG }, true),
    f("storage", { list: { struct: STORAGE_MOUNT } }, true),
    f("env", "map", true),
    f("on_ready", { list: "string" }, true),
    f("defaults", { list: "ref" }, true),
    f("packages", { list: { struct: PACKAGE_SPEC } }, true),
    f("mutable_layer", { ptr: MUTABLE_LAYER_SPEC }, true),
    f("requires_host", { list: { struct: HOST_REQUIREMENT } }, true),
  ],
};

export const LAYER_REF: StructSchema = { type: "LayerRef", fields: [s("name"), s("version"), s("sha256"), s("rekor_entry")] };
export const BUILD_ENVIRONMENT: StructSchema = {
  type: "BuildEnvironment",
  fields: [s("ami_id", true), s("releasever", true), f("packages", { list: "string" }, true)],
};

const LAYER_MANIFEST_FIELDS: readonly Field[] = [
  s("id"),
  s("name"),
  s("version"),
  s("source"),
  s("sha256"),
  f("size", "int"),
  f("content_manifest", "map"),
  s("rekor_entry"),
  s("bundle"),
  s("signed_by"),
  s("cosign_version"),
  f("provides", { list: { struct: CAPABILITY } }),
  f("requires", { list: { struct: REQUIREMENT } }),
  s("arch"),
  s("abi"),
  f("built_at", "time"),
  f("user_selectable", "bool"),
  s("install_layout", true),
  f("has_modulefile", "bool", true),
  s("recipe_sha256"),
  s("build_env_lock_id"),
  f("built_with", { list: { struct: LAYER_REF } }, true),
  f("bootstrap_build", "bool", true),
  s("bootstrap_compiler", true),
  f("build_environment", { ptr: BUILD_ENVIRONMENT }, true),
  s("capture_source", true),
  f("folded_from", { list: "string" }, true),
  s("original_prefix", true),
  f("normalized", "bool", true),
];

export const LAYER_MANIFEST: StructSchema = { type: "LayerManifest", fields: LAYER_MANIFEST_FIELDS };

export const FORMATION: StructSchema = {
  type: "Formation",
  fields: [
    s("name"),
    s("version"),
    s("description", true),
    f("layers", { list: "ref" }),
    f("provides", { list: { struct: CAPABILITY } }),
    s("rekor_entry"),
    s("bundle"),
    s("signed_by"),
    f("built_at", "time"),
  ],
};

export const BASE_CAPABILITIES: StructSchema = {
  type: "BaseCapabilities",
  fields: [s("ami_id"), s("os"), s("arch"), s("abi"), f("probed_at", "time"), s("system_compiler"), f("provides", { list: { struct: CAPABILITY } })],
};
export const RESOLVED_BASE: StructSchema = {
  type: "ResolvedBase",
  fields: [s("declared_os"), s("ami_id"), s("ami_sha256"), f("capabilities", { struct: BASE_CAPABILITIES })],
};
export const RESOLVED_LAYER: StructSchema = {
  type: "ResolvedLayer",
  fields: [...LAYER_MANIFEST_FIELDS, f("mount_order", "int"), s("satisfied_by"), s("from_formation", true)],
};
export const RESOLVED_PACKAGE_ENTRY: StructSchema = { type: "ResolvedPackageEntry", fields: [s("name"), s("version"), s("sha256", true)] };
export const RESOLVED_PACKAGE_SET: StructSchema = {
  type: "ResolvedPackageSet",
  fields: [s("manager"), s("env", true), f("packages", { list: { struct: RESOLVED_PACKAGE_ENTRY } })],
};

export const LOCK_FILE: StructSchema = {
  type: "LockFile",
  fields: [
    s("profile"),
    s("profile_sha256"),
    f("resolved_at", "time"),
    s("strata_version"),
    s("rekor_entry", true),
    s("bundle", true),
    s("verification_policy", true),
    f("base", { struct: RESOLVED_BASE }),
    f("layers", { list: { struct: RESOLVED_LAYER } }),
    f("env", "map", true),
    f("on_ready", { list: "string" }, true),
    f("defaults", { list: "ref" }, true),
    f("packages", { list: { struct: RESOLVED_PACKAGE_SET } }, true),
    f("mutable_layer", { ptr: MUTABLE_LAYER_SPEC }, true),
    f("requires_host", { list: { struct: HOST_REQUIREMENT } }, true),
  ],
};

export const LAYER_PROVENANCE: StructSchema = { type: "LayerProvenance", fields: [s("name"), s("version"), s("sha256"), s("rekor_entry")] };
export const PROVENANCE_RECORD: StructSchema = {
  type: "ProvenanceRecord",
  fields: [
    s("profile"),
    s("profile_sha256"),
    f("resolved_at", "time"),
    s("ami_id"),
    s("ami_sha256"),
    f("layers", { list: { struct: LAYER_PROVENANCE } }),
    s("lockfile_rekor_entry"),
    s("strata_version"),
  ],
};

/** Every struct of the table, for tests and for the reader's field lists. */
export const SCHEMAS: readonly StructSchema[] = [
  CAPABILITY,
  REQUIREMENT,
  HOST_REQUIREMENT,
  REGISTRY_REF,
  BASE_REF,
  INSTANCE_CONFIG,
  STORAGE_MOUNT,
  PACKAGE_ENTRY,
  PACKAGE_SPEC,
  MUTABLE_LAYER_SPEC,
  PROFILE,
  LAYER_REF,
  BUILD_ENVIRONMENT,
  LAYER_MANIFEST,
  FORMATION,
  BASE_CAPABILITIES,
  RESOLVED_BASE,
  RESOLVED_LAYER,
  RESOLVED_PACKAGE_ENTRY,
  RESOLVED_PACKAGE_SET,
  LOCK_FILE,
  LAYER_PROVENANCE,
  PROVENANCE_RECORD,
];

/** The two verification policies a lockfile may record (seed 002, "Constants"). */
export const VERIFY_ATTESTATION_REFERENCES_PRESENT = "attestation-references-present";
export const VERIFY_UNSIGNED_OFFLINE = "unsigned-offline";
/** The three package managers (seed 002, PackageManager). */
export const PACKAGE_MANAGERS = ["pip", "conda", "cran"] as const;
