/**
 * `oci-archive` tarballs (what `skopeo copy … oci-archive:FILE` and
 * `podman save --format oci-archive` write): a tar of an OCI image layout.
 * The tar is read once, as a stream; only `oci-layout`, `index.json` and
 * `blobs/sha256/<64 hex>` regular files (and their directories) are
 * accepted, anything else (links, devices, other names, `..`) is refused
 * by name. Each blob streams into the caller's cache staging and is adopted
 * only when its sha256 matches its name; nothing is extracted to a path
 * the archive chooses.
 *
 * Selection then runs on the cached blobs exactly as a registry pull does
 * (`pullImage`, with a client that has no network: a blob the archive lacks
 * is OCI_MISSING_BLOB), so an index selects linux/amd64, and a single
 * descriptor without a platform (skopeo writes none) is accepted when its
 * config says linux/amd64.
 */
import { closeSync, createReadStream, fstatSync } from "node:fs";
import { rm } from "node:fs/promises";
import tarStream from "tar-stream";
import {
  CairnError,
  Sha256Hasher,
  ioError,
  isJsonObject,
  openForRead,
  parseJsonBytes,
  parseSha256,
  type JsonObject,
  type Sha256Digest,
} from "../core/index.ts";
import { checkDescriptor, type Descriptor } from "./documents.ts";
import { stageBlob, type BlobCache } from "./registry/blob-cache.ts";
import { pullImage, type PulledImage } from "./registry/pull-image.ts";
import { RegistryClient } from "./registry/registry-client.ts";
import { validateOciDocument } from "./schemas.ts";

/** `index.json` and `oci-layout` larger than this are refused (limit `ociJsonBytes`). */
const MAX_JSON = 4 * 1024 * 1024;
/** Members beyond this are refused (limit `archiveMembers`). */
const MAX_MEMBERS = 100_000;

const BLOB = /^blobs\/sha256\/([0-9a-f]{64})$/;
const DIRS = new Set(["blobs", "blobs/sha256", ""]);

function refuse(path: string, why: string): never {
  throw new CairnError("OCI_INVALID", `oci-archive member ${JSON.stringify(path.slice(0, 200))} ${why}`, {
    path,
    hint: "an oci-archive holds only oci-layout, index.json and blobs/sha256/<digest>",
  });
}

/** A client that never touches a network: whatever the archive lacks is missing. */
function offlineClient(archive: string): RegistryClient {
  return new RegistryClient({
    host: "oci-archive.invalid",
    fetch: async (input) => {
      const digest = /sha256:[0-9a-f]{64}/.exec(String(input instanceof Request ? input.url : input))?.[0] ?? "";
      throw new CairnError("OCI_MISSING_BLOB", `blob ${digest} is not in ${archive}`, { path: digest });
    },
  });
}

/**
 * Opens the archive the user named: a regular file, else a typed refusal
 * naming the path (nothing there: IO_ERROR with ENOENT; a directory, FIFO,
 * device or symlink: SOURCE_NOT_REGULAR). Without this a missing path or a
 * directory surfaced as INTERNAL from inside the tar reader.
 */
function openArchive(archive: string): number {
  let fd: number;
  try {
    fd = openForRead(archive);
  } catch (cause) {
    const errno = (cause as { code?: string }).code;
    if (errno === "ELOOP")
      throw new CairnError("SOURCE_NOT_REGULAR", `oci-archive ${archive} is a symlink`, { path: archive, hint: "name the archive file itself" });
    throw ioError(archive, cause);
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    throw new CairnError("SOURCE_NOT_REGULAR", `oci-archive ${archive} is ${st.isDirectory() ? "a directory" : "not a regular file"}`, {
      path: archive,
      hint: st.isDirectory() ? "an oci-archive is a tar file; a layout directory is named in a workload spec's oci.layout" : "name a tar file",
    });
  }
  return fd;
}

