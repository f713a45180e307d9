/**
 * Image references: `[HOST[:PORT]/]PATH[:TAG][@sha256:HEX]`, the grammar of
 * the distribution reference package (github.com/distribution/reference),
 * kept to what cairn needs. This is the single definition: `splitImageReference`
 * is the grammar (what is valid, and which part is which, as written), and
 * both its users read references through it: `parseImageRef` here (pull,
 * workload specs, pinning, `oci://` layer registries) adds the registry
 * defaults, and the manifest area's `parseReference` (devcontainer.json
 * images and features, the pinned label) keeps the name as written. Two
 * grammars once disagreed (one accepted `foo_bar.io/x` that the other
 * refused; one took `[::1]:5000/x` that the other did not), so a reference
 * could be "valid" and then fail to pin.
 *
 * The first component is the registry host when there is more than one and
 * it contains `.` or `:`, is `localhost`, or has upper case (distribution's
 * rule); it must then be a DNS name or a bracketed IPv6 address, with an
 * optional port. A name without a host (`debian:bookworm`) means Docker Hub
 * to `parseImageRef`, as it does for docker, skopeo and podman
 * (`docker.io/library/debian`). Path components are lowercase; empty
 * components and `..` are refused: the repository becomes part of a URL
 * path, so a hostile reference must not be able to reach another endpoint.
 * Every pattern is linear (no nested quantifiers over the same characters),
 * and lengths are bounded before any of them runs.
 */
import { CairnError, type Sha256Digest } from "../../core/index.ts";

/** A parsed image reference. `tag` and `digest` may both be present (`repo:tag@sha256:…`: the digest wins). */
export interface ImageRef {
  /** Registry host as the user named it, with port (`127.0.0.1:5000`, `docker.io`). */
  readonly registry: string;
  /** Repository path (`library/debian`, `devcontainers/python`). */
  readonly repository: string;
  readonly tag: string | undefined;
  readonly digest: Sha256Digest | undefined;
}

/** A reference split as written, with no defaults: what the grammar says. */
export interface ImageReferenceParts {
  /** The host, when the reference names one (`ghcr.io`, `127.0.0.1:5000`, `[::1]:5000`). */
  readonly host: string | undefined;
  /** The repository path as written (no `library/` added). */
  readonly path: string;
  /** Host and path as written: the reference without tag or digest. */
  readonly name: string;
  readonly tag: string | undefined;
  readonly digest: Sha256Digest | undefined;
}

export type ImageReferenceResult = { readonly ok: true; readonly parts: ImageReferenceParts } | { readonly ok: false; readonly why: string };

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** Longest reference accepted (a 255-character name, a 128-character tag and a digest fit). */
export const MAX_REFERENCE_LENGTH = 512;
/** Longest name (host and path), as the distribution spec caps it. */
export const MAX_NAME_LENGTH = 255;

/** The host Docker Hub's API answers on, for the `docker.io` name. */
export const DOCKER_HUB = "docker.io";
const DOCKER_HUB_API = "registry-1.docker.io";

/** The grammar: splits a reference, or says why it is not one (never echoing the value). */
export function splitImageReference(unsafe: string): ImageReferenceResult {
  if (unsafe.length === 0) return { ok: false, why: "is empty" };
  if (unsafe.length > MAX_REFERENCE_LENGTH) return { ok: false, why: `is longer than ${MAX_REFERENCE_LENGTH} characters` };
  let rest = unsafe;
  let digest: Sha256Digest | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    const d = rest.slice(at + 1);
    if (!DIGEST.test(d)) return { ok: false, why: "has a digest that is not sha256:<64 lowercase hex>" };
    digest = d as Sha256Digest;
    rest = rest.slice(0, at);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) {
    tag = rest.slice(colon + 1);
    if (!TAG.test(tag)) return { ok: false, why: "has an invalid tag" };
    rest = rest.slice(0, colon);
  }
  if (rest.length > MAX_NAME_LENGTH) return { ok: false, why: `has a name longer than ${MAX_NAME_LENGTH} characters` };
  const parts = rest.split("/");
  const first = parts[0]!;
  let host: string | undefined;
  if (parts.length > 1 && (first.includes(".") || first.includes(":") || first === "localhost" || first !== first.toLowerCase())) {
    if (!HOST.test(first)) return { ok: false, why: "has an invalid registry host" };
    host = first;
    parts.shift();
  }
  if (!parts.every((p) => COMPONENT.test(p))) {
    return { ok: false, why: "is not a valid reference ([registry/]path[:tag][@sha256:<64 hex>], path in lowercase)" };
  }
  return { ok: true, parts: { host, path: parts.join("/"), name: rest, tag, digest } };
}

function refuse(unsafe: string, why: string, path: string): never {
  throw new CairnError("REFERENCE_INVALID", `image reference ${JSON.stringify(unsafe.slice(0, 200))} ${why}`, {
    path,
    hint: "write HOST/REPOSITORY:TAG or HOST/REPOSITORY@sha256:<64 hex>, e.g. 127.0.0.1:5000/tools/app@sha256:…",
  });
}

/** Parses an image reference for a registry (Docker Hub and `latest` by default); REFERENCE_INVALID naming `path` otherwise. */
export function parseImageRef(unsafe: unknown, path = ""): ImageRef {
  if (typeof unsafe !== "string" || unsafe.length === 0) refuse(String(unsafe), "is not a non-empty string", path);
  const r = splitImageReference(unsafe);
  if (!r.ok) refuse(unsafe, r.why, path);
  const { host, tag, digest } = r.parts;
  const registry = host ?? DOCKER_HUB;
  const repository = registry === DOCKER_HUB && !r.parts.path.includes("/") ? `library/${r.parts.path}` : r.parts.path;
  return Object.freeze({ registry, repository, tag: digest === undefined && tag === undefined ? "latest" : tag, digest });
}

/** The host (with port) the registry's HTTP API answers on. */
export function apiHost(ref: Pick<ImageRef, "registry">): string {
  return ref.registry === DOCKER_HUB ? DOCKER_HUB_API : ref.registry;
}

/** The canonical spelling: `HOST/REPO@sha256:…` when a digest is known, else `HOST/REPO:TAG`. */
export function formatImageRef(ref: ImageRef): string {
  const name = `${ref.registry}/${ref.repository}`;
  return ref.digest !== undefined ? `${name}@${ref.digest}` : `${name}:${ref.tag ?? "latest"}`;
}

/** True for a loopback host name or address (`127.0.0.0/8`, `::1`, `localhost`), with or without port. */
export function isLoopbackHost(hostWithPort: string): boolean {
  // the whole string is the host and an optional port: "[::1].evil" or "127.0.0.1.nip.io"
  // only look like loopback, and plain http to them would leave the machine
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+))(?::\d{1,5})?$/.exec(hostWithPort);
  if (m === null) return false;
  const host = m[1] ?? m[2]!;
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
