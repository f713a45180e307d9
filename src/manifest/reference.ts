/**
 * Image and feature references, and the single definition of "pinned": a
 * reference is pinned only when it ends in `@sha256:<64 lowercase hex>`, so
 * the bytes it names cannot change. Tags and URLs are accepted but unpinned.
 *
 * References follow the OCI distribution grammar
 * ([domain[:port]/]path[:tag][@digest], path components lowercase). A digest
 * with another algorithm or with uppercase hex is refused rather than counted
 * as unpinned: registries reject it, and a label must not depend on which
 * tool reads the string.
 */

const DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const DOMAIN = `${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*(?::[0-9]+)?`;
const PATH_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const TAG = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}";
const REFERENCE = new RegExp(`^((?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*)(?::(${TAG}))?(?:@([^@]*))?$`);
const SHA256_DIGEST = /^sha256:[0-9a-f]{64}$/;

/** Longest reference accepted (the distribution spec caps names at 255). */
export const MAX_REFERENCE_LENGTH = 512;

export interface ParsedReference {
  /** The reference without tag or digest. */
  readonly name: string;
  readonly tag: string | undefined;
  readonly digest: string | undefined;
  readonly pinned: boolean;
}

export type ReferenceResult = { ok: true; ref: ParsedReference } | { ok: false; why: string };

/** Parses an OCI image reference; the reason on failure never echoes the value. */
export function parseReference(unsafeRef: string): ReferenceResult {
  if (unsafeRef.length === 0) return { ok: false, why: "is empty" };
  if (unsafeRef.length > MAX_REFERENCE_LENGTH) return { ok: false, why: `is longer than ${MAX_REFERENCE_LENGTH} characters` };
  const m = REFERENCE.exec(unsafeRef);
  if (m === null || m[1]!.length > 255) {
    return { ok: false, why: "is not a valid reference ([registry/]path[:tag][@sha256:<64 hex>], path in lowercase)" };
  }
  const digest = m[3];
  if (digest !== undefined && !SHA256_DIGEST.test(digest)) {
    return { ok: false, why: "has a digest that is not sha256:<64 lowercase hex>" };
  }
  return { ok: true, ref: { name: m[1]!, tag: m[2], digest, pinned: digest !== undefined } };
}

export type FeatureIdResult = { ok: true; id: string; base: string; pinned: boolean } | { ok: false; why: string };

/**
 * Normalizes a feature id: lowercased, then either an OCI reference or an
 * https tarball URL. Local paths are refused: they read files beside
 * devcontainer.json on the host, which the address cannot cover.
 */
export function normalizeFeatureId(unsafeId: string): FeatureIdResult {
  const id = unsafeId.toLowerCase();
  if (id.startsWith("./") || id.startsWith("../") || id.startsWith("/") || id.startsWith(".\\") || id.startsWith("..\\")) {
    return { ok: false, why: "is a local path; local features read host files the address cannot cover — publish the feature and pin it by digest" };
  }
  if (id.startsWith("https://")) {
    if (id.length > MAX_REFERENCE_LENGTH || /[\s"'\\<>`]/.test(id)) return { ok: false, why: "is not a valid https URL" };
    return { ok: true, id, base: id, pinned: false };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(id)) return { ok: false, why: "uses a URL scheme other than https" };
  const r = parseReference(id);
  if (!r.ok) return r;
  // Lowercasing is for the name; a digest must already be lowercase hex, or an
  // invalid `@sha256:ABC…` would become a valid pin and be reported as pinned.
  const at = unsafeId.lastIndexOf("@");
  if (r.ref.digest !== undefined && at >= 0 && !SHA256_DIGEST.test(unsafeId.slice(at + 1))) {
    return { ok: false, why: "has a digest that is not sha256:<64 lowercase hex>" };
  }
  return { ok: true, id, base: r.ref.name, pinned: r.ref.pinned };
}
