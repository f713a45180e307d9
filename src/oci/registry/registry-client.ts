/**
 * The OCI Distribution v2 client (https://github.com/opencontainers/distribution-spec):
 * resolve a tag, fetch manifests and blobs by digest with size and digest
 * verified while streaming, push blobs (monolithic or chunked) and
 * manifests, list tags, and the referrers API with its tag-schema fallback.
 *
 * Written on Node's fetch rather than a library: the npm clients for the
 * Distribution API are unmaintained (docker-registry-client, last release
 * 2017, v1-era, restify) or tied to one cloud (ECR, ACR SDKs), and none
 * verifies digests while streaming. docs/registry.md says more.
 *
 * Everything fetched by digest is verified against that digest; a tag is
 * only ever resolved to a digest (HEAD), and everything after that is
 * fetched by digest, so a tag that moves mid-pull cannot mix two images.
 */
import {
  CairnError,
  REMOTE_LIMITS,
  checkLimit,
  isJsonObject,
  remoteLimitHint,
  parseJsonBytes,
  parseSha256,
  sha256,
  type Sha256Digest,
} from "../../core/index.ts";
import { readBodyBounded, streamVerified } from "./remote-body.ts";
import { RegistryTransport, type TransportOptions } from "./registry-transport.ts";

export const DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
export const DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json";
const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";

/** Every manifest media type cairn asks for, in `Accept`. */
export const MANIFEST_ACCEPT = [OCI_INDEX, OCI_MANIFEST, DOCKER_MANIFEST_LIST, DOCKER_MANIFEST].join(", ");

/** A manifest (or index) larger than this is refused before its body is read. Named limit `manifestBytes`. */
export const DEFAULT_MANIFEST_BYTES = 4 * 1024 * 1024;
/** The chunk size of a chunked upload. */
export const DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024;

export interface RemoteDescriptor {
  readonly mediaType: string;
  readonly digest: Sha256Digest;
  readonly size: number;
}

export interface FetchedManifest extends RemoteDescriptor {
  readonly bytes: Buffer;
}

export interface RegistryClientOptions extends TransportOptions {
  /** The manifest size limit (default DEFAULT_MANIFEST_BYTES). */
  readonly manifestBytes?: number;
}

/** Where an upload's bytes come from: bytes in memory, or a reader of a range of a file the caller verified. */
export type BlobBytes = Uint8Array | { readonly size: number; readonly read: (offset: number, length: number) => Promise<Uint8Array> };

const REPO = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;
const REFERENCE = /^(?:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|sha256:[0-9a-f]{64})$/;

function checkRepo(repo: string): string {
  if (!REPO.test(repo)) throw new CairnError("REFERENCE_INVALID", `invalid repository name ${JSON.stringify(repo.slice(0, 200))}`, { path: repo });
  return repo;
}

function checkReference(ref: string): string {
  if (!REFERENCE.test(ref)) throw new CairnError("REFERENCE_INVALID", `invalid tag or digest ${JSON.stringify(ref.slice(0, 200))}`, { path: ref });
  return ref;
}

