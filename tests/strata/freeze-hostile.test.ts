/**
 * Hostile package indexes: every refusal has a typed code and a control that
 * freezes the same request from a good index. Includes the URL index, served
 * by a node http server on 127.0.0.1 (loopback http is the one plain-http
 * transport accepted).
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { appendFileSync, cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { freezeLock, lockfileToYaml, readRecords, recordsToModel, DEFAULT_FREEZE_LIMITS, type Lockfile } from "../../src/strata/index.ts";
import { sha256 } from "../../src/core/index.ts";
import { checkTransport } from "../../src/strata/freeze/index-source.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { tempDir } from "./fixtures.ts";
import { lockWith, sha256Hex, sha256sum, writeCondaChannel, writeCranRepo, writePipIndex, writeWheel } from "./freeze-fixtures.ts";

function goodIndex(): string {
  const root = tempDir("cairn-pypi-bad-");
  writePipIndex(root, { gamma: { wheels: [{ version: "1.0", requires: ["delta"] }] }, delta: { wheels: [{ version: "1.0" }] } });
  return root;
}

const lock = lockWith("  - manager: pip\n    packages: [{name: gamma}]\n");
const freeze = (index: string, l: Lockfile = lock, limits = DEFAULT_FREEZE_LIMITS) =>
  freezeLock(l, { indexes: { pip: index }, python: "3.12", cwd: "/", limits });
const WHEEL = "gamma-1.0-py3-none-any.whl";

test("control: the good index freezes", async () => {
  const index = goodIndex();
  const r = await freeze(index);
  assert.equal(r.lock.packages[0]!.frozen!.pins[1]!.sha256, sha256sum(join(index, "gamma", WHEEL)));
});

test("an archive whose bytes differ from the index's sha256 is refused naming both digests", async () => {
  const index = goodIndex();
  appendFileSync(join(index, "delta", "delta-1.0-py3-none-any.whl"), "x");
  const e = await assertCodeAsync(() => freeze(index), "DIGEST_MISMATCH");
  assert.match(e.message, /delta-1\.0-py3-none-any\.whl: the index says sha256:[0-9a-f]{64}, the archive is sha256:[0-9a-f]{64}/);
});

test("a malformed hash fragment is refused (DIGEST_INVALID)", async () => {
  const index = goodIndex();
  const page = join(index, "gamma", "index.html");
  writeFileSync(page, readFileSync(page, "utf8").replace(/#sha256=[0-9a-f]{64}/, "#sha256=abc"));
  await assertCodeAsync(() => freeze(index), "DIGEST_INVALID");
});

test("a link that leaves the index directory is refused (PATH_UNSAFE), by .. and by a symlinked directory", async () => {
  const index = goodIndex();
  const page = join(index, "gamma", "index.html");
  writeFileSync(page, `<a href="../../../../../../../../../../etc/hostname">${WHEEL}</a>\n`);
  const e = await assertCodeAsync(() => freeze(index), "PATH_UNSAFE");
  assert.match(e.message, /leaves the index directory/);
  writeFileSync(page, `<a href="a%2F..%2F..%2Fx.whl">${WHEEL}</a>\n`); // an encoded separator
  await assertCodeAsync(() => freeze(index), "PATH_UNSAFE");
  const index2 = goodIndex();
  // the project directory itself is a symlink to a directory elsewhere
  const moved = tempDir("cairn-moved-");
  cpSync(join(index2, "gamma"), join(moved, "gamma"), { recursive: true });
  rmSync(join(index2, "gamma"), { recursive: true });
  symlinkSync(join(moved, "gamma"), join(index2, "gamma"));
  await assertCodeAsync(() => freeze(index2), "PATH_UNSAFE");
});

test("an archive, a page or a wheel's METADATA over its limit is refused naming the limit", async () => {
  const index = goodIndex();
  const size = readFileSync(join(index, "gamma", WHEEL)).length;
  let e = await assertCodeAsync(() => freeze(index, lock, { ...DEFAULT_FREEZE_LIMITS, archive: size - 1 }), "LIMIT_EXCEEDED");
  assert.match(e.message, /freeze\.archive_max_bytes/);
  e = await assertCodeAsync(() => freeze(index, lock, { ...DEFAULT_FREEZE_LIMITS, page: 10 }), "LIMIT_EXCEEDED");
  assert.match(e.message, /freeze\.page_max_bytes/);
  e = await assertCodeAsync(() => freeze(index, lock, { ...DEFAULT_FREEZE_LIMITS, metadata: 20 }), "LIMIT_EXCEEDED");
  assert.match(e.message, /freeze\.metadata_max_bytes/);
  await freeze(index, lock, { ...DEFAULT_FREEZE_LIMITS, archive: size + 1000 }); // control: just large enough
});

test("a wheel that is not a zip, or whose METADATA names another project, is refused (REGISTRY_INVALID)", async () => {
  const index = goodIndex();
  const bogus = Buffer.from("not a zip at all");
  writeFileSync(join(index, "delta", "delta-1.0-py3-none-any.whl"), bogus);
  const page = join(index, "delta", "index.html");
  writeFileSync(page, readFileSync(page, "utf8").replace(/#sha256=[0-9a-f]{64}/, `#sha256=${sha256Hex(bogus)}`));
  await assertCodeAsync(() => freeze(index), "REGISTRY_INVALID");
  // a wheel of another project served under gamma's name: it holds no gamma-VERSION.dist-info/METADATA
  const other = goodIndex();
  const stage = tempDir("cairn-other-");
  const f = writeWheel(stage, "epsilon", { version: "1.0" });
  const bytes = readFileSync(join(stage, f));
  writeFileSync(join(other, "gamma", WHEEL), bytes);
  const gpage = join(other, "gamma", "index.html");
  writeFileSync(gpage, readFileSync(gpage, "utf8").replace(/#sha256=[0-9a-f]{64}/, `#sha256=${sha256Hex(bytes)}`));
  const e = await assertCodeAsync(() => freeze(other), "REGISTRY_INVALID");
  assert.match(e.message, /no gamma-VERSION\.dist-info\/METADATA/);
});

test("an index URL must be https, or http to a loopback address", async () => {
  await assertCodeAsync(() => freeze("http://example.com/simple/"), "TRUST_REFUSED");
  await assertCodeAsync(() => freeze("ftp://127.0.0.1/simple/"), "TRUST_REFUSED");
});

// issue 31, case 19a: "plain http to loopback only" must hold for hosts that only
// look like loopback. Each of these passed once the pattern's end anchor was
// removed (127.0.0.1.nip.io resolves to 127.0.0.1 on the internet, but any
// name under a foreign domain can resolve anywhere); example.com alone did not
// tell. The controls are the spellings the URL parser makes loopback.
const LOOKALIKES = [
  "http://127.0.0.1.nip.io/simple/",
  "http://127.0.0.1.evil.com:8080/simple/",
  "http://127.0.0.1%2eevil.com/simple/",
  "http://localhost.evil.com/simple/",
  "http://localhost.:8080/simple/",
  "http://127.0.0.1@evil.com/simple/",
  "http://localhost:80@evil.com/simple/",
  "http://[::ffff:7f00:1].evil/simple/",
  "http://[::1].evil/simple/",
  "http://evil.com/127.0.0.1/simple/",
  "http://evil.com/?host=localhost",
];
const LOOPBACK = [
  "http://127.0.0.1/simple/",
  "http://127.1/simple/",
  "http://0x7f000001/simple/",
  "http://localhost:8080/simple/",
  "http://[::1]:8080/simple/",
  "http://127.9.9.9/",
  "http://evil@127.0.0.1/simple/",
];

test("plain http only to loopback: look-alike hosts are refused (checkTransport, which also holds each redirect, and freeze given the URL); loopback spellings pass (control)", async () => {
  for (const u of LOOKALIKES) {
    let url: URL | undefined;
    try {
      url = new URL(u);
    } catch {
      url = undefined; // not even a URL: freeze refuses it below
    }
    if (url !== undefined) assertCode(() => checkTransport(url!, u), "TRUST_REFUSED");
    const e = await assertCodeAsync(() => freeze(u), url === undefined ? "USAGE" : "TRUST_REFUSED");
    assert.ok(e.code !== "USAGE" || url === undefined, u);
  }
  for (const u of LOOPBACK) checkTransport(new URL(u), u);
});

const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
});

/** Serves `root` on 127.0.0.1 (a directory URL serves its index.html); `redirect` answers that path with a 302 to its target. */
async function serve(root: string, redirect?: { from: string; to: string }): Promise<string> {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    if (redirect !== undefined && path === redirect.from) {
      res.writeHead(302, { location: redirect.to });
      res.end();
      return;
    }
    try {
      const body = readFileSync(join(root, path.endsWith("/") ? `${path}index.html` : path));
      res.writeHead(200, { "content-length": body.length });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end();
    }
  });
  servers.push(server);
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test("a URL index on 127.0.0.1 freezes the same pins as the directory; the pin records the URL; a redirect off loopback http is refused", async () => {
  const index = goodIndex();
  const url = await serve(index);
  const fromUrl = (await freeze(`${url}/`)).lock.packages[0]!.frozen!;
  const fromDir = (await freeze(index)).lock.packages[0]!.frozen!;
  assert.deepEqual(
    fromUrl.pins.map((p) => [p.name, p.sha256]),
    fromDir.pins.map((p) => [p.name, p.sha256]),
  );
  assert.equal(fromUrl.pins[0]!.url, `${url}/delta/delta-1.0-py3-none-any.whl`);
  const redirecting = await serve(index, { from: `/gamma/${WHEEL}`, to: `http://example.com/${WHEEL}` });
  await assertCodeAsync(() => freeze(`${redirecting}/`), "TRUST_REFUSED");
  mkdirSync(join(index, "files"));
  cpSync(join(index, "gamma", WHEEL), join(index, "files", WHEEL));
  const local = await serve(index, { from: `/gamma/${WHEEL}`, to: `/files/${WHEEL}` });
  await freeze(`${local}/`); // control: a redirect within loopback is followed
});

