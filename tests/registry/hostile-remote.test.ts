// A registry cannot hang cairn (issue 31, cases 2 and 3): a tag list whose
// `Link` points back to itself or into a cycle, an endless chain of pages, a
// body that trickles or stalls, headers that never come, a TLS handshake that
// never finishes, and lengths that lie all end as typed errors naming the
// limit or the URL. The server is scripted answer by answer
// (fixtures/hostile-server.ts); every refusal has a control that passes, and
// the tests set small limits and wait on the server's events, never on the
// clock at the defaults.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseSha256 } from "../../src/core/index.ts";
import { RegistryClient } from "../../src/oci/index.ts";
import { OciLayerRegistry } from "../../src/strata/registry-oci.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { runCli } from "../helpers/cli.ts";
import { HostileServer, SilentTcpServer, json } from "./fixtures/hostile-server.ts";

describe("tag list pagination (case 2)", () => {
  let srv: HostileServer;
  let work: string;
  before(async () => {
    srv = await new HostileServer().start();
    work = mkdtempSync(join(tmpdir(), "cairn-hostile-remote-"));
  });
  after(async () => {
    await srv.stop();
    rmSync(work, { recursive: true, force: true });
  });
  const client = (limits = {}) => new RegistryClient({ host: srv.host, plainHttp: true, limits });
  const tagsPath = "/v2/layers/tags/list";

  test("control: distinct pages are followed to the end", async () => {
    srv.handle = (req, res) => {
      const last = new URL(req.url!, "http://x").searchParams.get("last");
      const page = last === null ? 0 : Number(last.slice(1));
      if (page === 3) return json(res, { name: "layers", tags: ["t3"] });
      json(res, { name: "layers", tags: [`t${page}`] }, { link: `<${tagsPath}?n=1&last=t${page + 1}>; rel="next"` });
    };
    srv.seen.length = 0;
    assert.deepEqual(await client().listTags("layers"), ["t0", "t1", "t2", "t3"]);
    assert.equal(srv.seen.length, 4);
  });

  test("a Link that points back to the page it is on is refused naming the URL", async () => {
    srv.handle = (_q, res) => json(res, { name: "layers", tags: ["a"] }, { link: `<${tagsPath}?n=1000>; rel="next"` });
    srv.seen.length = 0;
    const e = await assertCodeAsync(() => client().listTags("layers"), "REMOTE_REFUSED");
    assert.match(e.message, /tags\/list\?n=1000/);
    assert.equal(srv.seen.length, 1, "the loop is seen before the same page is asked again");
  });

  test("a cycle of two pages is refused", async () => {
    srv.handle = (req, res) => {
      const onB = req.url!.includes("last=b");
      json(res, { name: "layers", tags: [onB ? "b" : "a"] }, { link: `<${tagsPath}?n=1&last=${onB ? "a" : "b"}>; rel="next"` });
    };
    srv.seen.length = 0;
    await assertCodeAsync(() => client().listTags("layers"), "REMOTE_REFUSED");
    assert.equal(srv.seen.length, 3, "A, B, then A again is recognised without asking for it");
  });

  test("an endless chain of new pages stops at remote.max-pages", async () => {
    let k = 0;
    srv.handle = (_q, res) => json(res, { name: "layers", tags: [] }, { link: `<${tagsPath}?n=1&last=p${++k}>; rel="next"` });
    srv.seen.length = 0;
    const e = await assertCodeAsync(() => client({ maxPages: 5 }).listTags("layers"), "LIMIT_EXCEEDED");
    assert.match(e.message, /remote\.max-pages/);
    assert.equal(srv.seen.length, 5);
  });

  test("a Link to another origin or another endpoint is refused before it is followed", async () => {
    for (const target of [`http://127.0.0.2:${srv.port}${tagsPath}?last=x`, `http://127.0.0.1:1${tagsPath}?last=x`, "/v2/layers/blobs/sha256:00?x"]) {
      srv.handle = (_q, res) => json(res, { name: "layers", tags: ["a"] }, { link: `<${target}>; rel="next"` });
      srv.seen.length = 0;
      await assertCodeAsync(() => client().listTags("layers"), "REMOTE_REFUSED");
      assert.equal(srv.seen.length, 1, target);
    }
  });

  test("remote.max-requests bounds one client's requests", async () => {
    let k = 0;
    srv.handle = (_q, res) => json(res, { name: "layers", tags: [] }, { link: `<${tagsPath}?n=1&last=p${++k}>; rel="next"` });
    srv.seen.length = 0;
    const e = await assertCodeAsync(() => client({ maxRequests: 3 }).listTags("layers"), "LIMIT_EXCEEDED");
    assert.match(e.message, /remote\.max-requests/);
    assert.equal(srv.seen.length, 3);
  });

  test("many tags: a repository listing more than registry.max_tags (10,000) fails to open as LIMIT_EXCEEDED after one page; 10,000 open (control)", async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => `image-${i}`);
    const open = () =>
      OciLayerRegistry.open(`oci://${srv.host}/layers`, { remote: { plainHttp: true, env: { HOME: work }, cwd: work }, storeDir: join(work, "store") });
    srv.handle = (_q, res) => json(res, { name: "layers", tags: many(10_001) });
    srv.seen.length = 0;
    const e = await assertCodeAsync(open, "LIMIT_EXCEEDED");
    assert.match(e.message, /maxTags/);
    assert.equal(srv.seen.length, 1);
    srv.handle = (_q, res) => json(res, { name: "layers", tags: many(10_000) }); // none cairn-shaped: nothing more is read
    await open();
  });

  test("an oci:// layer registry whose tag list links to itself fails to open (search, resolve, lock verify and run all open it)", async () => {
    srv.handle = (_q, res) => json(res, { name: "layers", tags: [] }, { link: `<${tagsPath}?n=1000>; rel="next"` });
    await assertCodeAsync(
      () => OciLayerRegistry.open(`oci://${srv.host}/layers`, { remote: { plainHttp: true, env: { HOME: work }, cwd: work }, storeDir: join(work, "store") }),
      "REMOTE_REFUSED",
    );
  });

  test("cairn search through the CLI: REMOTE_REFUSED for a loop; --remote-max-pages and CAIRN_REMOTE_MAX_PAGES bound a chain", async () => {
    const env = { ...process.env, CAIRN_HOME: join(work, "home"), HOME: work };
    srv.handle = (_q, res) => json(res, { name: "layers", tags: [] }, { link: `<${tagsPath}?n=1000>; rel="next"` });
    const loop = await runCli(["search", "tool", "--registry", `oci://${srv.host}/layers`, "--plain-http", "--json"], env);
    assert.equal(loop.code, 1);
    assert.equal(JSON.parse(loop.stdout).error.code, "REMOTE_REFUSED");
    let k = 0;
    srv.handle = (_q, res) => json(res, { name: "layers", tags: [] }, { link: `<${tagsPath}?n=1&last=p${++k}>; rel="next"` });
    srv.seen.length = 0;
    const chain = await runCli(["search", "tool", "--registry", `oci://${srv.host}/layers`, "--plain-http", "--json", "--remote-max-pages", "4"], env);
    assert.equal(JSON.parse(chain.stdout).error.code, "LIMIT_EXCEEDED");
    assert.equal(srv.seen.length, 4);
    srv.seen.length = 0;
    const byEnv = await runCli(["search", "tool", "--registry", `oci://${srv.host}/layers`, "--plain-http", "--json"], { ...env, CAIRN_REMOTE_MAX_PAGES: "2" });
    assert.equal(JSON.parse(byEnv.stdout).error.code, "LIMIT_EXCEEDED");
    assert.equal(srv.seen.length, 2);
    // control: a two-page listing ends and search answers
    srv.handle = (req, res) =>
      req.url!.includes("last=")
        ? json(res, { name: "layers", tags: ["other"] })
        : json(res, { name: "layers", tags: ["image"] }, { link: `<${tagsPath}?n=1&last=image>; rel="next"` });
    const ok = await runCli(["search", "tool", "--registry", `oci://${srv.host}/layers`, "--plain-http", "--json"], env);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  });
});

