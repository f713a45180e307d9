/**
 * Strata's `spec` types (seed 002) as TypeScript values, one property per
 * struct field, named by its wire name. A field the file leaves out holds Go's
 * zero value ("" / 0 / false / [] / {}), a nil pointer is `undefined`, and a
 * time.Time is its RFC 3339 text ("" for the zero time), so a value read and
 * written back is the same file. schema.ts is the field table these mirror;
 * tests/strata/spec-wire.test.ts holds the two to each other.
 */
import type { SoftwareRef } from "../ref.ts";

export type StringMap = Readonly<Record<string, string>>;

export interface Capability {
  readonly name: string;
  readonly version: string;
}
export interface Requirement {
  readonly name: string;
  readonly min_version: string;
  readonly max_version: string;
}
export interface HostRequirement {
  readonly key: string;
  readonly value: string;
}
export interface RegistryRef {
  readonly url: string;
  readonly trust: string;
}
export interface BaseRef {
  readonly os: string;
  readonly arch: string;
}
export interface InstanceConfig {
  readonly type: string;
  readonly spot: boolean;
  readonly spot_fallback: string;
  readonly placement: string;
  readonly region: string;
}
export interface StorageMount {
  readonly type: string;
  readonly mount: string;
  readonly bucket: string;
  readonly id: string;
  readonly read_only: boolean;
}
export interface PackageEntry {
  readonly name: string;
  readonly version: string;
}
export interface PackageSpec {
  readonly manager: string;
  readonly packages: readonly PackageEntry[];
  readonly env: string;
}
export interface MutableLayerSpec {
  readonly name: string;
  readonly version: string;
  readonly size_gb: number;
  readonly volume_type: string;
  readonly abi: string;
}
export interface Profile {
  readonly name: string;
  readonly description: string;
  readonly version: string;
  readonly base: BaseRef;
  readonly software: readonly SoftwareRef[];
  readonly registries: readonly RegistryRef[];
  readonly instance: InstanceConfig;
  readonly storage: readonly StorageMount[];
  readonly env: StringMap;
  readonly on_ready: readonly string[];
  readonly defaults: readonly SoftwareRef[];
  readonly packages: readonly PackageSpec[];
  readonly mutable_layer?: MutableLayerSpec;
  readonly requires_host: readonly HostRequirement[];
}
export interface LayerRef {
  readonly name: string;
  readonly version: string;
  readonly sha256: string;
  readonly rekor_entry: string;
}
export interface BuildEnvironment {
  readonly ami_id: string;
  readonly releasever: string;
  readonly packages: readonly string[];
}
export interface LayerManifest {
  readonly id: string;
  readonly name: string;
  readonly version: string;
  readonly source: string;
  readonly sha256: string;
  readonly size: number;
  readonly content_manifest: StringMap;
  readonly rekor_entry: string;
  readonly bundle: string;
  readonly signed_by: string;
  readonly cosign_version: string;
  readonly provides: readonly Capability[];
  readonly requires: readonly Requirement[];
  readonly arch: string;
  readonly abi: string;
  readonly built_at: string;
  readonly user_selectable: boolean;
  readonly install_layout: string;
  readonly has_modulefile: boolean;
  readonly recipe_sha256: string;
  readonly build_env_lock_id: string;
  readonly built_with: readonly LayerRef[];
  readonly bootstrap_build: boolean;
  readonly bootstrap_compiler: string;
  readonly build_environment?: BuildEnvironment;
  readonly capture_source: string;
  readonly folded_from: readonly string[];
  readonly original_prefix: string;
  readonly normalized: boolean;
}
export interface Formation {
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly layers: readonly SoftwareRef[];
  readonly provides: readonly Capability[];
  readonly rekor_entry: string;
  readonly bundle: string;
  readonly signed_by: string;
  readonly built_at: string;
}
export interface BaseCapabilities {
  readonly ami_id: string;
  readonly os: string;
  readonly arch: string;
  readonly abi: string;
  readonly probed_at: string;
  readonly system_compiler: string;
  readonly provides: readonly Capability[];
}
export interface ResolvedBase {
  readonly declared_os: string;
  readonly ami_id: string;
  readonly ami_sha256: string;
  readonly capabilities: BaseCapabilities;
}
export interface ResolvedLayer extends LayerManifest {
  readonly mount_order: number;
  readonly satisfied_by: string;
  readonly from_formation: string;
}
export interface ResolvedPackageEntry {
  readonly name: string;
  readonly version: string;
  readonly sha256: string;
}
export interface ResolvedPackageSet {
  readonly manager: string;
  readonly env: string;
  /**
   * `null` when the file wrote no list (Go's nil slice), `[]` when it wrote an
   * empty one: Go's JSON encoder tells the two apart (`null` / `[]`), and the
   * EnvironmentID is that encoding, so the reader keeps the difference.
   */
  readonly packages: readonly ResolvedPackageEntry[] | null;
}
export interface LockFile {
  readonly profile: string;
  readonly profile_sha256: string;
  readonly resolved_at: string;
  readonly strata_version: string;
  readonly rekor_entry: string;
  readonly bundle: string;
  readonly verification_policy: string;
  readonly base: ResolvedBase;
  readonly layers: readonly ResolvedLayer[];
  readonly env: StringMap;
  readonly on_ready: readonly string[];
  readonly defaults: readonly SoftwareRef[];
  readonly packages: readonly ResolvedPackageSet[];
  readonly mutable_layer?: MutableLayerSpec;
  readonly requires_host: readonly HostRequirement[];
}
