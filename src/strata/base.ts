/**
 * The base a lockfile's layers sit on. It is either probed (from `host`, a
 * root filesystem directory, or an OCI image's tree) or merely declared by the
 * profile (`debian12` on `x86_64`, nothing checked), and the lockfile says
 * which in `source`.
 *
 * The base digest is sha256 over the JCS encoding of the probed facts under
 * the tag `cairn.base/1`: name, os_id, version_id, arch, abi, capabilities and,
 * for an image, the image digest. It excludes the probe time (`probed_at`) and
 * how the facts were obtained (`source`), so probing the same image twice, or
 * on two days, gives the same digest.
 */
import { declareIdentity, defineScope, identityDigest, type Sha256Digest } from "../core/index.ts";
import { capabilityString, type Capability } from "./capability.ts";
import type { Arch } from "./platform.ts";
import type { ProbeResult } from "./probe.ts";

export const BASE_TAG = "cairn.base/1";

/** The tag is the `tag` field of the hashed object (kept that way so no base digest changes). */
export const BASE_DIGEST = declareIdentity({
  name: "base digest",
  tag: BASE_TAG,
  algorithm: "sha256",
  framing: "jcs-tag-field",
  role: "identity",
  definedIn: "src/strata/base.ts",
});

/** What the base digest covers, as fields of the lockfile's base object. */
export const BASE_DIGEST_SCOPE = defineScope({
  identity: BASE_TAG,
  covers: {
    "/name": "the base's name (debian12, ...)",
    "/arch": "the machine architecture",
    "/abi": "the C library ABI (gnu, musl, unknown for a declared base)",
    "/os_id": "os-release ID, when probed",
    "/version_id": "os-release VERSION_ID, when probed",
    "/capabilities": "the derived capabilities (glibc, compiler, os), sorted",
    "/image": "the image manifest digest, for a base probed from an OCI image",
  },
  excludes: {
    "/source": "how the facts were obtained (host, rootfs, oci, declared); the same facts give the same digest",
    "/probed_at": "wall-clock time of the probe",
    "/digest": "the digest itself, computed from the covered fields",
  },
});
export type BaseAbi = ProbeResult["abi"] | "unknown";

export interface LockBase {
  readonly name: string;
  readonly arch: Arch;
  readonly abi: BaseAbi;
  readonly os_id?: string;
  readonly version_id?: string;
  readonly capabilities: readonly Capability[];
  /** `declared`, `host`, `rootfs:PATH` or `oci:LAYOUT`. */
  readonly source: string;
  /** The image manifest digest, for a base probed from an OCI image. */
  readonly image?: Sha256Digest;
  /** Absent only in an unfrozen lockfile. */
  readonly digest?: Sha256Digest;
  /** Wall-clock provenance; not in the digest. */
  readonly probed_at?: string;
}

export function baseDigest(b: Omit<LockBase, "digest" | "probed_at" | "source">): Sha256Digest {
  return identityDigest(BASE_DIGEST, {
    name: b.name,
    arch: b.arch,
    abi: b.abi,
    os_id: b.os_id ?? null,
    version_id: b.version_id ?? null,
    capabilities: b.capabilities.map(capabilityString).sort(),
    image: b.image ?? null,
  });
}

/** A base the profile names but nobody probed: no capabilities, ABI unknown. */
export function declaredBase(name: string, arch: Arch): LockBase {
  const facts = { name, arch, abi: "unknown" as const, capabilities: [] };
  return { ...facts, source: "declared", digest: baseDigest(facts) };
}

export function probedBase(p: ProbeResult, source: string, probedAt: Date, image?: Sha256Digest): LockBase {
  const facts = {
    name: p.name,
    arch: p.arch,
    abi: p.abi,
    os_id: p.os_id,
    version_id: p.version_id,
    capabilities: [...p.capabilities],
    ...(image !== undefined ? { image } : {}),
  };
  return { ...facts, source, digest: baseDigest(facts), probed_at: probedAt.toISOString() };
}
