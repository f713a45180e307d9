/**
 * Streamed layer blobs and staged registry blobs (issue 16): the blob
 * streamed to a file is byte for byte the one built in memory (identity must
 * not change with the way it is built), a file that changes size while it is
 * written is refused rather than misframing the tar, a staged copy is
 * checked by size and digest as it is copied (the codes a whole read gave),
 * and a streamed blob is published write-once like bytes are. Each refusal
 * has its control.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import {
  BlobStaging,
  buildLayerBlob,
  buildLayerFromDirectory,
  foldLayers,
  LocalRegistry,
  manifestFor,
  withBlobStaging,
  writeLayerBlob,
  writeLayerFromDirectory,
  type LayerSpec,
} from "../../src/strata/index.ts";
import { readDirectory, readDirectoryStreamed, tarChunks, writeTar, type TarStreamEntry } from "../../src/tree/index.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { tempDir } from "./fixtures.ts";
import { hostTag, processAlive } from "../../src/store/index.ts";
import { sweepLeftovers } from "../../src/strata/blob-staging.ts";
import { sha256, signingKeyFromSeed } from "../../src/core/index.ts";

const key = signingKeyFromSeed(Buffer.alloc(32, 1));
const spec: LayerSpec = {
  name: "mixed",
  version: "1.0",
  arch: "noarch",
  abi: "none",
  install_layout: "prefix",
  user_selectable: true,
  provides: [],
  requires: [],
  builder: "cairn test",
};

/** A directory with a multi-chunk file (random, then a run of one byte, then random), a long (pax) name, an empty file and a symlink. */
function mixedDir(): string {
  const d = join(tempDir("cairn-blob-file-"), "src");
  mkdirSync(join(d, "a", "b"), { recursive: true });
  writeFileSync(join(d, "a", "b", "big"), Buffer.concat([randomBytes(2_500_000), Buffer.alloc(3_000_000, 7), randomBytes(777_777)]));
  writeFileSync(join(d, "a", "empty"), "");
  writeFileSync(join(d, "n".repeat(140)), "long name");
  symlinkSync("b/big", join(d, "a", "link"));
  return d;
}

test("a blob streamed to a file is the blob built in memory, byte for byte; control: other content is another blob", async () => {
  const d = mixedDir();
  await withBlobStaging(async (s) => {
    const mem = buildLayerBlob(readDirectory(d));
    const file = await writeLayerBlob(readDirectoryStreamed(d), s.path("blob"));
    assert.ok(readFileSync(file.path).equals(mem.blob));
    assert.equal(file.sha256, mem.sha256);
    assert.equal(file.size, mem.size);
    assert.equal(file.diff_id, mem.diff_id);
    assert.deepEqual([...file.content_manifest], [...mem.content_manifest]);
    assert.deepEqual([...file.symlinks], [...mem.symlinks]);
    assert.equal(statSync(file.path).mode & 0o777, 0o600);
    const built = await writeLayerFromDirectory(d, spec, s.path("layer"));
    assert.deepEqual(built.manifest, buildLayerFromDirectory(d, spec).manifest, "the streamed build and the in-memory build sign the same manifest");
    writeFileSync(join(d, "a", "empty"), "x");
    assert.notEqual((await writeLayerBlob(readDirectoryStreamed(d), s.path("other"))).sha256, mem.sha256);
  });
});

test("a file that yields more or fewer bytes than its header promised is refused (SOURCE_CHANGED); control: exactly its size", () => {
  const entry = (size: number, data: Buffer): TarStreamEntry => ({ type: "file", path: "f", mode: 0o644, content: { size, chunks: () => [data] } });
  assertCode(() => [...tarChunks([entry(4, Buffer.from("abc"))])], "SOURCE_CHANGED");
  assertCode(() => [...tarChunks([entry(2, Buffer.from("abc"))])], "SOURCE_CHANGED");
  const ok = Buffer.concat([...tarChunks([entry(3, Buffer.from("abc"))])]);
  assert.ok(ok.equals(writeTar([{ type: "file", path: "f", mode: 0o644, data: Buffer.from("abc") }])));
});