/** Reads the archive's members into `cache`; returns its parsed `index.json`. */
async function importMembers(archive: string, cache: BlobCache): Promise<JsonObject> {
  const extract = tarStream.extract();
  const input = createReadStream("", { fd: openArchive(archive) });
  input.on("error", (e) => extract.destroy(e));
  input.pipe(extract);
  try {
    return await readMembers(archive, extract, cache);
  } catch (e) {
    if (e instanceof CairnError) throw e;
    // the tar reader's own refusal (a header that is not tar, a truncated member) or a read error
    if ((e as { code?: string } | null)?.code !== undefined && (e as { syscall?: string }).syscall !== undefined) throw ioError(archive, e);
    throw new CairnError("TAR_INVALID", `oci-archive ${archive} is not a readable tar archive`, {
      path: archive,
      cause: e,
      hint: "an oci-archive is an uncompressed tar of an OCI layout (skopeo copy … oci-archive:FILE); decompress a .tar.gz first",
    });
  } finally {
    input.destroy();
    extract.destroy();
  }
}

async function readMembers(archive: string, extract: tarStream.Extract, cache: BlobCache): Promise<JsonObject> {
  let index: JsonObject | undefined;
  let layout = false;
  let members = 0;
  for await (const entry of extract) {
    const name = entry.header.name.replace(/^\.\//, "").replace(/\/$/, "");
    if (++members > MAX_MEMBERS) throw new CairnError("LIMIT_EXCEEDED", `limit archiveMembers exceeded (${MAX_MEMBERS})`, { path: archive });
    if (entry.header.type === "directory") {
      if (!DIRS.has(name)) refuse(name, "is a directory cairn does not expect");
      entry.resume();
      continue;
    }
    if (entry.header.type !== "file") refuse(name, `is a ${entry.header.type}, not a regular file`);
    const size = entry.header.size ?? 0;
    const m = BLOB.exec(name);
    if (name === "oci-layout" || name === "index.json") {
      if (size > MAX_JSON) throw new CairnError("LIMIT_EXCEEDED", `limit ociJsonBytes exceeded by ${name}`, { path: name });
      const parts: Buffer[] = [];
      for await (const c of entry) parts.push(c as Buffer);
      const doc = parseJsonBytes(Buffer.concat(parts), { source: name });
      validateOciDocument(name === "index.json" ? "index" : "layout", doc, name);
      if (!isJsonObject(doc)) refuse(name, "is not a JSON object");
      if (name === "index.json") index = doc;
      else layout = true;
    } else if (m !== null) {
      const digest = parseSha256(`sha256:${m[1]}`, name);
      if (cache.has(digest, size)) {
        entry.resume();
        continue;
      }
      const hasher = new Sha256Hasher();
      const staged = await stageBlob(cache, async (write) => {
        for await (const c of entry) {
          hasher.update(c as Buffer);
          await write(c as Buffer);
        }
      });
      if (hasher.digest() !== digest) {
        await rm(staged, { force: true });
        throw new CairnError("DIGEST_MISMATCH", `oci-archive blob ${name} does not match its name`, { path: name });
      }
      cache.adopt(staged, digest, size);
    } else {
      refuse(name, "is not part of an OCI layout");
    }
  }
  if (!layout) throw new CairnError("OCI_INVALID", `${archive} has no oci-layout`, { path: archive });
  if (index === undefined) throw new CairnError("OCI_INVALID", `${archive} has no index.json`, { path: archive });
  return index;
}

/** The one image of an archive's `index.json`: the only descriptor, or the one declaring linux/amd64. */
function selectTop(index: JsonObject): Descriptor {
  const manifests = Array.isArray(index.manifests) ? index.manifests : [];
  if (manifests.length === 1) return checkDescriptor(manifests[0], "/manifests/0");
  const amd = manifests
    .map((m, i) => ({ m, i }))
    .filter(({ m }) => isJsonObject(m) && isJsonObject(m.platform) && m.platform.os === "linux" && m.platform.architecture === "amd64");
  if (amd.length !== 1) {
    throw new CairnError("OCI_SELECTION", `index.json lists ${manifests.length} images and ${amd.length} for linux/amd64`, {
      path: "/manifests",
      hint: "the archive must hold one image, or one linux/amd64 image",
    });
  }
  return checkDescriptor(amd[0]!.m, `/manifests/${amd[0]!.i}`);
}

/** Imports an oci-archive into `cache` and selects its image as a pull would. */
export async function importOciArchive(archive: string, cache: BlobCache): Promise<PulledImage> {
  const index = await importMembers(archive, cache);
  const top = selectTop(index);
  return pullImage(
    offlineClient(archive),
    { registry: "oci-archive.invalid", repository: "archive", tag: undefined, digest: top.digest as Sha256Digest },
    cache,
  );
}
