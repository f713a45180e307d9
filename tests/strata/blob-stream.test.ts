// Strata blobs are gunzipped as a stream through the tar gate, bounded as
// they flow (issue 16, item 3): a gzip bomb is refused mid-stream by a named
// limit (layer.max_expansion_ratio, layer.max_unpacked_bytes) and a truncated
// stream by TAR_INVALID, by `layer fold` and by lock verify's content check,
// and neither leaves anything in the registry. Each has a control that
// passes. The peak memory of the bomb is measured in
// tests/faults/memory-budget.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { sha256, type Sha256Digest } from "../../src/core/index.ts";
import {
  EXPANSION_RATIO_AFTER_BYTES,
  LocalRegistry,
  buildLayerBlob,
  checkLayerContents,
  foldLayers,
  manifestFor,
  readLayerBlobs,
  type LayerBlob,
  type LayerSpec,
} from "../../src/strata/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { writeTar } from "../workload/fixtures/tar-writer.ts";
import { exampleRegistry } from "./fixtures.ts";
import { CHUNK, zeroFilesBlob } from "./gzip-bomb.ts";

const MiB = 1024 * 1024;

const spec = (name: string): LayerSpec => ({
  name,
  version: "1.0",
  arch: "noarch",
  abi: "none",
  install_layout: "rootfs",
  user_selectable: true,
  builder: "test",
  provides: [],
  requires: [],
});
const idOf = (name: string): string => `${name}-1.0-none-noarch`;

/** Every file name under `dir`, recursively, sorted (what a refusal must leave unchanged). */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((p) => join(dir, p))
    .sort();
}

function setup() {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const trust = { keys: [ex.registryKey], allowUnsignedOffline: false };
  const publish = (name: string, blob: LayerBlob) => reg.publishLayer(blob.blob, manifestFor(spec(name), blob), [ex.registryKey]).value;
  const fold = (names: readonly string[]) => foldLayers(reg, names.map(idOf), spec("folded"), trust);
  const contents = (name: string) => {
    const m = reg.readLayer(idOf(name)).value;
    return checkLayerContents(reg.readBlob(m.sha256, m.size), m, `/layers/${name}`);
  };
  return { publish, fold, contents, root: ex.registry };
}

const small = (): LayerBlob =>
  buildLayerBlob([
    { type: "dir", path: "etc", mode: 0o755 },
    { type: "file", path: "etc/motd", mode: 0o644, data: Buffer.from("hi") },
  ]);

test("a gzip bomb (3.9 MB inflating to 3.75 GiB) is refused mid-stream by layer.max_expansion_ratio; nothing is written", async () => {
  const { publish, fold, contents, root } = setup();
  const bomb = zeroFilesBlob(2, 30 * CHUNK, false);
  assert.ok(bomb.size < 5 * MiB, `the bomb is ${bomb.size} bytes`);
  publish("base", small());
  publish("bomb", bomb);
  const before = listing(root);
  const foldErr = await assertCodeAsync(() => fold(["base", "bomb"]), "LIMIT_EXCEEDED");
  assert.match(foldErr.message, /layer\.max_expansion_ratio/);
  const verifyErr = await assertCodeAsync(() => contents("bomb"), "LIMIT_EXCEEDED");
  assert.match(verifyErr.message, /layer\.max_expansion_ratio/);
  assert.deepEqual(listing(root), before, "a refused fold leaves the registry as it was");
});

test("control: the same shape under the ratio's threshold (60 MiB of zeros) folds and verifies", async () => {
  const { publish, fold, contents } = setup();
  const zeros = zeroFilesBlob(1, 60 * MiB);
  assert.ok(60 * MiB < EXPANSION_RATIO_AFTER_BYTES);
  publish("base", small());
  publish("zeros", zeros);
  await contents("zeros");
  const r = await fold(["base", "zeros"]);
  assert.equal(r.manifest.content_manifest.get("/zero-0"), zeros.content_manifest.get("/zero-0"));
});

test("control: a blob past the ratio's threshold that inflates like real data (66 MiB stored, ratio about 1) verifies", async () => {
  const { publish, contents } = setup();
  const data = Buffer.alloc(66 * MiB, 0x5a);
  assert.ok(data.length > EXPANSION_RATIO_AFTER_BYTES);
  const tar = writeTar([{ name: "data.bin", type: "file", mode: 0o644, data }]);
  const blob = gzipSync(tar, { level: 0 }); // stored deflate blocks: as many bytes out as in
  const layer: LayerBlob = {
    blob,
    sha256: sha256(blob),
    size: blob.length,
    diff_id: sha256(tar),
    content_manifest: new Map<string, Sha256Digest>([["/data.bin", sha256(data)]]),
    symlinks: new Map(),
    whiteouts: [],
  };
  publish("random", layer);
  await contents("random");
});

test("layer.max_unpacked_bytes is checked as bytes flow; control: the default admits the same blob", async () => {
  const zeros = zeroFilesBlob(1, 60 * MiB);
  const input = [{ blob: zeros.blob, expected: zeros, where: "/layers/zeros" }];
  const err = await assertCodeAsync(() => readLayerBlobs(input, { maxUnpacked: 32 * MiB, keepContent: false }), "LIMIT_EXCEEDED");
  assert.match(err.message, /layer\.max_unpacked_bytes/);
  const ok = await readLayerBlobs(input, { keepContent: false });
  assert.equal(ok.tree.get("/zero-0")?.type, "file");
  assert.equal(ok.content.size, 0, "keepContent: false keeps no bytes");
});

test("a truncated gzip stream is refused (TAR_INVALID) by fold and the content check; control: the whole blob passes", async () => {
  const { publish, fold, contents, root } = setup();
  const whole = buildLayerBlob([
    { type: "dir", path: "d", mode: 0o755 },
    { type: "file", path: "d/x", mode: 0o644, data: randomBytes(300_000) },
  ]);
  const cut = (bytes: number): LayerBlob => {
    const blob = whole.blob.subarray(0, whole.blob.length - bytes);
    return { ...whole, blob, sha256: sha256(blob), size: blob.length };
  };
  publish("base", small());
  publish("mid", cut(Math.floor(whole.blob.length / 2))); // cut inside the deflate data
  publish("trailer", cut(4)); // only the gzip trailer's length field is missing
  publish("whole", whole);
  const before = listing(root);
  for (const name of ["mid", "trailer"]) {
    await assertCodeAsync(() => fold(["base", name]), "TAR_INVALID");
    await assertCodeAsync(() => contents(name), "TAR_INVALID");
  }
  assert.deepEqual(listing(root), before);
  await contents("whole");
  assert.equal((await fold(["base", "whole"])).manifest.content_manifest.size, 2);
});
