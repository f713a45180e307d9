// docs/errors.md lists every error code with the exit code it maps to, and
// nothing that is not a code: the list in the docs cannot drift from the code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ERROR_CODES } from "../../src/core/index.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

test("every error code is documented with its exit code, and only real codes are", () => {
  const doc = readFileSync(join(PROJECT_ROOT, "docs", "errors.md"), "utf8");
  const rows = new Map<string, number>();
  for (const m of doc.matchAll(/^\| `([A-Z0-9_]+)` \| (\d) \|/gm)) rows.set(m[1]!, Number(m[2]));
  assert.ok(rows.size > 10, "the table parses");
  for (const [code, exit] of Object.entries(ERROR_CODES)) {
    assert.equal(rows.get(code), exit, `docs/errors.md row for ${code}`);
  }
  for (const code of rows.keys()) assert.ok(code in ERROR_CODES, `docs/errors.md names ${code}, which is not a code`);
});
