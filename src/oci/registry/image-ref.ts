/**
 * Image references: `HOST[:PORT]/REPO[:TAG][@sha256:HEX]`, the grammar of the
 * distribution reference package (github.com/distribution/reference), kept
 * to what cairn needs. This is the single parser: the CLI, workload specs and
 * devcontainer pinning all go through it, so one spelling means one image.
 *
 * A name without a registry host (`debian:bookworm`) means Docker Hub, as it
 * does for docker, skopeo and podman (`docker.io/library/debian`). The host
 * is the first component only when it contains `.` or `:` or is `localhost`.
 * Upper case in a repository, empty components and `..` are refused: the
 * repository becomes part of a URL path, so a hostile reference must not be
 * able to reach another endpoint.
 */
import { CairnError, parseSha256, type Sha256Digest } from "../../core/index.ts";

/** A parsed image reference. `tag` and `digest` may both be present (`repo:tag@sha256:…`: the digest wins). */
export interface ImageRef {
  /** Registry host as the user named it, with port (`127.0.0.1:5000`, `docker.io`). */
  readonly registry: string;
  /** Repository path (`library/debian`, `devcontainers/python`). */
  readonly repository: string;
  readonly tag: string | undefined;
  readonly digest: Sha256Digest | undefined;
}

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;
const MAX_REF = 1024;

/** The host Docker Hub's API answers on, for the `docker.io` name. */
export const DOCKER_HUB = "docker.io";
const DOCKER_HUB_API = "registry-1.docker.io";

function refuse(unsafe: string, why: string, path: string): never {
  throw new CairnError("REFERENCE_INVALID", `image reference ${JSON.stringify(unsafe.slice(0, 200))} ${why}`, {
    path,
    hint: "write HOST/REPOSITORY:TAG or HOST/REPOSITORY@sha256:<64 hex>, e.g. 127.0.0.1:5000/tools/app@sha256:…",
  });
}

/** Parses an image reference; REFERENCE_INVALID naming `path` otherwise. */
export function parseImageRef(unsafe: unknown, path = ""): ImageRef {
  if (typeof unsafe !== "string" || unsafe.length === 0) refuse(String(unsafe), "is not a non-empty string", path);
  if (unsafe.length > MAX_REF) refuse(unsafe, `is longer than ${MAX_REF} characters`, path);
  let rest = unsafe;
  let digest: Sha256Digest | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    try {
      digest = parseSha256(rest.slice(at + 1), path);
    } catch {
      refuse(unsafe, "has a digest that is not sha256:<64 lowercase hex>", path);
    }
    rest = rest.slice(0, at);
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf("/");
  const colon = rest.lastIndexOf(":");
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    if (!TAG.test(tag)) refuse(unsafe, "has an invalid tag", path);
    rest = rest.slice(0, colon);
  }
  const parts = rest.split("/");
  let registry = DOCKER_HUB;
  const first = parts[0] ?? "";
  if (parts.length > 1 && (first.includes(".") || first.includes(":") || first === "localhost")) {
    if (!HOST.test(first)) refuse(unsafe, "has an invalid registry host", path);
    registry = first;
    parts.shift();
  }
  if (parts.length === 0 || !parts.every((p) => COMPONENT.test(p))) refuse(unsafe, "has an invalid repository (lowercase components of [a-z0-9._-])", path);
  if (registry === DOCKER_HUB && parts.length === 1) parts.unshift("library");
  return Object.freeze({ registry, repository: parts.join("/"), tag: digest === undefined && tag === undefined ? "latest" : tag, digest });
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
  const host = hostWithPort.startsWith("[") ? hostWithPort.slice(1, hostWithPort.indexOf("]")) : hostWithPort.replace(/:\d+$/, "");
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
