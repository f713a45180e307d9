/**
 * docs/oci.md stays true: its library example runs, its limits table lists
 * every limit with its default, and every refusal code the layer and OCI
 * refusal generators use appears in it.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { formatBytes } from "../../src/core/index.ts";
import { DEFAULT_LIMITS, LIMIT_NAMES } from "../../src/tree/layer-limits.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { OCI_REFUSALS } from "./fixtures/oci-refusals.ts";
import { TAR_REFUSALS } from "../tree/fixtures/tar-refusals.ts";

const doc = readFileSync(join(PROJECT_ROOT, "docs", "oci.md"), "utf8");

describe("docs/oci.md", () => {
  it("the library example runs", () => {
    const block = /## Library use\n\n```ts\n([\s\S]*?)```/.exec(doc);
    assert.ok(block, "the example block is in the doc");
    // "cairn" is the package itself; the test runs it against the sources (dist may not be built).
    const code = block[1]!.replaceAll('from "cairn"', `from "${PROJECT_ROOT}/src/index.ts"`).replaceAll('"./tests/', `"${PROJECT_ROOT}/tests/`);
    const file = join(mkdtempSync(join(tmpdir(), "cairn-doc-")), "example.mts");
    writeFileSync(file, code);
    const out = execFileSync(process.execPath, ["--import", "tsx", file], { cwd: PROJECT_ROOT, encoding: "utf8" });
    assert.match(out, /\[ '\/bin\/tool' \] 25 3/);
  });
  it("lists every limit with its default", () => {
    for (const n of LIMIT_NAMES) {
      const line = doc.split("\n").find((l) => l.startsWith(`| \`${n}\``));
      assert.ok(line, `${n} is missing from the limits table`);
      const v = DEFAULT_LIMITS[n];
      assert.ok(line.includes(`| ${v} |`) || line.includes(`| ${formatBytes(v).replace(".0 ", " ")} |`), `${n}: the doc's default differs from ${v}`);
    }
  });
  it("names every refusal code the generators exercise", () => {
    for (const code of new Set([...TAR_REFUSALS, ...OCI_REFUSALS].map((c) => c.code))) assert.ok(doc.includes(code), code);
  });
});
