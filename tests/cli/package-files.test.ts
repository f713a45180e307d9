// What the npm package ships besides code (issue 36, item 5): the license text
// (LICENSE, Apache-2.0 as package.json's "license" says), listed by npm's own
// `npm pack --dry-run`, not by reading package.json. Control: the same listing
// of a package directory without a LICENSE file does not list one, so the
// check is not satisfied by npm alone.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

/** The paths `npm pack --dry-run` would put in the tarball of the package at `dir`. */
function packList(dir: string): string[] {
  const cache = mkdtempSync(join(tmpdir(), "cairn-npm-cache-"));
  try {
    const r = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts", "--cache", cache], {
      cwd: dir,
      encoding: "utf8",
      timeout: 120_000,
      maxBuffer: 64 << 20,
    });
    assert.equal(r.status, 0, r.stderr);
    const [info] = JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>;
    return info!.files.map((f) => f.path);
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
}

test("the package ships LICENSE, the Apache-2.0 text package.json names", { timeout: 180_000 }, () => {
  const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as { license: string };
  assert.equal(pkg.license, "Apache-2.0");
  const text = readFileSync(join(PROJECT_ROOT, "LICENSE"), "utf8");
  assert.match(text, /^\s*Apache License\s+Version 2\.0, January 2004\s+http:\/\/www\.apache\.org\/licenses\//);
  assert.match(text, /END OF TERMS AND CONDITIONS/);
  const debian = "/usr/share/common-licenses/Apache-2.0"; // Debian's copy of the license: the same text, byte for byte
  if (existsSync(debian)) assert.equal(text, readFileSync(debian, "utf8"));
  assert.ok(packList(PROJECT_ROOT).includes("LICENSE"), "npm pack lists LICENSE");
});

test("control: a package without a LICENSE file packs none", { timeout: 180_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-nolicense-"));
  try {
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "nolicense", version: "1.0.0", license: "Apache-2.0", files: ["index.js"] }));
    writeFileSync(join(dir, "index.js"), "export {};\n");
    const files = packList(dir);
    assert.ok(files.includes("index.js"), "control: the listing is read");
    assert.ok(!files.includes("LICENSE"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