test("a file of the directory that grows after the walk is refused while the blob streams (SOURCE_CHANGED); control: unchanged", async () => {
  const d = mixedDir();
  await withBlobStaging(async (s) => {
    const entries = readDirectoryStreamed(d);
    writeFileSync(join(d, "a", "empty"), "grown");
    await assertCodeAsync(() => writeLayerBlob(entries, s.path("grown")), "SOURCE_CHANGED");
    assert.equal(existsSync(join(s.dir, "1-grown")), false, "nothing is left of the refused blob");
    await writeLayerBlob(readDirectoryStreamed(d), s.path("ok"));
  });
});

test("a staged registry blob is checked as it is copied: SIZE_MISMATCH, DIGEST_MISMATCH; control: the intact blob; the staging is removed", async () => {
  const reg = LocalRegistry.init(join(tempDir("cairn-blob-stage-"), "registry"));
  const b = buildLayerBlob([{ type: "file", path: "x", mode: 0o644, data: randomBytes(3 * 1024 * 1024) }]);
  const doc = reg.publishLayer(b.blob, manifestFor(spec, b), [key]);
  const m = doc.value;
  let dir = "";
  await withBlobStaging(async (s) => {
    dir = s.dir;
    assert.equal(statSync(s.dir).mode & 0o777, 0o700);
    const staged = reg.stageBlob(m.sha256, m.size, s);
    assert.ok(readFileSync(staged).equals(b.blob), "control: the intact blob is copied");
    assert.equal(statSync(staged).mode & 0o777, 0o600);
    reg.checkBlob(m.sha256, m.size);
    const path = reg.blobPath(m.sha256);
    const flipped = Buffer.from(b.blob);
    flipped[flipped.length - 5]! ^= 1;
    writeFileSync(path, flipped);
    assertCode(() => reg.stageBlob(m.sha256, m.size, s), "DIGEST_MISMATCH");
    assertCode(() => reg.checkBlob(m.sha256, m.size), "DIGEST_MISMATCH");
    writeFileSync(path, Buffer.concat([b.blob, Buffer.from("x")]));
    assertCode(() => reg.stageBlob(m.sha256, m.size, s), "SIZE_MISMATCH");
    writeFileSync(path, b.blob.subarray(1));
    assertCode(() => reg.checkBlob(m.sha256, m.size), "SIZE_MISMATCH");
    assertCode(() => reg.stageBlob(m.sha256, 9 * 1024 * 1024 * 1024, s), "LIMIT_EXCEEDED");
  });
  assert.equal(existsSync(dir), false, "the staging directory is removed afterwards");
});

test("a streamed blob is published write-once from its file: identical bytes kept, other bytes refused; control: first publication", async () => {
  const reg = LocalRegistry.init(join(tempDir("cairn-blob-pub-"), "registry"));
  const d = mixedDir();
  const s = BlobStaging.create();
  try {
    const built = await writeLayerFromDirectory(d, spec, s.path("layer"));
    reg.publishLayer({ path: built.blob.path }, built.manifest, [key]);
    assert.ok(readFileSync(reg.blobPath(built.manifest.sha256)).equals(readFileSync(built.blob.path)), "control: published from the file");
    reg.publishLayer({ path: built.blob.path }, built.manifest, [key]); // the same bytes again: kept
    const other = s.path("other");
    writeFileSync(other, randomBytes(built.blob.size));
    assertCode(() => reg.publishLayer({ path: other }, built.manifest, [key]), "DIGEST_MISMATCH");
    // Another file under the published blob's name (a damaged copy) is refused, never replaced.
    writeFileSync(reg.blobPath(built.manifest.sha256), randomBytes(built.blob.size));
    assertCode(() => reg.publishLayer({ path: built.blob.path }, built.manifest, [key]), "REGISTRY_INVALID");
  } finally {
    s.dispose();
  }
});

