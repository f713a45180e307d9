/**
 * The lock pages (`lock diff A B --html OUT`, `lock explain LOCK --html OUT`)
 * opened in a real browser (tests/helpers/browser.ts: Debian's chromium over
 * the DevTools pipe): no console error, no request but the page's own file,
 * every changed layer and package of the diff visible on the page, the
 * layers of explain in mount order. The lockfiles are the bundled example's:
 * its profile resolved with python@3.11, and with python@3.12 frozen against
 * its pip index. With CAIRN_UPDATE_DOCS=1 the pages' screenshots are written
 * to docs/pictures/ (the README shows them).
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { buildExampleRegistry } from "../../examples/strata/build-registry.ts";
import { writeDemoIndexes } from "../../examples/strata/package-indexes.ts";
import { diffLocks, readLockfileUnvalidated } from "../../src/strata/index.ts";
import { Browser, chromiumMissing } from "../helpers/browser.ts";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { tempDir } from "./fixtures.ts";
import { BEFORE, handLockText } from "./hand-locks.ts";

const PROJECT = join(import.meta.dirname, "..", "..");
const dir = tempDir("cairn-lock-html-");
const env = { ...process.env, CAIRN_NOW: "2026-03-01T12:00:00Z" };

/** The bundled example, resolved twice and frozen once; returns the paths relative to `dir` (the test's cwd, so the pages name them short). */
async function exampleLocks(): Promise<{ old: string; frozen: string }> {
  const ex = buildExampleRegistry(join(dir, "example"));
  writeDemoIndexes(join(dir, "indexes"));
  const profile = readFileSync(join(PROJECT, "examples/strata/profile.yaml"), "utf8");
  writeFileSync(join(dir, "p311.yaml"), profile.replace("python@3.12", "python@3.11"));
  writeFileSync(join(dir, "p312.yaml"), profile);
  const common = ["--registry", ex.registry, "--trust", `keyfile://${ex.root}/registry.pub`, "--base", `rootfs:${ex.rootfs}`];
  for (const [p, out] of [
    ["p311.yaml", "old.lock"],
    ["p312.yaml", "env.lock"],
  ]) {
    const r = await runCli(["resolve", p!, ...common, "--out", out!], env);
    assert.equal(r.code, 0, r.stderr);
  }
  const f = await runCli(["freeze", "env.lock", "--index", join(dir, "indexes", "pypi"), "--out", "frozen.lock"], env);
  assert.equal(f.code, 0, f.stderr);
  return { old: "old.lock", frozen: "frozen.lock" };
}

const updateDocs = process.env.CAIRN_UPDATE_DOCS === "1";
function keepPicture(name: string, png: Buffer): void {
  if (!updateDocs) return;
  mkdirSync(join(PROJECT, "docs", "pictures"), { recursive: true });
  writeFileSync(join(PROJECT, "docs", "pictures", name), png);
}

