/**
 * `readOciSource({stageLayers: false})` (verify's mode, claim W56): a layer
 * is opened and its size checked but neither read nor copied; its path names
 * the open file until `close()`, and applying it with `recheckStored` checks
 * the bytes it reads against the digest. The staged mode is the control.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { readOciSource } from "../../src/oci/index.ts";
import { applyLayers, HASH_ONLY_SINK } from "../../src/tree/index.ts";
import { STRICT_POLICY } from "../../src/tree/layer-policy.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { blobPath } from "../workload/fixtures/oci-writer.ts";
import { dir, file } from "../workload/fixtures/tar-writer.ts";
import { writeCase } from "./fixtures/oci-refusals.ts";

const tmp = (): string => mkdtempSync(join(tmpdir(), "cairn-unstaged-"));
/** Descriptors of this process open on `file` (other descriptors, e.g. the inflate thread's event loop, are not the layer's). */
const openOn = (file: string): number =>
  readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === file;
    } catch {
      return false; // closed since the listing
    }
  }).length;

function layout() {
  const d = tmp();
  const img = writeCase(join(d, "layout"), { layers: [{ entries: [dir("etc"), file("etc/motd", "hello\n", { mode: 0o644 })] }] });
  return { d, img, layoutDir: join(d, "layout"), blob: blobPath(join(d, "layout"), img.layers[0]!.digest) };
}

test("unstaged layers are opened, not copied, named by their open file until close, and checked as they are applied", async () => {
  const { d, img, layoutDir, blob } = layout();
  assert.equal(openOn(blob), 0);
  const src = await readOciSource({ layoutDir, manifestDigest: img.manifestDigest, stagingDir: join(d, "staging"), stageLayers: false });
  const layer = src.layers[0]!;
  assert.match(layer.path, /^\/proc\/self\/fd\/\d+$/);
  assert.ok(readFileSync(layer.path).equals(readFileSync(blob)), "the path reads the blob");
  assert.equal(openOn(blob), 1, "the layer file is held open"); // control for the count after close
  const staged = readdirSync(join(d, "staging", "blobs", "sha256"));
  assert.ok(!staged.includes(layer.digest.slice("sha256:".length)), "no copy of the layer in staging");
  const { tree } = await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: HASH_ONLY_SINK, recheckStored: true });
  assert.equal(tree.get("/etc/motd")?.type, "file");
  await src.close();
  await src.close();
  assert.equal(openOn(blob), 0, "close() closes the layer file");
  // control: the staged mode copies the layer
  const copied = await readOciSource({ layoutDir, manifestDigest: img.manifestDigest, stagingDir: join(d, "staging2") });
  assert.ok(readdirSync(join(d, "staging2", "blobs", "sha256")).includes(layer.digest.slice("sha256:".length)));
  await copied.close();
});

test("an unstaged layer whose bytes changed after it was opened is refused by the re-hash; one of another size when it is opened", async () => {
  const { d, img, layoutDir, blob } = layout();
  const src = await readOciSource({ layoutDir, manifestDigest: img.manifestDigest, stagingDir: join(d, "s1"), stageLayers: false });
  const b = readFileSync(blob);
  b[9] = b[9] === 3 ? 255 : 3; // the gzip header's OS byte: the tar inflates the same
  writeFileSync(blob, b); // same inode: the open file sees the change
  await assertCodeAsync(() => applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: HASH_ONLY_SINK, recheckStored: true }), "DIGEST_MISMATCH");
  await src.close();
  truncateSync(blob, b.length - 1);
  await assertCodeAsync(() => readOciSource({ layoutDir, manifestDigest: img.manifestDigest, stagingDir: join(d, "s2"), stageLayers: false }), "SIZE_MISMATCH");
  await assertCodeAsync(() => readOciSource({ layoutDir, manifestDigest: img.manifestDigest, stagingDir: join(d, "s3") }), "SIZE_MISMATCH");
});