test("conda: a package whose bytes differ from repodata's sha256 is refused; a malformed record is REGISTRY_INVALID", async () => {
  const channel = tempDir("cairn-conda-bad-");
  writeCondaChannel(channel, [{ name: "tzdata", version: "2024a" }]);
  const l = lockWith("  - manager: conda\n    packages: [{name: tzdata}]\n");
  await freezeLock(l, { indexes: { conda: channel }, python: "3.12", cwd: "/" }); // control
  appendFileSync(join(channel, "linux-64", "tzdata-2024a-h0_0.conda"), "x");
  await assertCodeAsync(() => freezeLock(l, { indexes: { conda: channel }, python: "3.12", cwd: "/" }), "DIGEST_MISMATCH");
  const rd = join(channel, "linux-64", "repodata.json");
  writeFileSync(rd, readFileSync(rd, "utf8").replace('"build_number": 0', '"build_number": -1'));
  await assertCodeAsync(() => freezeLock(l, { indexes: { conda: channel }, python: "3.12", cwd: "/" }), "REGISTRY_INVALID");
  const empty = tempDir("cairn-conda-none-");
  mkdirSync(join(empty, "x"));
  await assertCodeAsync(() => freezeLock(l, { indexes: { conda: empty }, python: "3.12", cwd: "/" }), "REGISTRY_INVALID");
});