describe("the lock pages in a real browser", { skip: needs(chromiumMissing()) }, () => {
  let browser: Browser;
  let locks: { old: string; frozen: string };
  const cwd = process.cwd();
  before(async () => {
    process.chdir(dir);
    locks = await exampleLocks();
    browser = await Browser.launch();
  });
  after(async () => {
    await browser?.close();
    process.chdir(cwd);
  });

  it("lock diff --html: loads with no error and no request, and shows every changed layer and package of the diff", async () => {
    const r = await runCli(["lock", "diff", locks.old, locks.frozen, "--html", "diff.html"], env);
    assert.equal(r.code, 1, r.stderr);
    const d = diffLocks(readLockfileUnvalidated(locks.old).lock, readLockfileUnvalidated(locks.frozen).lock);
    assert.ok(d.packages.length >= 5 && d.layers.length >= 1, "the example diff has layer and package changes");
    const file = join(dir, "diff.html");
    const page = await browser.openPage(file);
    assert.deepEqual(page.problems, []);
    assert.deepEqual(page.requests, [pathToFileURL(file).href], "no request but the page's own file");
    // every change of the model is a visible row naming it
    const visible = await page.evaluate<{ key: string; change: string; text: string; shown: boolean }[]>(
      `[...document.querySelectorAll("tr[data-package], tr[data-layer][data-change]")].map((e) => ({ key: e.dataset.package ?? e.dataset.layer, change: e.dataset.change, text: e.innerText, shown: e.getBoundingClientRect().height > 0 && getComputedStyle(e).visibility !== "hidden" }))`,
    );
    for (const p of d.packages) {
      const row = visible.find((v) => v.key === `${p.set}/${p.name}`);
      assert.ok(row?.shown, `package ${p.name} shown`);
      assert.equal(row!.change, p.change);
      assert.ok(row!.text.includes(p.name) && row!.text.includes(p.to ?? p.from ?? ""), `${p.name} with its version: ${row!.text}`);
    }
    for (const l of d.layers) {
      const row = visible.find((v) => v.key === l.name && v.change === l.change);
      assert.ok(row?.shown, `layer ${l.name} shown`);
      assert.ok(row!.text.includes(l.a?.version ?? "") && row!.text.includes(l.b?.version ?? ""), row!.text);
    }
    const text = await page.evaluate<string>("document.body.innerText");
    assert.match(text, /\+ six==1\.16\.0/);
    assert.match(text, /different EnvironmentID/);
    // both stacks, a segment per layer, bottom first
    const stacks = await page.evaluate<string[][]>(
      `[...document.querySelectorAll("svg")].map((s) => [...s.querySelectorAll("rect")].map((r) => r.dataset.layer + ":" + r.dataset.tone))`,
    );
    assert.deepEqual(stacks, [
      ["samtools:same", "bwa:same", "python:changed", "numpy:same"],
      ["samtools:same", "bwa:same", "python:changed", "numpy:same"],
    ]);
    keepPicture("lock-diff.png", await page.screenshot(1100));
  });

  it("lock explain --html: the layers in mount order with their reasons, the pinned packages, no error and no request", async () => {
    const r = await runCli(["lock", "explain", locks.frozen, "--html", "explain.html"], env);
    assert.equal(r.code, 0, r.stderr);
    const file = join(dir, "explain.html");
    const page = await browser.openPage(file);
    assert.deepEqual(page.problems, []);
    assert.deepEqual(page.requests, [pathToFileURL(file).href]);
    const rows = await page.evaluate<string[]>(`[...document.querySelectorAll("tr[data-layer]")].map((e) => e.dataset.layer)`);
    assert.deepEqual(rows, ["samtools", "bwa", "python", "numpy"]);
    const text = await page.evaluate<string>("document.body.innerText");
    assert.match(text, /a member of formation:bio-seq@2026\.03, which the profile asks for/);
    assert.match(text, /provides python>=3\.10,<3\.13 for numpy-2\.0\.1-none-noarch/);
    assert.match(text, /pandas==2\.2\.2/);
    keepPicture("lock-explain.png", await page.screenshot(1100));
  });

  it("hostile names from a lockfile are text, never markup: no request, shown literally (tests/testing/browser.test.ts shows such an image request is caught)", async () => {
    const evil = '<img src="http://127.0.0.1:9/x.png">';
    const text = handLockText({
      ...BEFORE,
      // rebuilt as well, so the diff lists the layer with its reason
      layers: BEFORE.layers.map((l) => (l.name === "tool-a" ? { ...l, digest: "ab", satisfiedBy: evil.replaceAll('"', '\\"') } : l)),
    });
    writeFileSync("evil.lock", text);
    writeFileSync("plain.lock", handLockText(BEFORE));
    for (const [args, out] of [
      [["lock", "explain", "evil.lock"], "evil-explain.html"],
      [["lock", "diff", "plain.lock", "evil.lock"], "evil-diff.html"],
    ] as const) {
      const r = await runCli([...args, "--html", out], env);
      assert.ok(r.code === 0 || r.code === 1, r.stderr);
      const page = await browser.openPage(join(dir, out));
      assert.deepEqual(page.problems, [], out);
      assert.deepEqual(page.requests, [pathToFileURL(join(dir, out)).href], `${out}: the name did not become an image`);
      assert.ok((await page.evaluate<string>("document.body.innerText")).includes(evil), `${out} shows the name as written`);
    }
  });
});

describe("the lock pages are written whole or not at all", () => {
  it("a diff that fails (a missing lockfile) writes no page; a page over an old one replaces it whole", async () => {
    const a = join(dir, "w-a.lock");
    writeFileSync(a, handLockText(BEFORE));
    const out = join(dir, "w.html");
    const missing = await runCli(["lock", "diff", a, join(dir, "nope.lock"), "--html", out]);
    assert.equal(missing.code, 2);
    assert.ok(!existsSync(out), "no page for a diff that was not made");
    writeFileSync(out, "old page");
    const ok = await runCli(["lock", "diff", a, a, "--html", out]);
    assert.equal(ok.code, 0, ok.stderr);
    const html = readFileSync(out, "utf8");
    assert.match(html, /^<!doctype html>/);
    assert.match(html, /<\/html>\n$/);
  });

  it("second pass: --html naming an input lockfile or its signature is a usage error, and the lockfile is left as it was (control: another path is written)", async () => {
    const a = join(dir, "in-a.lock");
    writeFileSync(a, handLockText(BEFORE));
    writeFileSync(`${a}.dsse.json`, "{}");
    const before = readFileSync(a);
    for (const args of [
      ["lock", "diff", a, a, "--html", a],
      ["lock", "diff", a, a, "--html", `${a}.dsse.json`],
      ["lock", "explain", a, "--html", a],
      ["lock", "explain", a, "--html", join(dir, ".", "in-a.lock")],
    ]) {
      const r = await runCli([...args, "--json"]);
      assert.equal(r.code, 2, args.join(" "));
      assert.equal(JSON.parse(r.stdout).error.code, "USAGE");
      assert.equal(JSON.parse(r.stdout).error.path, "--html");
    }
    assert.deepEqual(readFileSync(a), before, "the lockfile is untouched");
    assert.equal(readFileSync(`${a}.dsse.json`, "utf8"), "{}");
    rmSync(`${a}.dsse.json`); // a placeholder, not a signature: lock explain would read it
    const ok = await runCli(["lock", "explain", a, "--html", join(dir, "in-a.html")]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.ok(existsSync(join(dir, "in-a.html")));
  });

  it("lock explain --html without a lockfile is a usage error naming --html", async () => {
    const r = await runCli(["lock", "explain", "--html", join(dir, "x.html"), "--json"]);
    assert.equal(r.code, 2);
    assert.equal(JSON.parse(r.stdout).error.path, "--html");
    assert.ok(!existsSync(join(dir, "x.html")));
  });
});
