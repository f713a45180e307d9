/**
 * Image and feature references, and the single definition of "pinned": a
 * reference is pinned only when it ends in `@sha256:<64 lowercase hex>`, so
 * the bytes it names cannot change. Tags and URLs are accepted but unpinned.
 *
 * The grammar itself is oci's (`splitImageReference`,
 * src/oci/registry/image-ref.ts), the one cairn reads every image reference
 * with, so what ingest calls a valid image is what `manifest pin` and `pull`
 * can resolve. A digest with another algorithm or with uppercase hex is
 * refused rather than counted as unpinned: registries reject it, and a label
 * must not depend on which tool reads the string.
 */
import { MAX_REFERENCE_LENGTH, splitImageReference } from "../oci/index.ts";

export { MAX_REFERENCE_LENGTH };

const SHA256_DIGEST = /^sha256:[0-9a-f]{64}$/;

export interface ParsedReference {
  /** The reference without tag or digest, as written. */
  readonly name: string;
  readonly tag: string | undefined;
  readonly digest: string | undefined;
  readonly pinned: boolean;
}

export type ReferenceResult = { ok: true; ref: ParsedReference } | { ok: false; why: string };

/** Parses an OCI image reference; the reason on failure never echoes the value. */
export function parseReference(unsafeRef: string): ReferenceResult {
  const r = splitImageReference(unsafeRef);
  if (!r.ok) return r;
  const { name, tag, digest } = r.parts;
  return { ok: true, ref: { name, tag, digest, pinned: digest !== undefined } };
}

/** How a feature is addressed; only `oci` can be pinned (by `@sha256`). */
export type FeatureIdKind = "oci" | "https" | "local" | "github-release" | "legacy";

export type FeatureIdResult = { ok: true; id: string; base: string; pinned: boolean; kind: FeatureIdKind } | { ok: false; why: string };

const GITHUB_RELEASE = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+$/;
const LEGACY_BARE = /^[A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+)?$/;

/**
 * Normalizes a feature id. Only OCI references are lowercased: the
 * devcontainers CLI downcases an OCI feature reference before resolving it
 * (getRef), so two spellings name one artifact. Everything else is kept as
 * written: an https URL's path is case-sensitive (two URLs that differ in
 * case are two features), and so are local paths.
 *
 *   ./x, ../x              local feature beside devcontainer.json: accepted, unpinned
 *   /x                     refused (reads host files outside the project; the CLI takes ./ and ../ only)
 *   https://…              tarball URL: accepted, never pinned
 *   owner/repo/f@v1.2      deprecated GitHub-release form: accepted, unpinned (a release tag can move)
 *   node, node:1           bare legacy id: accepted, unpinned; with @digest refused (the CLI refuses it)
 *   registry/path[:tag][@sha256:…]  OCI reference: pinned only by @sha256
 */
export function normalizeFeatureId(unsafeId: string): FeatureIdResult {
  if (unsafeId.startsWith("./") || unsafeId.startsWith("../")) {
    if (unsafeId.length > MAX_REFERENCE_LENGTH || /[\s"'\\<>`\u0000-\u001f]/.test(unsafeId))
      return { ok: false, why: "is a local feature path with characters a path may not hold here" };
    return { ok: true, id: unsafeId, base: unsafeId, pinned: false, kind: "local" };
  }
  if (unsafeId.startsWith("/") || unsafeId.startsWith(".\\") || unsafeId.startsWith("..\\")) {
    return { ok: false, why: "is an absolute or Windows-style local feature path; a local feature is named ./<dir> or ../<dir> relative to devcontainer.json" };
  }
  if (/^https:\/\//i.test(unsafeId)) {
    if (unsafeId.length > MAX_REFERENCE_LENGTH || /[\s"'\\<>`]/.test(unsafeId)) return { ok: false, why: "is not a valid https URL" };
    return { ok: true, id: unsafeId, base: unsafeId, pinned: false, kind: "https" };
  }
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(unsafeId)) return { ok: false, why: "uses a URL scheme other than https" };
  const at = unsafeId.lastIndexOf("@");
  if (at >= 0 && !unsafeId.slice(at + 1).includes(":") && GITHUB_RELEASE.test(unsafeId)) {
    return { ok: true, id: unsafeId, base: unsafeId.slice(0, at), pinned: false, kind: "github-release" };
  }
  if (!unsafeId.includes("/")) {
    if (at >= 0) {
      return {
        ok: false,
        why: "is a bare legacy feature id with a digest; the devcontainers CLI refuses digests on legacy ids — use the full OCI id (e.g. ghcr.io/devcontainers/features/<name>@sha256:…)",
      };
    }
    if (!LEGACY_BARE.test(unsafeId)) return { ok: false, why: "is not a valid legacy feature id (name[:version])" };
    return { ok: true, id: unsafeId, base: unsafeId.split(":")[0]!, pinned: false, kind: "legacy" };
  }
  const id = unsafeId.toLowerCase();
  const r = parseReference(id);
  if (!r.ok) return r;
  // Lowercasing is for the name; a digest must already be lowercase hex, or an
  // invalid `@sha256:ABC…` would become a valid pin and be reported as pinned.
  if (r.ref.digest !== undefined && at >= 0 && !SHA256_DIGEST.test(unsafeId.slice(at + 1))) {
    return { ok: false, why: "has a digest that is not sha256:<64 lowercase hex>" };
  }
  return { ok: true, id, base: r.ref.name, pinned: r.ref.pinned, kind: "oci" };
}