test("a fold refused mid-file (a truncated gzip stream) leaves no partial spill file and publishes nothing; control: the intact fold spills by digest", async () => {
  const reg = LocalRegistry.init(join(tempDir("cairn-blob-spill-"), "registry"));
  const trust = { keys: [key], allowUnsignedOffline: false };
  const publish = (name: string, b: ReturnType<typeof buildLayerBlob>) => reg.publishLayer(b.blob, manifestFor({ ...spec, name }, b), [key]).value.id;
  const big = buildLayerBlob([{ type: "file", path: "big", mode: 0o644, data: randomBytes(4 * 1024 * 1024) }]);
  const cut = big.blob.subarray(0, big.blob.length - 1024 * 1024);
  const truncated = publish("cut", { ...big, blob: cut, sha256: sha256(cut), size: cut.length });
  const whole = publish("whole", big);
  const small = publish("small", buildLayerBlob([{ type: "file", path: "small", mode: 0o644, data: Buffer.from("s") }]));
  const s = BlobStaging.create();
  try {
    await assertCodeAsync(() => foldLayers(reg, [truncated, small], { ...spec, name: "f1" }, trust, false, s), "TAR_INVALID");
    const left = readdirSync(s.dir, { recursive: true }).map(String);
    assert.deepEqual(
      left.filter((n) => n.includes("partial-")),
      [],
      `no partial file is left: ${left.join(", ")}`,
    );
    const ok = await foldLayers(reg, [whole, small], { ...spec, name: "f2" }, trust, false, s);
    assert.equal(ok.manifest.content_manifest.size, 2);
    const spilled = readdirSync(s.dir, { recursive: true }).map(String);
    assert.ok(
      spilled.some((n) => n.endsWith(big.content_manifest.get("/big")!.slice("sha256:".length))),
      "control: the file was spilled under its digest",
    );
  } finally {
    s.dispose();
  }
});

test("a killed command's blob staging is removed by the next one; live, foreign, other-host and symlinked names are left alone", () => {
  const parent = tempDir("cairn-blob-sweep-");
  const tag = hostTag();
  // a pid that is surely gone: a child that has exited
  const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
  assert.ok(!processAlive(dead));
  const leftover = join(parent, `cairn-blobs-${tag}-${dead}-AbC123`);
  mkdirSync(leftover);
  writeFileSync(join(leftover, "1-blob"), "staged bytes");
  const live = join(parent, `cairn-blobs-${tag}-${process.pid}-LiVe12`);
  mkdirSync(live);
  const otherHost = join(parent, `cairn-blobs-00000000-${dead}-OtHer1`);
  mkdirSync(otherHost);
  const foreign = join(parent, "cairn-blobs-notours");
  mkdirSync(foreign);
  const canary = join(parent, "canary");
  mkdirSync(canary);
  writeFileSync(join(canary, "keep"), "keep");
  symlinkSync(canary, join(parent, `cairn-blobs-${tag}-${dead}-SyMlnk`));

  const s = BlobStaging.create(parent);
  assert.ok(!existsSync(leftover), "the dead command's directory is gone");
  for (const kept of [live, otherHost, foreign, join(canary, "keep"), join(parent, `cairn-blobs-${tag}-${dead}-SyMlnk`)]) assert.ok(existsSync(kept), kept);
  // control: the new directory is private, named after this process, and removed by dispose
  assert.ok(s.dir.startsWith(join(parent, `cairn-blobs-${tag}-${process.pid}-`)));
  assert.equal(statSync(s.dir).mode & 0o777, 0o700);
  s.dispose();
  assert.ok(!existsSync(s.dir));
  assert.equal(sweepLeftovers(parent), 0, "nothing else matches");
});