function mediaTypeOf(res: Response): string {
  return (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
}

export class RegistryClient {
  readonly transport: RegistryTransport;
  readonly manifestBytes: number;

  constructor(opts: RegistryClientOptions) {
    this.transport = new RegistryTransport(opts);
    this.manifestBytes = opts.manifestBytes ?? DEFAULT_MANIFEST_BYTES;
  }

  /** A refusal for an unexpected status, naming the request, never a header. */
  async #refused(res: Response, what: string): Promise<never> {
    await res.body?.cancel().catch(() => undefined);
    if (res.status === 401 || res.status === 403) {
      throw new CairnError("REMOTE_AUTH", `${this.transport.host} denied ${what} (${res.status})`, {
        path: what,
        hint: "log in (docker login / podman login), set REGISTRY_AUTH_FILE, or check the repository's permissions",
      });
    }
    throw new CairnError("REMOTE_REFUSED", `${this.transport.host} answered ${res.status} to ${what}`, {
      path: what,
      hint: res.status === 404 ? "check the repository, tag or digest" : undefined,
    });
  }

  /** Resolves a tag (or digest) to the manifest descriptor the registry serves for it: HEAD, falling back to GET. */
  async resolve(repo: string, reference: string): Promise<RemoteDescriptor> {
    const path = `${checkRepo(repo)}/manifests/${checkReference(reference)}`;
    const scope = `repository:${repo}:pull`;
    const head = await this.transport.send("HEAD", path, { scope, headers: { accept: MANIFEST_ACCEPT } });
    if (head.status === 200) {
      const d = head.headers.get("docker-content-digest");
      const len = head.headers.get("content-length");
      if (d !== null && len !== null && /^\d{1,15}$/.test(len)) {
        return { mediaType: mediaTypeOf(head), digest: parseSha256(d, "Docker-Content-Digest"), size: Number(len) };
      }
    } else if (head.status !== 405) {
      await this.#refused(head, `manifest ${repo}:${reference}`);
    }
    // No digest header: GET the manifest once and take the digest of the bytes served.
    const res = await this.transport.send("GET", path, { scope, headers: { accept: MANIFEST_ACCEPT } });
    if (res.status !== 200) await this.#refused(res, `manifest ${repo}:${reference}`);
    const bytes = await readBodyBounded(res, this.manifestBytes, "manifestBytes", `manifest ${repo}:${reference}`);
    return { mediaType: mediaTypeOf(res), digest: sha256(bytes), size: bytes.length };
  }

  /**
   * Fetches a manifest or index by digest: refused before reading when its
   * size (known or declared) is over `manifestBytes`, and verified against
   * the digest (and `size`, when known) while it streams.
   */
  async fetchManifest(repo: string, digest: Sha256Digest, size?: number): Promise<FetchedManifest> {
    const what = `manifest ${repo}@${digest}`;
    if (size !== undefined && size > this.manifestBytes) {
      throw new CairnError("LIMIT_EXCEEDED", `limit manifestBytes exceeded by ${what} (${size} > ${this.manifestBytes} bytes)`, {
        path: what,
        hint: "raise --max-manifest-bytes if this manifest is expected",
      });
    }
    const res = await this.transport.send("GET", `${checkRepo(repo)}/manifests/${digest}`, {
      scope: `repository:${repo}:pull`,
      headers: { accept: MANIFEST_ACCEPT },
    });
    if (res.status !== 200) await this.#refused(res, what);
    let bytes: Buffer;
    if (size === undefined) {
      bytes = await readBodyBounded(res, this.manifestBytes, "manifestBytes", what);
      if (sha256(bytes) !== digest) throw new CairnError("DIGEST_MISMATCH", `${what}: the bytes served do not match the requested digest`, { path: what });
    } else {
      const parts: Uint8Array[] = [];
      await streamVerified(res, digest, size, what, (c) => void parts.push(c));
      bytes = Buffer.concat(parts);
    }
    return { mediaType: mediaTypeOf(res), digest, size: bytes.length, bytes };
  }

  /** Streams a blob, verified against `digest` and `size`; `onChunk` writes where the caller stages it. */
  async fetchBlob(repo: string, digest: Sha256Digest, size: number, onChunk: (chunk: Uint8Array) => Promise<void> | void): Promise<void> {
    const what = `blob ${repo}@${digest}`;
    const res = await this.transport.send("GET", `${checkRepo(repo)}/blobs/${digest}`, { scope: `repository:${repo}:pull` });
    if (res.status !== 200) await this.#refused(res, what);
    await streamVerified(res, digest, size, what, onChunk);
  }

  /** True when the registry has the blob (HEAD). */
  async hasBlob(repo: string, digest: Sha256Digest, scope = "pull"): Promise<boolean> {
    const res = await this.transport.send("HEAD", `${checkRepo(repo)}/blobs/${digest}`, { scope: `repository:${repo}:${scope}` });
    await res.body?.cancel().catch(() => undefined);
    if (res.status === 200) return true;
    if (res.status === 404) return false;
    return this.#refused(res, `blob ${repo}@${digest}`);
  }

  /**
   * Pushes a blob unless the registry has it: one POST, then either a single
   * PUT with the bytes (monolithic) or PATCHes of `chunkBytes` followed by a
   * closing PUT (chunked). The registry checks the digest on the closing
   * PUT; a blob that fails it is never linked into the repository.
   */
  async pushBlob(repo: string, digest: Sha256Digest, data: BlobBytes, options: { chunkBytes?: number; chunked?: boolean } = {}): Promise<"pushed" | "present"> {
    const scope = `repository:${checkRepo(repo)}:pull,push`;
    if (await this.hasBlob(repo, digest, "pull,push")) return "present";
    const size = data instanceof Uint8Array ? data.length : data.size;
    const read = data instanceof Uint8Array ? async (o: number, l: number) => data.subarray(o, o + l) : data.read;
    const what = `upload of ${repo}@${digest}`;
    const start = await this.transport.send("POST", `${repo}/blobs/uploads/`, { scope, headers: { "content-length": "0" } });
    if (start.status !== 202) await this.#refused(start, what);
    await start.body?.cancel().catch(() => undefined);
    let location = this.#location(start, what);
    if (options.chunked === true) {
      const chunk = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
      for (let off = 0; off < size; off += chunk) {
        const bytes = await read(off, Math.min(chunk, size - off));
        const res = await this.transport.send("PATCH", location, {
          scope,
          body: bytes,
          headers: { "content-type": "application/octet-stream", "content-range": `${off}-${off + bytes.length - 1}`, "content-length": String(bytes.length) },
        });
        if (res.status !== 202) await this.#refused(res, what);
        await res.body?.cancel().catch(() => undefined);
        location = this.#location(res, what);
      }
      location.searchParams.set("digest", digest);
      const done = await this.transport.send("PUT", location, { scope, headers: { "content-length": "0" } });
      if (done.status !== 201) await this.#refused(done, what);
      await done.body?.cancel().catch(() => undefined);
      return "pushed";
    }
    location.searchParams.set("digest", digest);
    const bytes = await read(0, size);
    const done = await this.transport.send("PUT", location, {
      scope,
      body: bytes,
      headers: { "content-type": "application/octet-stream", "content-length": String(size) },
    });
    if (done.status !== 201) await this.#refused(done, what);
    await done.body?.cancel().catch(() => undefined);
    return "pushed";
  }

  #location(res: Response, what: string): URL {
    const loc = res.headers.get("location");
    if (loc === null) throw new CairnError("REMOTE_REFUSED", `${this.transport.host} gave no upload location for ${what}`, { path: what });
    const url = new URL(loc, this.transport.base);
    // the upload URL must stay on the registry: it carries our credentials
    if (url.origin !== this.transport.base.origin)
      throw new CairnError("REMOTE_REFUSED", `${this.transport.host} sent an upload location on another origin (${url.host})`, { path: what });
    return url;
  }

  /** Pushes a manifest under a tag or its digest; the registry's digest must equal the bytes' digest. */
  async pushManifest(repo: string, reference: string, bytes: Uint8Array, mediaType: string): Promise<Sha256Digest> {
    const digest = sha256(bytes);
    const what = `manifest ${repo}:${reference}`;
    const res = await this.transport.send("PUT", `${checkRepo(repo)}/manifests/${checkReference(reference)}`, {
      scope: `repository:${repo}:pull,push`,
      body: bytes,
      headers: { "content-type": mediaType, "content-length": String(bytes.length) },
    });
    if (res.status !== 201) await this.#refused(res, what);
    await res.body?.cancel().catch(() => undefined);
    const served = res.headers.get("docker-content-digest");
    if (served !== null && served !== digest)
      throw new CairnError("DIGEST_MISMATCH", `${this.transport.host} stored ${what} under another digest`, { path: what, hint: `expected ${digest}` });
    return digest;
  }

  /**
   * Every tag of a repository, following `Link` pagination (at most
   * `maxTags`). With `missingOk`, a repository the registry does not know
   * (404 on the first page: nothing was pushed to it yet) has no tags.
   */
  async listTags(repo: string, maxTags = 100_000, options: { missingOk?: boolean } = {}): Promise<string[]> {
    const tags: string[] = [];
    const first = new URL(`${checkRepo(repo)}/tags/list?n=1000`, this.transport.base);
    // every page asked for in this listing: a Link back to one of them (itself, or a
    // cycle) would be followed forever, so it is refused naming the URL
    const seen = new Set<string>();
    const { maxPages } = this.transport.limits;
    for (let next = first; ; ) {
      seen.add(next.href);
      checkLimit(REMOTE_LIMITS.maxPages.name, seen.size, maxPages, `tags of ${repo}`, "count", remoteLimitHint("maxPages"));
      const res = await this.transport.send("GET", next, { scope: `repository:${repo}:pull` });
      if (res.status === 404 && options.missingOk === true && next === first) {
        await res.body?.cancel().catch(() => undefined);
        return tags;
      }
      if (res.status !== 200) await this.#refused(res, `tags of ${repo}`);
      const page = parseJsonBytes(await readBodyBounded(res, this.manifestBytes, "manifestBytes", `tags of ${repo}`), { source: `tags of ${repo}` });
      const list = isJsonObject(page) && Array.isArray(page.tags) ? page.tags : [];
      for (const t of list) if (typeof t === "string" && REFERENCE.test(t) && !t.startsWith("sha256:")) tags.push(t);
      if (tags.length > maxTags) throw new CairnError("LIMIT_EXCEEDED", `limit maxTags exceeded by ${repo} (${tags.length} > ${maxTags})`, { path: repo });
      const link = /<([^>]+)>\s*;\s*rel="?next"?/.exec(res.headers.get("link") ?? "");
      if (link === null) return tags;
      next = new URL(link[1]!, next);
      // the next page is the same endpoint of the same registry: a Link elsewhere could send the
      // listing (with the registry's token) to another origin, or make cairn read any other URL as tags
      if (next.origin !== this.transport.base.origin || next.pathname !== first.pathname)
        throw new CairnError("REMOTE_REFUSED", `tag list pagination of ${repo} leaves the tag list endpoint (${next.origin}${next.pathname})`, { path: repo });
      if (seen.has(next.href))
        throw new CairnError("REMOTE_REFUSED", `tag list of ${repo} links back to ${next.href}, a page seen before in this listing`, {
          path: repo,
          hint: "the registry's Link header loops; its tag list cannot be read to the end",
        });
    }
  }

  /**
   * The referrers of `digest` (manifests whose `subject` names it): the
   * referrers API, or, when the registry does not implement it (404), the
   * tag schema's index at `sha256-<hex>`. Optionally filtered by artifact type.
   */
  async referrers(
    repo: string,
    digest: Sha256Digest,
    artifactType?: string,
  ): Promise<{ readonly descriptors: readonly ReferrerDescriptor[]; readonly via: "api" | "tag" }> {
    const what = `referrers of ${repo}@${digest}`;
    const res = await this.transport.send("GET", `${checkRepo(repo)}/referrers/${digest}`, {
      scope: `repository:${repo}:pull`,
      headers: { accept: OCI_INDEX },
    });
    let index: Buffer;
    let via: "api" | "tag";
    if (res.status === 200 && mediaTypeOf(res) === OCI_INDEX) {
      index = await readBodyBounded(res, this.manifestBytes, "manifestBytes", what);
      via = "api";
    } else if (res.status === 404 || res.status === 200) {
      await res.body?.cancel().catch(() => undefined);
      via = "tag";
      const tag = referrersTag(digest);
      const head = await this.transport.send("GET", `${repo}/manifests/${tag}`, { scope: `repository:${repo}:pull`, headers: { accept: OCI_INDEX } });
      if (head.status === 404) {
        await head.body?.cancel().catch(() => undefined);
        return { descriptors: [], via };
      }
      if (head.status !== 200) await this.#refused(head, what);
      index = await readBodyBounded(head, this.manifestBytes, "manifestBytes", what);
    } else {
      return this.#refused(res, what);
    }
    const descriptors = parseReferrers(index, what).filter((d) => artifactType === undefined || d.artifactType === artifactType);
    return { descriptors, via };
  }
}

