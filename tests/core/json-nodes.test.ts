// The strict JSON reader's node-count bound (src/core/json.ts, limit
// json_nodes), in a file of its own: a 4 MB document is slow under Stryker's
// instrumentation, so the mutation set runs this file last. Written to kill
// StrykerJS survivors (bench/mutation/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseJsonText } from "../../src/core/index.ts";
import { jsonShape } from "../../src/core/json.ts";
import { assertCode } from "../helpers/errors.ts";

test("json_nodes bounds the document before the tree is built", () => {
  // 2,000,001 values; refused by the pre-pass, so no tree of that size is built.
  assertCode(() => parseJsonText(`[${"0,".repeat(2_000_000)}0]`), "LIMIT_EXCEEDED", "");
  // Control: the same text one value shorter passes the pre-pass (the count is exact for a flat list).
  assert.equal(jsonShape(`[${"0,".repeat(1_999_998)}0]`).nodes, 2_000_000);
});
