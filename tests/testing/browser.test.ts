// The browser harness (tests/helpers/browser.ts) that the page tests rely
// on: it must catch what it claims to catch, or a page test that "sees no
// error and no request" proves nothing. Each check has its control: a page
// that logs an error, throws, requests something from the network or is
// refused by its own policy is caught; a plain self-contained page is clean.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Browser, chromiumMissing } from "../helpers/browser.ts";
import { needs } from "../helpers/prerequisites.ts";
import { htmlPage } from "../../src/core/index.ts";

describe("the browser harness", { skip: needs(chromiumMissing()) }, () => {
  let dir: string;
  let browser: Browser;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "cairn-browser-"));
    browser = await Browser.launch();
  });
  after(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const page = (name: string, html: string) => {
    const f = join(dir, name);
    writeFileSync(f, html);
    return f;
  };

  it("a self-contained page from the page kit: no problem, one request (its own file), DOM readable, a PNG", async () => {
    const f = page("clean.html", htmlPage({ title: "clean", body: '<h1 id="h">hello</h1><svg width="10" height="10"><rect width="5" height="5"/></svg>' }));
    const p = await browser.openPage(f);
    assert.deepEqual(p.problems, []);
    assert.deepEqual(p.requests, [pathToFileURL(f).href]);
    assert.equal(await p.evaluate<string>("document.getElementById('h').textContent"), "hello");
    assert.equal(await p.evaluate<number>("document.querySelectorAll('svg rect').length"), 1);
    const png = await p.screenshot(400);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "a PNG signature");
  });

  it("control: a console error and an uncaught exception are caught", async () => {
    const p = await browser.openPage(page("errors.html", "<!doctype html><script>console.error('boom-1'); throw new Error('boom-2')</script>"));
    assert.ok(
      p.problems.some((x) => x.kind === "console" && x.text.includes("boom-1")),
      JSON.stringify(p.problems),
    );
    assert.ok(
      p.problems.some((x) => x.kind === "exception" && x.text.includes("boom-2")),
      JSON.stringify(p.problems),
    );
  });

  it("control: a request to the network is seen", async () => {
    // port 9 (discard) on loopback: nothing listens, the request is still made and seen
    const p = await browser.openPage(page("net.html", '<!doctype html><img src="http://127.0.0.1:9/pixel.png">'));
    assert.ok(p.requests.includes("http://127.0.0.1:9/pixel.png"), JSON.stringify(p.requests));
  });

  it("control: a page kit page that tries to load a script is refused by its policy, and the refusal is caught", async () => {
    const p = await browser.openPage(
      page("csp.html", htmlPage({ title: "csp", body: '<script>document.title = "ran"</script><img src="http://127.0.0.1:9/x.png">' })),
    );
    assert.equal(await p.evaluate<string>("document.title"), "csp", "the inline script did not run");
    // the attempt is still a request the page tried to make (a page test asserting "no request" fails on it)
    assert.ok(p.requests.includes("http://127.0.0.1:9/x.png"), JSON.stringify(p.requests));
    assert.deepEqual(p.blocked, ["csp http://127.0.0.1:9/x.png"], "and the policy refused it");
    assert.ok(
      p.problems.some((x) => /Content Security Policy/i.test(x.text)),
      JSON.stringify(p.problems),
    );
  });
});
