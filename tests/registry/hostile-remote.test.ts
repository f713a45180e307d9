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
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RegistryClient } from "../../src/oci/index.ts";
import { OciLayerRegistry } from "../../src/strata/registry-oci.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { runCli } from "../helpers/cli.ts";
import { HostileServer, json } from "./fixtures/hostile-server.ts";

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
