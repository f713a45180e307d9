/**
 * normalizeMemberPath scans a member name once instead of splitting it
 * (issue 15: it runs once per member). It must give exactly what the
 * split-based definition gives: the same path, or the same refusal code at
 * the same point (NUL, absolute name, a ".." part, then each part's
 * componentLength in order, then depth, then pathLength).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { CairnError } from "../../src/core/index.ts";
import { DEFAULT_LIMITS, enforceLimit, type LayerLimits } from "../../src/tree/layer-limits.ts";
import { normalizeMemberPath } from "../../src/tree/tree-paths.ts";

function reference(name: string, limits: LayerLimits, where: string): string {
  if (name.includes("\0")) throw new CairnError("TAR_UNSAFE_PATH", "nul", { path: where });
  if (name.startsWith("/")) throw new CairnError("TAR_UNSAFE_PATH", "absolute", { path: where });
  const parts: string[] = [];
  for (const p of name.split("/")) {
    if (p === "" || p === ".") continue;
    if (p === "..") throw new CairnError("TAR_UNSAFE_PATH", "dotdot", { path: where });
    enforceLimit(limits, "componentLength", Buffer.byteLength(p), where);
    parts.push(p);
  }
  enforceLimit(limits, "depth", parts.length, where);
  const path = `/${parts.join("/")}`;
  enforceLimit(limits, "pathLength", Buffer.byteLength(path), where);
  return path;
}

/** The path, or the refusal's code (and for a limit, its message: the limit and both values). */
function outcome(f: () => string): string {
  try {
    return f();
  } catch (e) {
    if (!(e instanceof CairnError)) throw e;
    return e.code === "LIMIT_EXCEEDED" ? `${e.code}: ${e.message}` : e.code; // the limit's message names it and both values
  }
}

const tight: LayerLimits = { ...DEFAULT_LIMITS, componentLength: 6, depth: 3, pathLength: 14 };

test("normalizeMemberPath gives the split definition's path or refusal, name by name and as a property", () => {
  const named = [
    "a",
    "a/b",
    "./a",
    "a/",
    "a//b",
    "a/./b",
    ".",
    "",
    "./",
    "a/..",
    "../a",
    "a/../b",
    "..a/b.",
    "/a",
    "a\0b",
    ".../a",
    "é/\u{1F600}",
    "a/b/c/d",
    "aaaaaaa/b",
    "ab/cd/ef/g",
    "\ud800",
    "x/\udc00y",
  ];
  for (const limits of [DEFAULT_LIMITS, tight])
    for (const name of named)
      assert.equal(
        outcome(() => normalizeMemberPath(name, limits, "/l:x")),
        outcome(() => reference(name, limits, "/l:x")),
        JSON.stringify(name),
      );
  assert.equal(normalizeMemberPath("./a//b/./c/", DEFAULT_LIMITS, "/l:x"), "/a/b/c", "control: a name that is not canonical is normalized");
  assert.equal(normalizeMemberPath("usr/bin/env", DEFAULT_LIMITS, "/l:x"), "/usr/bin/env");
  const unit = fc.constantFrom("a", "b", "/", ".", "é", "\u{1F600}", "\ud800", "\0", "xyz");
  const name = fc.array(unit, { maxLength: 12 }).map((u) => u.join(""));
  fc.assert(
    fc.property(name, fc.boolean(), (n, useTight) => {
      const limits = useTight ? tight : DEFAULT_LIMITS;
      assert.equal(
        outcome(() => normalizeMemberPath(n, limits, "/l:x")),
        outcome(() => reference(n, limits, "/l:x")),
      );
    }),
    { numRuns: 5000 },
  );
});
