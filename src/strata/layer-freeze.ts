/**
 * freeze-layer: what a user installed interactively into the mutable upper
 * layer of a dirty environment (an overlayfs upper directory) becomes a
 * signed, content-addressed layer, and the environment is resolved again with
 * that layer instead of the mutable one, so it can be signed as clean.
 *
 *  - the upper directory is read by the tree floor's directory reader in its
 *    overlayfs mode: a deletion (`c 0 0` device) becomes `.wh.<name>`, an
 *    opaque directory (`trusted.overlay.opaque` or `user.overlay.opaque` = y)
 *    gets `.wh..wh..opq`, and an entry whose data or name lives in a lower
 *    layer (redirect, metacopy) is refused;
 *  - the layer's build provenance records where it came from: the sha256 of
 *    the dirty lockfile's bytes as a source (`dirty-lock:sha256:…`), and the
 *    dirty lock's EnvironmentID and base digest as its build environment;
 *  - `frozenProfile` is the profile the dirty lock was resolved from (checked
 *    by its digest) with the frozen layer added and no mutable layer; the
 *    resolver then runs on it, on the dirty lock's own base.
 */
import { CairnError, sha256 } from "../core/index.ts";
import { readDirectoryStreamed, DEFAULT_DIR_LIMITS, type DirLimits } from "../tree/index.ts";
import { writeLayerBlob, type LayerBlobFile } from "./blob.ts";
import { layoutPrefix, manifestFor, type LayerSpec } from "./build.ts";
import { environmentId } from "./env-id.ts";
import type { LayerManifest } from "./layer-manifest.ts";
import type { Lockfile } from "./lockfile.ts";
import type { Profile } from "./profile-model.ts";
import { profileDigest } from "./resolve/resolver.ts";
import { overlayXattrs } from "./overlay-xattrs.ts";

export interface DirtyLock {
  readonly lock: Lockfile;
  /** The lockfile's bytes as read: their sha256 is the provenance source. */
  readonly bytes: Uint8Array;
}

/** Refuses (LOCK_INVALID at /mutable_layer) a lockfile without a mutable upper layer: there is nothing to freeze. */
export function requireDirty(lock: Lockfile): void {
  if (lock.mutable_layer === undefined) {
    throw new CairnError("LOCK_INVALID", "the lockfile has no mutable upper layer: there is nothing to freeze", {
      path: "/mutable_layer",
      hint: "freeze the upper directory of an environment resolved with mutable_layer",
    });
  }
}

/**
 * The upper directory as a layer whose build provenance names the dirty
 * lock, streamed into the new private file `out` (files read as they are
 * written, as `layer build` does).
 */
export async function freezeUpperLayer(
  upper: string,
  dirty: DirtyLock,
  spec: LayerSpec,
  out: string,
  limits: DirLimits = DEFAULT_DIR_LIMITS,
): Promise<{ blob: LayerBlobFile; manifest: LayerManifest }> {
  requireDirty(dirty.lock);
  let lock_id: ReturnType<typeof environmentId> | undefined;
  try {
    lock_id = environmentId(dirty.lock);
  } catch (e) {
    if (!(e instanceof CairnError && e.code === "LOCK_UNFROZEN")) throw e;
  }
  const base_digest = dirty.lock.base.digest;
  const recorded = spec.recorded ?? {};
  const withProvenance: LayerSpec = {
    ...spec,
    recorded: {
      ...recorded,
      sources: [...(recorded.sources ?? []), `dirty-lock:${sha256(dirty.bytes)}`],
      ...(lock_id !== undefined || base_digest !== undefined
        ? { environment: { ...(lock_id !== undefined ? { lock_id } : {}), ...(base_digest !== undefined ? { base_digest } : {}) } }
        : {}),
    },
  };
  const blob = await writeLayerBlob(readDirectoryStreamed(upper, layoutPrefix(spec), limits, { whiteouts: "overlayfs", overlayXattrs }), out);
  return { blob, manifest: manifestFor(withProvenance, blob) };
}

/**
 * The profile to resolve after a freeze: the dirty lock's own profile (its
 * digest must be the lock's `profile_sha256`), with the frozen layer added to
 * `software` and the mutable layer removed.
 */
export function frozenProfile(profile: Profile, dirty: Lockfile, frozen: Pick<LayerManifest, "name" | "version">): Profile {
  requireDirty(dirty);
  if (dirty.profile_sha256 === undefined || profileDigest(profile) !== dirty.profile_sha256) {
    throw new CairnError("LOCK_INVALID", "the profile is not the one the dirty lockfile was resolved from (its digest differs from profile_sha256)", {
      path: "/profile_sha256",
      hint: "pass the profile the dirty environment was resolved from",
    });
  }
  return { ...profile, software: [...profile.software, { kind: "layer", name: frozen.name, version: frozen.version }], mutable_layer: false };
}
