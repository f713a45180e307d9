/**
 * Without /proc, `readOciSource({stageLayers: false})` is refused
 * PREREQUISITE_MISSING before anything is read (claim W64), as reading a
 * layout is: the open layer files it hands out are named through
 * /proc/self/fd, and the staging fallback it once had was unreachable from
 * cairn (verify is its only caller, and the store cannot be opened without
 * /proc either). The reader here opens the layout's files by path, so only
 * the mode decides. It runs in a child in a private mount namespace with a
 * tmpfs over /proc; the staged mode there, and both modes with /proc, are
 * the controls.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { needs } from "../helpers/prerequisites.ts";
import { dir, file } from "../workload/fixtures/tar-writer.ts";
import { writeCase } from "./fixtures/oci-refusals.ts";

const src = (rel: string): string => fileURLToPath(new URL(`../../src/${rel}`, import.meta.url));
const CHILD = `
import { open } from "node:fs/promises";
import { join } from "node:path";
import { readOciSource } from ${JSON.stringify(src("oci/index.ts"))};
const [layoutDir, manifestDigest, work] = process.argv.slice(2);
const opened = async (path, locator) => {
  const handle = await open(path);
  return { handle, size: (await handle.stat()).size, locator };
};
const reader = {
  openTop: (name) => opened(join(layoutDir, name), name),
  openBlob: (digest, path) => opened(join(layoutDir, "blobs", "sha256", digest.slice(7)), path),
  close: async () => {},
};
const out = {};
for (const staged of [true, false]) {
  try {
    const s = await readOciSource({ reader, manifestDigest, stagingDir: join(work, String(staged)), stageLayers: staged });
    out[staged ? "staged" : "unstaged"] = \`layers:\${s.layers.length}\`;
    await s.close();
  } catch (e) {
    out[staged ? "staged" : "unstaged"] = e.code ?? String(e);
  }
}
console.log(JSON.stringify(out));
`;

function probe(): string | undefined {
  const r = spawnSync("unshare", ["--mount", "--fork", "sh", "-c", "mount -t tmpfs none /proc && test ! -e /proc/self"], { timeout: 20_000 });
  return r.status === 0 ? undefined : "a private mount namespace (unshare --mount, as root)";
}
const missing = probe();

test("stageLayers: false is refused PREREQUISITE_MISSING without /proc; the staged mode, and both with /proc, read the image", { skip: needs(missing) }, () => {
  const d = mkdtempSync(join(tmpdir(), "cairn-noproc-"));
  const img = writeCase(join(d, "layout"), { layers: [{ entries: [dir("etc"), file("etc/motd", "hello\n", { mode: 0o644 })] }] });
  const child = join(d, "child.mts");
  writeFileSync(child, CHILD);
  const node = [process.execPath, "--import", "tsx", child, join(d, "layout"), img.manifestDigest];
  const run = (masked: boolean, work: string): Record<string, string> => {
    const argv = [...node, join(d, work)].map((a) => `'${a}'`).join(" ");
    const script = masked ? `mount -t tmpfs none /proc && exec ${argv}` : `exec ${argv}`;
    const r = spawnSync("unshare", ["--mount", "--fork", "sh", "-c", script], {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      timeout: 60_000,
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout.trim().split("\n").pop()!) as Record<string, string>;
  };
  assert.deepEqual(run(false, "with"), { staged: "layers:1", unstaged: "layers:1" }, "control: with /proc both modes read the image");
  assert.deepEqual(run(true, "without"), { staged: "layers:1", unstaged: "PREREQUISITE_MISSING" });
});
