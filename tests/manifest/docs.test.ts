// docs/manifest.md states the class of every property; this keeps it in step with FIELD_SCOPE.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FIELD_SCOPE } from "../../src/manifest/scope.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

function documentedClasses(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const start = text.indexOf("<!-- field-table");
  for (const line of text.slice(start).split("\n").slice(1)) {
    if (line.trim() === "") break;
    const m = /^\| `([^`]+)` \| (identity|extension|excluded|refused) \|/.exec(line);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

test("docs/manifest.md documents the class of every property, exactly as FIELD_SCOPE", () => {
  const doc = documentedClasses(readFileSync(join(PROJECT_ROOT, "docs", "manifest.md"), "utf8"));
  const code = new Map(Object.entries(FIELD_SCOPE).map(([k, v]) => [k, v.class as string]));
  assert.deepEqual([...doc.entries()].sort(), [...code.entries()].sort());
  // Control: the parser sees a disagreement.
  assert.equal(documentedClasses("<!-- field-table -->\n| `image` | refused | x |\n").get("image"), "refused");
});

test("the Quick start block of docs/manifest.md runs as written", async () => {
  const { mkdtempSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { runCli } = await import("../helpers/cli.ts");
  const text = readFileSync(join(PROJECT_ROOT, "docs", "manifest.md"), "utf8");
  const block = /## Quick start[\s\S]*?```sh\n([\s\S]*?)```/.exec(text)?.[1];
  assert.ok(block, "no Quick start block");
  const d = mkdtempSync(join(tmpdir(), "cairn-docs-"));
  const lines = block.split("\n").filter((l) => l.startsWith("node bin/cairn.js "));
  assert.ok(lines.length >= 5);
  const codes: number[] = [];
  const cwd = process.cwd();
  process.chdir(PROJECT_ROOT); // the block uses paths relative to the repository root
  try {
    for (const line of lines) {
      const args = line
        .replace("node bin/cairn.js ", "")
        .replaceAll("$d", d)
        .split(/\s+/)
        .filter((a) => a.length > 0);
      const r = await runCli(args);
      codes.push(r.code);
      if (args[1] === "ingest" && args[2]?.includes("unpinned")) assert.match(r.stdout, /UNPINNED/);
    }
  } finally {
    process.chdir(cwd);
  }
  // Every command succeeds, except that a diff of different environments exits 1, as documented.
  assert.deepEqual(
    codes,
    lines.map((l) => (l.includes(" diff ") && l.includes("unpinned") ? 1 : 0)),
  );
});
