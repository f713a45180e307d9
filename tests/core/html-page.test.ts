// The page kit (core/html-page.ts): every value escaped for text and both
// attribute quote kinds, the page shell carries the no-load, no-script policy,
// and SVG helpers escape what they are given. The browser-side checks of pages
// are in tests/cli/runs-html.test.ts and tests/helpers/browser.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { escapeHtml, htmlPage, PAGE_CSP, svg } from "../../src/core/index.ts";

const HOSTILE = `<script>alert("x")</script>' onload='x' &amp;`;

test("escapeHtml leaves no markup, no quote of either kind and no entity un-escaped", () => {
  const e = escapeHtml(HOSTILE);
  assert.doesNotMatch(e, /[<>"']/);
  assert.match(e, /&amp;amp;/, "an entity in the input is shown as text, not decoded");
  assert.equal(escapeHtml("plain text 1.2"), "plain text 1.2", "control: plain text is unchanged");
  assert.equal(escapeHtml(null), "");
  assert.equal(escapeHtml(42), "42");
});

test("htmlPage is one document with the policy that loads nothing and runs no script", () => {
  const page = htmlPage({ title: HOSTILE, body: "<p>hi</p>" });
  assert.match(page, /^<!doctype html>/);
  assert.ok(page.includes(`<meta http-equiv="Content-Security-Policy" content="${PAGE_CSP}">`));
  assert.match(PAGE_CSP, /default-src 'none'/);
  assert.doesNotMatch(PAGE_CSP, /script-src/, "no script source is opened");
  assert.doesNotMatch(page, /<script/i, "the title is escaped, never markup");
  assert.match(page, /<p>hi<\/p>/, "control: the body is placed as given");
});

test("svg helpers escape text, titles and attributes", () => {
  const s = svg.root(100, 20, [svg.text(1, 2, HOSTILE), svg.rect(0, 0, 5, 5, { title: HOSTILE, data: { kind: HOSTILE } })], HOSTILE);
  assert.doesNotMatch(s, /<script/);
  assert.equal(s.match(/<rect /g)?.length, 1);
  assert.match(s, /data-kind="&lt;script&gt;/);
  assert.match(svg.rect(0, 0, -3, 1), /width="0"/, "a negative width is drawn as none");
});
