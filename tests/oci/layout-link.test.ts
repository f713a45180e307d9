// The layout writer's linked blobs (oci/layout-writer.ts, `linkImageLayout`):
// a blob is a hard link of its source file, checked through the link. A
// source that is not a regular file (a symlink, a FIFO: link(2) links either
// as it is) is STORE_CORRUPT at once, without following the link or waiting
// on the FIFO, and no layout is written; regular files of the right bytes
// are linked (control).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { linkImageLayout } from "../../src/oci/index.ts";
import type { Descriptor } from "../../src/oci/index.ts";

const sha = (b: Buffer): `sha256:${string}` => `sha256:${createHash("sha256").update(b).digest("hex")}`;

function fixture(): { dir: string; files: Map<string, string>; descriptors: Descriptor[] } {
  const dir = mkdtempSync(join(tmpdir(), "cairn-layout-link-"));
  mkdirSync(join(dir, "src"));
  const files = new Map<string, string>();
  const descriptors: Descriptor[] = [];
  for (const [mediaType, text] of [
    ["application/vnd.oci.image.manifest.v1+json", '{"schemaVersion":2}'],
    ["application/vnd.oci.image.config.v1+json", '{"architecture":"amd64","os":"linux"}'],
    ["application/vnd.oci.image.layer.v1.tar", "layer bytes"],
  ] as const) {
    const bytes = Buffer.from(text);
    const digest = sha(bytes);
    const path = join(dir, "src", digest.slice(7));
    writeFileSync(path, bytes);
    files.set(digest, path);
    descriptors.push({ mediaType, digest, size: bytes.length } as Descriptor);
  }
  return { dir, files, descriptors };
}

test("a linked blob whose source is a symlink or a FIFO is STORE_CORRUPT at once, and no layout is written", async () => {
  const { dir, files, descriptors } = fixture();
  try {
    const [manifest, config, layer] = descriptors as [Descriptor, Descriptor, Descriptor];
    const image = { manifest, config, layers: [layer] };
    // control: regular files of the right bytes are linked
    const good = join(dir, "good");
    const counts = await linkImageLayout(good, image, (d) => files.get(d)!);
    assert.deepEqual(counts, { linked: 3, copied: 0 });
    assert.equal(statSync(join(good, "blobs", "sha256", layer.digest.slice(7))).ino, statSync(files.get(layer.digest)!).ino);

    const planted = join(dir, "planted");
    mkdirSync(planted);
    symlinkSync(files.get(layer.digest)!, join(planted, "symlink"));
    execFileSync("mkfifo", [join(planted, "fifo")]);
    for (const name of ["symlink", "fifo"]) {
      const out = join(dir, `out-${name}`);
      await assert.rejects(
        linkImageLayout(out, image, (d) => (d === layer.digest ? join(planted, name) : files.get(d)!)),
        (e: { code?: string; path?: string }) => e.code === "STORE_CORRUPT" && e.path === layer.digest,
        name,
      );
      assert.equal(existsSync(out), false, `${name}: no layout`);
      assert.deepEqual(
        readdirSync(dir).filter((n) => n.startsWith(".")),
        [],
        `${name}: no temporary sibling`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a layout named under /proc is IO_ERROR at once (Node's recursive mkdir spun there at full CPU)", { timeout: 60_000 }, async (t) => {
  if (!existsSync("/proc/self")) return t.skip("no /proc");
  const { dir, files, descriptors } = fixture();
  try {
    const [manifest, config, layer] = descriptors as [Descriptor, Descriptor, Descriptor];
    await assert.rejects(
      linkImageLayout("/proc/self/cairn-layout", { manifest, config, layers: [layer] }, (d) => files.get(d)!),
      { code: "IO_ERROR" },
    );
    // control: the same image into a new directory is written
    await linkImageLayout(join(dir, "ok"), { manifest, config, layers: [layer] }, (d) => files.get(d)!);
    assert.ok(existsSync(join(dir, "ok", "index.json")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
