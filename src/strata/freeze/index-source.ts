/**
 * Where `cairn freeze` reads package indexes from: a local directory (a PEP
 * 503 tree, a conda channel, a CRAN repository written to disk) or a URL.
 * Everything an index says is hostile, so:
 * - a link in a local index resolves inside the index directory or is refused
 *   (PATH_UNSAFE): `href="../../etc/passwd"` or a symlinked directory pointing
 *   out must not make freeze read (and pin) a file of the host;
 * - a URL is https, or plain http only to a loopback address (a test server,
 *   a local mirror): anything else is TRUST_REFUSED, because an archive's
 *   hash is taken from the same page as its link, and a page read over plain
 *   http from elsewhere could be rewritten on the way; redirects are followed
 *   by hand and each hop is held to the same rule; a URL index never links
 *   to `file:`;
 * - every read is bounded by a named limit (LIMIT_EXCEEDED names it), checked
 *   against Content-Length first and against the bytes as they arrive.
 */
import { closeSync, fstatSync, realpathSync, statSync } from "node:fs";
import { dirname, resolve as resolvePath, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { CairnError, checkLimit, ioError, openForRead, readFileBounded, readFullyAt, type RemoteLimits } from "../../core/index.ts";
import { boundedRemoteFetch } from "../../oci/index.ts";

/** The named bounds of `cairn freeze`, in bytes. */
export interface FreezeLimits {
  /** freeze.page_max_bytes: one PEP 503 project page, or a CRAN PACKAGES file */
  readonly page: number;
  /** freeze.repodata_max_bytes: one conda repodata.json */
  readonly repodata: number;
  /** freeze.archive_max_bytes: one wheel, sdist, conda package or CRAN tarball */
  readonly archive: number;
  /** freeze.metadata_max_bytes: one METADATA file, inside a wheel or beside it (PEP 658) */
  readonly metadata: number;
}

export const DEFAULT_FREEZE_LIMITS: FreezeLimits = {
  page: 32 * 1024 * 1024,
  repodata: 512 * 1024 * 1024,
  archive: 2 * 1024 * 1024 * 1024 - 1,
  metadata: 4 * 1024 * 1024,
};

export const FREEZE_LIMIT_NAMES: Readonly<Record<keyof FreezeLimits, string>> = {
  page: "freeze.page_max_bytes",
  repodata: "freeze.repodata_max_bytes",
  archive: "freeze.archive_max_bytes",
  metadata: "freeze.metadata_max_bytes",
};

const MAX_REDIRECTS = 5;
const CHUNK_BYTES = 1024 * 1024;

/** A local index file in chunks: opened without following a symlink (PATH_UNSAFE), a regular file within `max` bytes. */
function streamLocal(file: string, max: number, name: string, each: (chunk: Buffer) => void): void {
  let fd: number;
  try {
    fd = openForRead(file);
  } catch (cause) {
    if ((cause as { code?: string }).code === "ELOOP")
      throw new CairnError("PATH_UNSAFE", `${file} is a symlink`, { path: file, hint: "an index holds regular files only, never symlinks" });
    throw ioError(file, cause);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile())
      throw new CairnError("PATH_UNSAFE", `${file} is not a regular file`, { path: file, hint: "an index holds regular files only, never symlinks" });
    checkLimit(name, st.size, max, file, "bytes");
    for (let off = 0; ; ) {
      const buf = Buffer.allocUnsafe(CHUNK_BYTES);
      const n = readFullyAt(fd, buf, off);
      if (n === 0) break;
      off += n;
      checkLimit(name, off, max, file, "bytes"); // grew while read
      each(buf.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host);
}

/** Refuses a URL that is neither https nor http to loopback (TRUST_REFUSED), and any other scheme. */
export function checkTransport(url: URL, path: string): void {
  if (url.protocol === "https:") return;
  if (url.protocol === "http:" && isLoopback(url.hostname)) return;
  throw new CairnError("TRUST_REFUSED", `${url.protocol}//${url.host} is not https (plain http is accepted only from a loopback address)`, {
    path,
    hint: "use an https index URL, or a local directory index",
  });
}

export class IndexSource {
  private constructor(
    /** The index root as a URL ending in "/" (file: for a directory). */
    readonly root: URL,
    /** For a directory index, its real path (links must resolve inside it). */
    private readonly dir: string | undefined,
    readonly limits: FreezeLimits,
    /** A URL index is read under cairn's remote time bounds (a server that stalls or trickles ends as REMOTE_TIMEOUT). */
    private readonly fetch: (url: URL, init?: RequestInit) => Promise<Response> = boundedRemoteFetch(),
  ) {}

  /** Opens `unsafeRoot`: an http(s) URL, a file: URL or a directory path (relative to `cwd`). */
  static open(unsafeRoot: string, cwd: string, limits: FreezeLimits = DEFAULT_FREEZE_LIMITS, remote: Partial<RemoteLimits> = {}): IndexSource {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(unsafeRoot) && !unsafeRoot.startsWith("file:")) {
      let url: URL;
      try {
        url = new URL(unsafeRoot);
      } catch {
        throw new CairnError("USAGE", `${JSON.stringify(unsafeRoot.slice(0, 200))} is not a URL`, { path: unsafeRoot });
      }
      checkTransport(url, unsafeRoot);
      if (!url.pathname.endsWith("/")) url.pathname += "/";
      url.hash = "";
      url.search = "";
      return new IndexSource(url, undefined, limits, boundedRemoteFetch(remote));
    }
    const path = unsafeRoot.startsWith("file:") ? fileURLToPath(unsafeRoot) : resolvePath(cwd, unsafeRoot);
    let real: string;
    try {
      real = realpathSync(path);
      if (!statSync(real).isDirectory()) throw new Error("not a directory");
    } catch {
      throw new CairnError("IO_ERROR", `index ${path} is not a directory`, { path, hint: "pass a local index directory or an https URL" });
    }
    const url = pathToFileURL(real + sep);
    return new IndexSource(url, real, limits);
  }

  /** The root as shown in a lockfile: the URL, or the directory's file: URL. */
  get location(): string {
    return this.root.href;
  }

  /**
   * Resolves a link found at `base` (`path` names where, for errors). A local
   * index's link must stay inside the index directory; a URL index's link must
   * pass the transport rule.
   */
  resolve(unsafeHref: string, base: URL, path: string): URL {
    let url: URL;
    try {
      url = new URL(unsafeHref, base);
    } catch {
      throw new CairnError("REGISTRY_INVALID", `link ${JSON.stringify(unsafeHref.slice(0, 200))} is not a URL`, { path });
    }
    url.hash = "";
    if (this.dir !== undefined) {
      // The attack: a link that walks out of the index (../, an absolute path, another scheme) to pin a host file.
      if (url.protocol !== "file:" || !decodeURIComponent(url.pathname).startsWith(decodeURIComponent(this.root.pathname))) {
        throw new CairnError("PATH_UNSAFE", `link ${JSON.stringify(unsafeHref.slice(0, 200))} leaves the index directory ${this.dir}`, {
          path,
          hint: "a local index links only to files inside its own directory",
        });
      }
      return url;
    }
    if (url.protocol === "file:") throw new CairnError("PATH_UNSAFE", `a URL index links to a local file (${url.href.slice(0, 200)})`, { path });
    checkTransport(url, path);
    return url;
  }

  /** Reads `url`, at most `limit` bytes; undefined when nothing is there (404, ENOENT). */
  async read(url: URL, limit: keyof FreezeLimits): Promise<Buffer | undefined> {
    const max = this.limits[limit];
    const name = FREEZE_LIMIT_NAMES[limit];
    if (this.dir !== undefined) {
      const file = this.localFile(url);
      return file === undefined
        ? undefined
        : readFileBounded(file, max, name, { notRegular: "PATH_UNSAFE", notRegularHint: "an index holds regular files only, never symlinks" });
    }
    const chunks: Buffer[] = [];
    return (await this.readRemote(url, max, name, (c) => void chunks.push(c))) ? Buffer.concat(chunks) : undefined;
  }

  /**
   * Reads `url` like `read`, but hands its bytes to `each` in chunks as they
   * come instead of gathering them (an export copying a pinned archive to a
   * file); false when nothing is there.
   */
  async stream(url: URL, limit: keyof FreezeLimits, each: (chunk: Buffer) => void): Promise<boolean> {
    const max = this.limits[limit];
    const name = FREEZE_LIMIT_NAMES[limit];
    if (this.dir === undefined) return this.readRemote(url, max, name, each);
    const file = this.localFile(url);
    if (file === undefined) return false;
    streamLocal(file, max, name, each);
    return true;
  }

  /** The index file `url` names, checked to be inside the index; undefined when nothing is there. */
  private localFile(url: URL): string | undefined {
    let file: string;
    try {
      file = fileURLToPath(url);
    } catch {
      // an encoded "/" or NUL in a link: not a file name of the index
      throw new CairnError("PATH_UNSAFE", `link ${url.href.slice(0, 200)} is not a file path inside the index`, { path: url.href });
    }
    if (url.pathname.endsWith("/")) file = `${file}index.html`;
    let parent: string;
    try {
      parent = realpathSync(dirname(file));
    } catch {
      return undefined;
    }
    // A directory inside the index may be a symlink to elsewhere: hold its real path to the index too.
    if (parent !== this.dir && !parent.startsWith(this.dir! + sep)) {
      throw new CairnError("PATH_UNSAFE", `${file} resolves outside the index directory ${this.dir}`, { path: file });
    }
    try {
      statSync(file);
    } catch {
      return undefined;
    }
    return file;
  }

  private async readRemote(start: URL, max: number, name: string, each: (chunk: Buffer) => void): Promise<boolean> {
    let url = start;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      let res: Response;
      try {
        res = await this.fetch(url, { redirect: "manual" });
      } catch (e) {
        if (e instanceof CairnError) throw e; // a remote bound (REMOTE_TIMEOUT) names itself
        throw new CairnError("IO_ERROR", `cannot read ${url.href}`, { path: url.href, cause: e });
      }
      if (res.status >= 300 && res.status < 400) {
        await res.body?.cancel();
        const to = res.headers.get("location");
        if (to === null) throw new CairnError("REGISTRY_INVALID", `${url.href} redirects nowhere`, { path: url.href });
        url = this.resolve(to, url, url.href);
        continue;
      }
      if (res.status === 404 || res.status === 410) {
        await res.body?.cancel();
        return false;
      }
      if (res.status !== 200) {
        await res.body?.cancel();
        throw new CairnError("IO_ERROR", `${url.href} answered ${res.status}`, { path: url.href });
      }
      const declared = Number(res.headers.get("content-length") ?? "0");
      if (declared > max) {
        await res.body?.cancel();
        checkLimit(name, declared, max, url.href, "bytes");
      }
      let total = 0;
      const reader = res.body?.getReader();
      for (;;) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = reader ? await reader.read() : { done: true as const, value: undefined };
        } catch (e) {
          if (e instanceof CairnError) throw e; // a remote bound names itself
          throw new CairnError("IO_ERROR", `the connection broke while reading ${url.href}`, { path: url.href, cause: e });
        }
        if (next.done) break;
        total += next.value.length;
        if (total > max) {
          await reader!.cancel().catch(() => undefined);
          checkLimit(name, total, max, url.href, "bytes");
        }
        each(Buffer.from(next.value));
      }
      return true;
    }
    throw new CairnError("LIMIT_EXCEEDED", `limit freeze.max_redirects exceeded (more than ${MAX_REDIRECTS} redirects from ${start.href})`, {
      path: start.href,
    });
  }
}