test("cran: a tarball whose MD5 differs from PACKAGES is refused", async () => {
  const repo = tempDir("cairn-cran-bad-");
  writeCranRepo(repo, [{ name: "rlang", version: "1.1.3" }]);
  const l = lockWith("  - manager: cran\n    packages: [{name: rlang}]\n");
  await freezeLock(l, { indexes: { cran: repo }, r: "4.3", cwd: "/" }); // control
  appendFileSync(join(repo, "src", "contrib", "rlang_1.1.3.tar.gz"), "x");
  await assertCodeAsync(() => freezeLock(l, { indexes: { cran: repo }, r: "4.3", cwd: "/" }), "DIGEST_MISMATCH");
});

test("the records hold a lockfile's pins to one rule set: well-formed digests, the manager's kinds, sorted unique names", async () => {
  const frozen = (await freeze(goodIndex())).lock;
  const bytes = Buffer.from(lockfileToYaml(frozen));
  const model = recordsToModel(frozen.records, sha256(bytes)) as { packages: { packages: { name: string }[]; frozen: { pins: Record<string, unknown>[] } }[] };
  const read = (f: (m: typeof model) => void) => {
    const m = structuredClone(model);
    f(m);
    return readRecords(JSON.parse(JSON.stringify(m)), frozen.spec, sha256(bytes), "records");
  };
  read(() => undefined); // control
  assertCode(() => read((m) => void (m.packages[0]!.frozen.pins[0]!.sha256 = "sha256:abc")), "DIGEST_INVALID");
  assertCode(() => read((m) => void (m.packages[0]!.frozen.pins[0]!.kind = "conda")), "MODEL_VALUE");
  assertCode(() => read((m) => m.packages[0]!.frozen.pins.reverse()), "LOCK_INVALID");
  assertCode(() => read((m) => void (m.packages[0]!.frozen.pins[0]!.extra = 1)), "MODEL_UNKNOWN_FIELD");
  // a pin the lockfile does not carry (another archive) is refused: records never override the lockfile
  assertCode(() => read((m) => void (m.packages[0]!.frozen.pins[0]!.sha256 = `sha256:${"0".repeat(64)}`)), "LOCK_INVALID");
  // a request reads with the profile's rule: a bad package name is refused as the profile refuses it
  assertCode(() => read((m) => void (m.packages[0]!.packages[0]!.name = "../x")), "MODEL_VALUE");
});

