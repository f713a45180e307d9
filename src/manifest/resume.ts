/**
 * Resume linkage. When a run is suspended, its snapshot reference records the
 * addresses (and core and extension) of the environment manifest it ran in.
 * Resuming offers a manifest; `checkResume` refuses any other address and
 * names every field that differs — never a value, since env values may be
 * secrets.
 *
 * Equal addresses are a claim about bytes only when pinned: two unpinned
 * manifests with one address declare the same thing, but their tags or URLs
 * may have resolved to different bytes on different hosts (the standard: an
 * unpinned manifest is never the basis of a "same environment" claim across
 * hosts). So an unpinned pair is refused (RESUME_UNPINNED) unless the caller
 * asks for it by name with `allowUnpinned`.
 */
import { CairnError, isJsonObject, parseDigest, type Blake3Digest, type Issue } from "../core/index.ts";
import type { EnvCore, EnvExtension } from "./core.ts";
import { diffManifestParts } from "./core-diff.ts";
import { DEFAULT_MANIFEST_LIMITS } from "./declared.ts";
import { parseCore } from "./document.ts";
import { ownModel } from "./own.ts";
import { addressOf, extensionAddressOf, pinningOf, type EnvManifest } from "./env-manifest.ts";

export const SNAPSHOT_REF_SCHEMA = "cairn.snapshot-ref/2";

export interface SnapshotRef {
  schema: typeof SNAPSHOT_REF_SCHEMA;
  /** The standard's manifest address at suspension. */
  manifest_address: Blake3Digest;
  /** cairn's extension address at suspension. */
  extension_address: Blake3Digest;
  /** The manifest core and extension at suspension, so a refusal can name what changed. */
  core: EnvCore;
  extension: EnvExtension;
}

export function snapshotRefOf(manifest: EnvManifest): SnapshotRef {
  checkConsistent(manifest.core, manifest.extension, manifest.address, manifest.extension_address, "offered manifest");
  return {
    schema: SNAPSHOT_REF_SCHEMA,
    manifest_address: manifest.address,
    extension_address: manifest.extension_address,
    core: manifest.core,
    extension: manifest.extension,
  };
}

function checkConsistent(core: EnvCore, ext: EnvExtension, address: Blake3Digest, extAddress: Blake3Digest, what: string): void {
  if (addressOf(core) !== address) {
    throw new CairnError("MANIFEST_MISMATCH", `${what}: the address does not match its core`, { path: "/manifest_address" });
  }
  if (extensionAddressOf(ext) !== extAddress) {
    throw new CairnError("MANIFEST_MISMATCH", `${what}: the extension address does not match its extension`, { path: "/extension_address" });
  }
}

const SNAPSHOT_FIELDS = new Set(["schema", "manifest_address", "extension_address", "core", "extension"]);

/** Reads a stored snapshot reference strictly; the addresses are recomputed. */
export function parseSnapshotRef(unsafeInput: unknown): SnapshotRef {
  const unsafe = ownModel(unsafeInput, DEFAULT_MANIFEST_LIMITS.max_depth);
  if (!isJsonObject(unsafe) || unsafe.schema !== SNAPSHOT_REF_SCHEMA) {
    throw new CairnError("MANIFEST_MISMATCH", `not a ${SNAPSHOT_REF_SCHEMA} document`, { path: "/schema" });
  }
  for (const k of Object.keys(unsafe)) {
    if (!SNAPSHOT_FIELDS.has(k)) throw new CairnError("MODEL_UNKNOWN_FIELD", `unknown field "${k.slice(0, 64)}"`, { path: `/${k}` });
  }
  const address = parseDigest(unsafe.manifest_address, "/manifest_address", "blake3") as Blake3Digest;
  const extAddress = parseDigest(unsafe.extension_address, "/extension_address", "blake3") as Blake3Digest;
  const { core, extension } = parseCore(unsafe.core, unsafe.extension);
  checkConsistent(core, extension, address, extAddress, "snapshot reference");
  return { schema: SNAPSHOT_REF_SCHEMA, manifest_address: address, extension_address: extAddress, core, extension };
}

export interface ResumeOptions {
  /** Accept an unpinned pair with equal addresses (a claim about the declaration, not the bytes). */
  allowUnpinned?: boolean;
}

/** What a passing resume check established. */
export type ResumeResult = "same environment, pinned" | "same declaration, unpinned: not a claim about bytes";

/**
 * Refuses to resume `snapshot` in `offered` unless both addresses are equal;
 * the error's issues name each differing field. An equal unpinned pair is
 * refused with RESUME_UNPINNED unless `allowUnpinned` is given.
 */
export function checkResume(snapshot: SnapshotRef, offered: EnvManifest, options: ResumeOptions = {}): ResumeResult {
  checkConsistent(snapshot.core, snapshot.extension, snapshot.manifest_address, snapshot.extension_address, "snapshot reference");
  checkConsistent(offered.core, offered.extension, offered.address, offered.extension_address, "offered manifest");
  if (snapshot.manifest_address === offered.address && snapshot.extension_address === offered.extension_address) {
    // Equal addresses mean equal cores, so one side's pinning is both sides'.
    const pinning = pinningOf(offered.core, offered.extension);
    if (pinning.pinned) return "same environment, pinned";
    if (options.allowUnpinned === true) return "same declaration, unpinned: not a claim about bytes";
    throw new CairnError("RESUME_UNPINNED", "same declaration, unpinned: not a claim about bytes; resume refused", {
      path: pinning.unpinned[0] ? `/core${pinning.unpinned[0]}` : "/core",
      hint: `pin ${pinning.unpinned.join(", ")} by @sha256, or accept the unpinned pair by name (--allow-unpinned)`,
      issues: pinning.unpinned.map((p) => ({
        code: "RESUME_UNPINNED",
        path: `/core${p}`,
        message: "addressed by tag, URL or path (a local feature without --features-dir): its bytes are not covered",
      })),
    });
  }
  const diffs = diffManifestParts(snapshot, offered);
  const issues: Issue[] = diffs.map((d) => ({
    code: "RESUME_MISMATCH",
    path: d.path.startsWith("/extension/") ? d.path : `/core${d.path}`,
    message: `${d.change} since suspension`,
  }));
  const fields = [...new Set(diffs.map((d) => (d.path.startsWith("/extension/") ? `extension ${d.path.split("/")[2]}` : d.path.split("/")[1])))].join(", ");
  throw new CairnError("RESUME_MISMATCH", `the offered environment differs from the one suspended in: ${fields}`, {
    path: issues[0]?.path ?? "/core",
    hint: `suspended in ${snapshot.manifest_address} (extension ${snapshot.extension_address}), offered ${offered.address} (extension ${offered.extension_address}); resume with the original devcontainer.json`,
    issues,
  });
}
