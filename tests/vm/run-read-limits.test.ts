// A run directory offered for replay is hostile input: its files are read
// with named bounds before parsing (no QEMU boot needed to check that).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readRunManifest, RUN_READ_LIMITS } from "../../src/vm/replay-run.ts";
import { CairnError } from "../../src/core/index.ts";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return e instanceof CairnError ? e.code : String(e);
  }
  return undefined;
}

test("a padded run.json is refused by the named limit before it is parsed; a small one reaches the parser (control)", () => {
  const big = mkdtempSync(join(tmpdir(), "cairn-runread-"));
  writeFileSync(join(big, "run.json"), " ".repeat(RUN_READ_LIMITS["run.manifest-bytes"] + 1));
  assert.equal(
    codeOf(() => readRunManifest(big)),
    "LIMIT_EXCEEDED",
  );
  const small = mkdtempSync(join(tmpdir(), "cairn-runread-"));
  writeFileSync(join(small, "run.json"), "{}");
  // the parser, not the limit, refuses "{}": its first missing object is /vm
  assert.equal(
    codeOf(() => readRunManifest(small)),
    "MODEL_TYPE",
  );
});
