/**
 * isCanonicalPath scans the path once instead of splitting it (claim W59);
 * it must accept exactly what the split-based definition accepts: absolute,
 * no empty, "." or ".." component, no trailing slash, no NUL.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { isCanonicalPath } from "../../src/tree/tree-paths.ts";

function reference(p: string): boolean {
  if (p === "/") return true;
  if (!p.startsWith("/") || p.endsWith("/") || p.includes("\0")) return false;
  return p
    .slice(1)
    .split("/")
    .every((part) => part !== "" && part !== "." && part !== "..");
}

test("isCanonicalPath agrees with the split-based definition", () => {
  const named = [
    "/",
    "",
    "a",
    "/a",
    "/a/",
    "//a",
    "/a//b",
    "/.",
    "/..",
    "/...",
    "/.a",
    "/a/.",
    "/a/..",
    "/a/../b",
    "/..a",
    "/a\0",
    "/\u00e9/\u{1F600}",
    "a/b",
    "/a/b/c",
  ];
  for (const p of named) assert.equal(isCanonicalPath(p), reference(p), JSON.stringify(p));
  assert.deepEqual(
    named.filter((p) => isCanonicalPath(p)),
    ["/", "/a", "/...", "/.a", "/..a", "/\u00e9/\u{1F600}", "/a/b/c"],
    "control: the accepted ones",
  );
  const piece = fc.constantFrom("/", ".", "a", "\0", "\u00e9", "\ud83d\ude00");
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 12 }), (parts) => isCanonicalPath(parts.join("")) === reference(parts.join(""))),
    { numRuns: 20_000 },
  );
});
