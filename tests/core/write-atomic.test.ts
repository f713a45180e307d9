// writeFileAtomic's failures are typed (IO_ERROR naming the target), whatever
// the path is: a target under a regular file (`--html run.json/x`) made its
// clean-up throw ENOTDIR itself, which escaped as INTERNAL.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeFileAtomic } from "../../src/core/index.ts";
import { assertCode } from "../helpers/errors.ts";

test("a target whose parent is a regular file is IO_ERROR naming it, not INTERNAL (control: a good target is written)", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-atomic-"));
  try {
    writeFileSync(join(dir, "file"), "x");
    const bad = join(dir, "file", "out.html");
    const e = assertCode(() => writeFileAtomic(bad, "page"), "IO_ERROR");
    assert.equal(e.path, bad);
    assertCode(() => writeFileAtomic(join(dir, "missing", "out.html"), "page"), "IO_ERROR");
    writeFileAtomic(join(dir, "out.html"), "page");
    assert.equal(readFileSync(join(dir, "out.html"), "utf8"), "page");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