describe("time bounds (case 3)", () => {
  let srv: HostileServer;
  let work: string;
  before(async () => {
    srv = await new HostileServer().start();
    work = mkdtempSync(join(tmpdir(), "cairn-hostile-time-"));
  });
  after(async () => {
    await srv.stop();
    rmSync(work, { recursive: true, force: true });
  });
  const BLOB = Buffer.alloc(64 * 1024, 0x5a);
  const DIGEST = parseSha256(`sha256:${createHash("sha256").update(BLOB).digest("hex")}`, "blob");
  // small limits, so no test waits on a default; the rate window is 1 s of waiting and the
  // honest control sends ~40 times what the rate asks
  const SMALL = { headersMs: 3000, idleMs: 3000, minRate: 2048, rateWindowMs: 1000 };
  const client = (limits: object = SMALL, host = srv.host, plainHttp = true) => new RegistryClient({ host, plainHttp, limits });
  const blobPath = `/v2/r/app/blobs/${DIGEST}`;
  const fetchBlob = async (c: RegistryClient) => {
    const parts: Uint8Array[] = [];
    await c.fetchBlob("r/app", DIGEST, BLOB.length, (x) => void parts.push(x));
    return Buffer.concat(parts);
  };
  /** Sends `bytes` in chunks of `chunk`, one chunk each time the client has drained the last (setImmediate between writes), every `everyMs`. */
  const trickle = (res: ServerResponse, bytes: Buffer, chunk: number, everyMs: number, declared = bytes.length): void => {
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(declared) });
    let off = 0;
    const step = (): void => {
      if (res.destroyed) return;
      if (off >= bytes.length) return void res.end();
      res.write(bytes.subarray(off, off + chunk));
      off += chunk;
      setTimeout(step, everyMs);
    };
    res.on("close", () => {
      off = Number.POSITIVE_INFINITY;
    });
    step();
  };

  test("control: an honest slow server (64 KiB in 4 KiB chunks every 50 ms) meets the bounds", async () => {
    srv.handle = (_q, res) => trickle(res, BLOB, 4096, 50);
    assert.ok((await fetchBlob(client())).equals(BLOB));
  });

  test("a body trickling one byte at a time is cut off at remote.min-rate, though bytes keep coming (idle never fires)", async () => {
    let closed!: () => void;
    const cancelled = new Promise<void>((r) => {
      closed = r;
    });
    srv.handle = (_q, res) => {
      res.on("close", closed);
      trickle(res, BLOB, 1, 20);
    };
    const e = await assertCodeAsync(() => fetchBlob(client()), "REMOTE_TIMEOUT");
    assert.match(e.message, /remote\.min-rate/);
    assert.ok(e.path?.includes(blobPath));
    await cancelled; // the server sees the transfer end: cairn cancelled it, it did not just stop reading
  });

  test("a body that stalls (Content-Length longer than what is sent) ends at remote.idle-ms", async () => {
    srv.handle = (_q, res) => {
      res.writeHead(200, { "content-length": String(BLOB.length) });
      res.write(BLOB.subarray(0, 100)); // and nothing more
    };
    const e = await assertCodeAsync(() => fetchBlob(client({ ...SMALL, idleMs: 300, rateWindowMs: 600_000 })), "REMOTE_TIMEOUT");
    assert.match(e.message, /remote\.idle-ms/);
  });

  test("a server that never answers ends at remote.headers-ms", async () => {
    srv.handle = () => undefined; // the request is read; no status line ever comes
    const e = await assertCodeAsync(() => fetchBlob(client({ ...SMALL, headersMs: 300 })), "REMOTE_TIMEOUT");
    assert.match(e.message, /remote\.headers-ms/);
  });

  test("a TLS handshake that never completes ends at remote.connect-ms; the same server over plain http reaches headers-ms instead (control)", async () => {
    const silent = await new SilentTcpServer().start();
    try {
      const e = await assertCodeAsync(() => fetchBlob(client({ ...SMALL, connectMs: 300, headersMs: 600_000 }, silent.host, false)), "REMOTE_TIMEOUT");
      assert.match(e.message, /remote\.connect-ms/);
      assert.equal(silent.sockets.length, 1, "the connection was accepted; the handshake is what never came");
      const h = await assertCodeAsync(() => fetchBlob(client({ ...SMALL, connectMs: 300, headersMs: 300 }, silent.host, true)), "REMOTE_TIMEOUT");
      assert.match(h.message, /remote\.headers-ms/);
    } finally {
      await silent.stop();
    }
  });

  test("lying lengths fail typed: shorter than the body, longer than a body that ends, other than the descriptor; the true length passes (control)", async () => {
    srv.handle = (_q, res) => {
      res.writeHead(200, { "content-length": String(BLOB.length - 10) });
      res.end(BLOB.subarray(0, BLOB.length - 10));
    };
    await assertCodeAsync(() => fetchBlob(client()), "SIZE_MISMATCH");
    srv.handle = (q, res) => {
      res.writeHead(200, { "content-length": String(BLOB.length - 10) }); // the body goes on past it
      res.end(BLOB);
      q.socket.end();
    };
    await assertCodeAsync(() => fetchBlob(client()), "SIZE_MISMATCH");
    srv.handle = (q, res) => {
      res.writeHead(200, { "content-length": String(BLOB.length) });
      res.write(BLOB.subarray(0, 1000));
      q.socket.destroy(); // the body ends early
    };
    await assertCodeAsync(() => fetchBlob(client()), "REMOTE_UNREACHABLE");
    srv.handle = (_q, res) => {
      res.writeHead(200, { "content-length": String(BLOB.length + 1) });
      res.end(Buffer.concat([BLOB, Buffer.from("x")]));
    };
    await assertCodeAsync(() => fetchBlob(client()), "SIZE_MISMATCH");
    srv.handle = (_q, res) => {
      res.writeHead(200, { "content-length": String(BLOB.length) });
      res.end(BLOB);
    };
    assert.ok((await fetchBlob(client())).equals(BLOB));
  });

  test("an upload the server reads slowly is not a silent server: the headers bound starts when the body is sent; a server that stops reading ends at remote.idle-ms", async () => {
    const big = Buffer.alloc(32 * 1024 * 1024, 0x42);
    const digest = parseSha256(`sha256:${createHash("sha256").update(big).digest("hex")}`, "upload");
    let reading: "slow" | "never" = "slow";
    srv.handle = (req, res) => {
      if (req.method === "HEAD") return void res.writeHead(404).end();
      if (req.method === "POST") return void res.writeHead(202, { location: "/v2/r/app/blobs/uploads/u1", "content-length": "0" }).end();
      // PUT: read 256 KiB per 50 ms (over 6 s for the body, twice remote.headers-ms; the socket buffers hold a few MiB of it), or never
      if (reading === "never") return void req.pause();
      let got = 0;
      req.on("data", (c: Buffer) => {
        got += c.length;
        if (got % (256 * 1024) < c.length) {
          req.pause();
          setTimeout(() => req.resume(), 50);
        }
      });
      req.on("end", () => void res.writeHead(201, { "content-length": "0" }).end());
    };
    const c = client({ ...SMALL, headersMs: 3000, idleMs: 1500 });
    assert.equal(await c.pushBlob("r/app", digest, big), "pushed");
    reading = "never";
    const e = await assertCodeAsync(() => client({ ...SMALL, headersMs: 1000, idleMs: 400 }).pushBlob("r/app", digest, big), "REMOTE_TIMEOUT");
    assert.match(e.message, /remote\.idle-ms/);
  });

  test("cairn pull through the CLI: --remote-idle-ms and CAIRN_REMOTE_HEADERS_MS bound a stalled manifest; nothing is written", async () => {
    const env = { ...process.env, CAIRN_HOME: join(work, "home"), HOME: work };
    srv.handle = (_q, res) => {
      res.writeHead(200, { "content-type": "application/vnd.oci.image.manifest.v1+json", "content-length": "500" });
      res.write("{");
    };
    const out = join(work, "out");
    const ref = `${srv.host}/r/app@${DIGEST}`;
    const idle = await runCli(["pull", ref, "--oci", out, "--plain-http", "--json", "--remote-idle-ms", "300"], env);
    assert.equal(idle.code, 1);
    const err = JSON.parse(idle.stdout).error;
    assert.equal(err.code, "REMOTE_TIMEOUT");
    assert.match(err.message, /remote\.idle-ms/);
    assert.match(err.hint, /--remote-idle-ms/);
    assert.ok(!existsSync(out));
    srv.handle = () => undefined;
    const headers = await runCli(["pull", ref, "--oci", out, "--plain-http", "--json"], { ...env, CAIRN_REMOTE_HEADERS_MS: "300" });
    assert.equal(JSON.parse(headers.stdout).error.code, "REMOTE_TIMEOUT");
    assert.ok(!existsSync(out));
    const usage = await runCli(["pull", ref, "--oci", out, "--plain-http", "--json", "--remote-idle-ms", "soon"], env);
    assert.equal(usage.code, 2, "control: a limit that is not a positive integer is a usage error");
  });
});