/** A referrer as the referrers index lists it. */
export interface ReferrerDescriptor extends RemoteDescriptor {
  readonly artifactType: string | undefined;
  readonly annotations: Readonly<Record<string, string>>;
}

/** The tag-schema fallback's tag for the referrers of `digest`. */
export function referrersTag(digest: Sha256Digest): string {
  return digest.replace(":", "-");
}

function parseReferrers(bytes: Buffer, what: string): ReferrerDescriptor[] {
  const doc = parseJsonBytes(bytes, { source: what });
  const manifests = isJsonObject(doc) ? doc.manifests : undefined;
  if (!Array.isArray(manifests)) throw new CairnError("REMOTE_REFUSED", `${what} is not an image index`, { path: what });
  return manifests.map((m, i) => {
    if (!isJsonObject(m)) throw new CairnError("REMOTE_REFUSED", `${what}: descriptor ${i} is not an object`, { path: `/manifests/${i}` });
    const o = m;
    const size = o.size;
    if (typeof o.mediaType !== "string" || typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) {
      throw new CairnError("REMOTE_REFUSED", `${what}: descriptor ${i} is malformed`, { path: `/manifests/${i}` });
    }
    const annotations: Record<string, string> = Object.create(null);
    if (isJsonObject(o.annotations)) for (const [k, v] of Object.entries(o.annotations)) if (typeof v === "string") annotations[k] = v;
    return {
      mediaType: o.mediaType,
      digest: parseSha256(o.digest, `/manifests/${i}/digest`),
      size,
      artifactType: typeof o.artifactType === "string" ? o.artifactType : undefined,
      annotations,
    };
  });
}
