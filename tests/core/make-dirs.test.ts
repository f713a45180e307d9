// core's mkdir -p (makeDirs): what Node's recursive mkdir does, without its
// endless loop where mkdir(2) answers ENOENT under an existing parent (under
// /proc: `cairn pull --oci /proc/self/x` spun at full CPU until killed).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeDirs } from "../../src/core/index.ts";

test("makeDirs creates the missing chain and returns the first directory it made; an existing one is no change", { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-make-dirs-"));
  try {
    assert.equal(makeDirs(join(dir, "a", "b", "c"), 0o750), join(dir, "a"));
    assert.ok(statSync(join(dir, "a", "b", "c")).isDirectory());
    assert.equal(makeDirs(join(dir, "a", "b")), undefined);
    writeFileSync(join(dir, "file"), "x");
    assert.throws(() => makeDirs(join(dir, "file", "sub")), { code: "ENOTDIR" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("under /proc, where mkdir(2) answers ENOENT, makeDirs fails at once instead of spinning", { timeout: 60_000 }, (t) => {
  try {
    statSync("/proc/self");
  } catch {
    return t.skip("no /proc");
  }
  assert.throws(() => makeDirs("/proc/self/cairn-x/blobs/sha256"), { code: "ENOENT" });
  assert.throws(() => makeDirs("/proc/self/cairn-x"), { code: "ENOENT" });
});
