/**
 * The struct tags of Strata's spec types, copied by hand from the seed
 * (../shared/seeds/002_bbb23a1942433a8c.txt), in declaration order; `?`
 * marks `omitempty`. Written here, apart from the code's field table, so a
 * test can hold the code to the seed.
 */
/** Each struct's tags as the seed prints them, in declaration order; `?` marks omitempty. */
export const SEED_TAGS: Record<string, string> = {
  Capability: "name version",
  Requirement: "name min_version? max_version?",
  HostRequirement: "key value",
  RegistryRef: "url trust",
  BaseRef: "os arch?",
  InstanceConfig: "type? spot? spot_fallback? placement? region?",
  StorageMount: "type mount bucket? id? read_only?",
  PackageEntry: "name version?",
  PackageSpec: "manager packages env?",
  MutableLayerSpec: "name version size_gb? volume_type? abi?",
  Profile: "name description? version? base software registries? instance? storage? env? on_ready? defaults? packages? mutable_layer? requires_host?",
  LayerRef: "name version sha256 rekor_entry",
  BuildEnvironment: "ami_id? releasever? packages?",
  LayerManifest:
    "id name version source sha256 size content_manifest rekor_entry bundle signed_by cosign_version provides requires arch abi built_at user_selectable install_layout? has_modulefile? recipe_sha256 build_env_lock_id built_with? bootstrap_build? bootstrap_compiler? build_environment? capture_source? folded_from? original_prefix? normalized?",
  Formation: "name version description? layers provides rekor_entry bundle signed_by built_at",
  BaseCapabilities: "ami_id os arch abi probed_at system_compiler provides",
  ResolvedBase: "declared_os ami_id ami_sha256 capabilities",
  ResolvedPackageEntry: "name version sha256?",
  ResolvedPackageSet: "manager env? packages",
  LockFile:
    "profile profile_sha256 resolved_at strata_version rekor_entry? bundle? verification_policy? base layers env? on_ready? defaults? packages? mutable_layer? requires_host?",
  LayerProvenance: "name version sha256 rekor_entry",
  ProvenanceRecord: "profile profile_sha256 resolved_at ami_id ami_sha256 layers lockfile_rekor_entry strata_version",
};
SEED_TAGS.ResolvedLayer = `${SEED_TAGS.LayerManifest} mount_order satisfied_by from_formation?`;

/** The wire names of a struct (no omitempty marks). */
export function seedFields(type: string): string[] {
  return SEED_TAGS[type]!.split(" ").map((f) => f.replace(/\?$/, ""));
}
