/**
 * The base a lockfile's layers sit on. It is either probed (from `host`, a
 * root filesystem directory, or an OCI image's tree) or merely declared by the
 * profile (`debian12` on `x86_64`, nothing checked), and the lockfile says
 * which in `source`.
 *
 * The base digest (the lockfile's `base.ami_sha256`, bare hex) is sha256 over
 * the JCS encoding of the capability record the lockfile carries, as seed
 * 002's BaseCapabilities.ContentDigest describes it: image, os, arch, abi,
 * system compiler and the provided capabilities (os:ID@VERSION_ID, glibc,
 * gcc), under the tag `cairn.base/2`. It excludes the probe time and how the
 * facts were obtained, so probing the same image twice, or on two days,
 * gives the same digest. Strata computes its own digest of the same record by
 * its own encoding; cairn does not claim to reproduce it.
 */
import { declareIdentity, defineScope, identityDigest, isDigest, type Sha256Digest } from "../core/index.ts";
import { capabilityString, type Capability } from "./capability.ts";
import { type Arch, canonicalArch } from "./platform.ts";
import { bareHex } from "./layer-spec.ts";
import type { ResolvedBase } from "./spec/types.ts";
import type { ProbeResult } from "./probe.ts";

export const BASE_TAG = "cairn.base/2";

/** The tag is the `tag` field of the hashed object. */
export const BASE_DIGEST = declareIdentity({
  name: "base digest",
  tag: BASE_TAG,
  algorithm: "sha256",
  framing: "jcs-tag-field",
  role: "identity",
  definedIn: "src/strata/base.ts",
});

/** What the base digest covers, as fields of the lockfile's base object (seed 002's ResolvedBase). */
export const BASE_DIGEST_SCOPE = defineScope({
  identity: BASE_TAG,
  covers: {
    "/capabilities/ami_id": "the image the facts were probed from (an OCI image manifest digest; empty for a root filesystem or the host)",
    "/capabilities/os": "the base's name (debian12, ...)",
    "/capabilities/arch": "the machine architecture",
    "/capabilities/abi": "the C library ABI (gnu, musl, none; unknown for a declared base)",
    "/capabilities/system_compiler": "the system compiler's package, when recorded",
    "/capabilities/provides": "the derived capabilities (os:ID, glibc, gcc), sorted",
  },
  excludes: {
    "/declared_os": "the profile's name for the base; the probed name is covered",
    "/ami_id": "the same value as /capabilities/ami_id",
    "/capabilities/probed_at": "wall-clock time of the probe",
    "/ami_sha256": "the digest itself, computed from the covered fields",
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
  /** `declared`, `host`, `rootfs:PATH`, `oci:LAYOUT`; `recorded` for facts read from a lockfile cairn did not resolve. */
  readonly source: string;
  /** The image manifest digest, for a base probed from an OCI image. */
  readonly image?: Sha256Digest;
  /** Absent only in an unfrozen lockfile. */
  readonly digest?: Sha256Digest;
  /** Wall-clock provenance; not in the digest. */
  readonly probed_at?: string;
  /** The ABI as the lockfile spells it, when that is not cairn's word (Strata's `linux-gnu-2.34`). */
  readonly abi_text?: string;
}

type BaseFacts = Pick<LockBase, "name" | "arch" | "abi" | "capabilities" | "image">;

/** The capability record the digest covers, as the lockfile carries it (seed 002's BaseCapabilities, less probed_at). */
export function baseDigest(b: BaseFacts): Sha256Digest {
  return identityDigest(BASE_DIGEST, {
    ami_id: b.image ?? "",
    os: b.name,
    arch: b.arch,
    abi: b.abi,
    system_compiler: "",
    provides: b.capabilities.map(capabilityString).sort(),
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

/** The base on the wire (seed 002's ResolvedBase); `declaredOs` is the profile's base.os. */
export function specBase(b: LockBase, declaredOs: string): ResolvedBase {
  return {
    declared_os: declaredOs,
    ami_id: b.image ?? "",
    ami_sha256: bareHex(b.digest),
    capabilities: {
      ami_id: b.image ?? "",
      os: b.name,
      arch: b.arch,
      abi: b.abi_text ?? b.abi,
      probed_at: b.probed_at ?? "",
      system_compiler: "",
      provides: b.capabilities.map((c) => ({ name: c.name, version: c.version })),
    },
  };
}

/** cairn's reading of an ABI string: its own words, or Strata's `linux-gnu-*` / `linux-musl*`. */
function abiOf(text: string): BaseAbi {
  if (text === "gnu" || text === "musl" || text === "none") return text;
  if (/^linux-gnu(-|$)/.test(text)) return "gnu";
  if (/^linux-musl/.test(text)) return "musl";
  return "unknown";
}

/** The base as cairn reads it from the wire. */
export function viewBase(s: ResolvedBase, source = "recorded"): LockBase {
  const c = s.capabilities;
  const os = c.provides.find((x) => x.name.startsWith("os:"));
  const abi = abiOf(c.abi);
  return {
    name: c.os !== "" ? c.os : s.declared_os,
    arch: (canonicalArch(c.arch) ?? c.arch) as Arch,
    abi,
    ...(c.abi !== abi ? { abi_text: c.abi } : {}),
    ...(os !== undefined ? { os_id: os.name.slice(3), version_id: os.version } : {}),
    capabilities: c.provides.map((x) => ({ name: x.name, version: x.version })),
    source,
    ...(isDigest(c.ami_id) && c.ami_id.startsWith("sha256:") ? { image: c.ami_id as Sha256Digest } : {}),
    ...(s.ami_sha256 !== "" ? { digest: `sha256:${s.ami_sha256}` as Sha256Digest } : {}),
    ...(c.probed_at !== "" ? { probed_at: c.probed_at } : {}),
  };
}