// issue 31, case 3: a URL index is read under cairn's remote time bounds, as a
// registry is: a page that trickles, stalls, or never gets headers ends as
// REMOTE_TIMEOUT naming the limit (small limits here; the defaults are minutes),
// and a connection cut mid-page is IO_ERROR, not INTERNAL.
test("a URL index that trickles, stalls or never answers ends as REMOTE_TIMEOUT; a cut page is IO_ERROR; the same index served whole freezes (control)", async () => {
  const index = goodIndex();
  let mode: "trickle" | "stall" | "silent" | "cut" | "whole" = "whole";
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(index, path.endsWith("/") ? `${path}index.html` : path));
    } catch {
      return void res.writeHead(404).end();
    }
    if (mode === "whole") return void res.writeHead(200, { "content-length": bytes.length }).end(bytes);
    if (mode === "silent") return;
    res.writeHead(200, { "content-length": bytes.length });
    if (mode === "stall") return void res.write(bytes.subarray(0, 10));
    if (mode === "cut") {
      res.write(bytes.subarray(0, 10));
      return void req.socket.destroy();
    }
    let off = 0;
    const step = (): void => {
      if (res.destroyed || off >= bytes.length) return void res.end();
      res.write(bytes.subarray(off, ++off));
      setTimeout(step, 20);
    };
    step();
  });
  servers.push(server);
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  // Each case gets its own bound tight (1 s) and the others loose (10 s), so only that bound can trip
  // first: with all four at 400 ms, a loaded host (the test's server runs in this process) tripped
  // whichever timer came due first, the headers bound on a trickle, the rate window on a stall.
  const loose = { headersMs: 10_000, idleMs: 10_000, minRate: 2048, rateWindowMs: 10_000 };
  const bounded = (r: typeof loose = loose) => freezeLock(lock, { indexes: { pip: url }, python: "3.12", cwd: "/", remote: r });
  for (const [m, limit, r] of [
    ["trickle", /remote\.min-rate/, { ...loose, rateWindowMs: 1000 }],
    ["stall", /remote\.idle-ms/, { ...loose, idleMs: 1000 }],
    ["silent", /remote\.headers-ms/, { ...loose, headersMs: 1000 }],
  ] as const) {
    mode = m;
    const e = await assertCodeAsync(() => bounded(r), "REMOTE_TIMEOUT");
    assert.match(e.message, limit);
  }
  mode = "cut";
  await assertCodeAsync(bounded, "IO_ERROR");
  mode = "whole";
  await bounded();
});
