// Issue 33, item 2 and "Bad input": the dependsOn closure, its install order,
// and the refusals (cycles, missing dependencies, a closure or metadata over
// its limit, a lock naming a feature outside the closure), each with a
// control. Features are real artifacts (manifest + layer tar) served from
// memory through featureArtifactOf, the code path the registry source uses;
// the CLI-peer tests are tests/registry/devcontainer-lock-peer.test.ts.
import { test } from "node:test";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { sha256, type Sha256Digest } from "../../src/core/index.ts";
import {
  applyDevcontainerLock,
  devcontainerLockPath,
  devcontainerLockText,
  featureArtifactOf,
  lockOfClosure,
  MAX_FEATURE_METADATA_BYTES,
  readLockFileState,
  resolveFeatureClosure,
  type FeatureSource,
} from "../../src/manifest/index.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { gzip, writeTar } from "../workload/fixtures/tar-writer.ts";

const R = "registry.test:5000/features";

/** An in-memory registry of features: `repo:tag` → metadata; counts manifest reads. */
function memorySource(features: Record<string, object>, options: { annotation?: boolean } = {}): FeatureSource & { reads: number } {
  const tags = new Map<string, Sha256Digest>();
  const manifests = new Map<Sha256Digest, Buffer>();
  const blobs = new Map<Sha256Digest, Buffer>();
  for (const [name, meta] of Object.entries(features)) {
    const layer = writeTar([{ name: "./devcontainer-feature.json", type: "file", data: Buffer.from(JSON.stringify(meta)) }]);
    blobs.set(sha256(layer), layer);
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        config: { mediaType: "application/vnd.devcontainers", digest: sha256(Buffer.alloc(0)), size: 0 },
        layers: [{ mediaType: "application/vnd.devcontainers.layer.v1+tar", digest: sha256(layer), size: layer.length }],
        ...(options.annotation === true ? { annotations: { "dev.containers.metadata": JSON.stringify(meta) } } : {}),
      }),
    );
    manifests.set(sha256(manifest), manifest);
    tags.set(`${R}/${name}`, sha256(manifest));
  }
  const source = {
    reads: 0,
    async resolve(ref: { registry: string; repository: string; tag: string | undefined; digest: Sha256Digest | undefined }) {
      if (ref.digest !== undefined) return ref.digest;
      const d = tags.get(`${ref.registry}/${ref.repository}:${ref.tag ?? "latest"}`);
      if (d === undefined) throw new (await import("../../src/core/index.ts")).CairnError("REMOTE_REFUSED", "not found", { path: ref.repository });
      return d;
    },
    async read(_ref: unknown, digest: Sha256Digest, feature: string) {
      source.reads++;
      const m = manifests.get(digest);
      if (m === undefined) throw new (await import("../../src/core/index.ts")).CairnError("REMOTE_REFUSED", "not found", { path: feature });
      return featureArtifactOf(m, digest, feature, async (d) => blobs.get(d)!);
    },
  };
  return source;
}

const f = (name: string, tag = "1"): string => `${R}/${name}:${tag}`;

test("closure: dependsOn pulls features in (once), installsAfter orders without pulling in; the order is the CLI's rounds", async () => {
  const source = memorySource({
    "a:1": { id: "a", version: "1.0.0", dependsOn: { [f("b")]: {}, [f("c")]: { x: "1" } } },
    "b:1": { id: "b", version: "2.0.0", dependsOn: { [f("c")]: { x: "1" } } },
    "c:1": { id: "c", version: "3.0.0" },
    "d:1": { id: "d", version: "4.0.0", installsAfter: [`${R}/a`, `${R}/zzz`] },
    "a:latest": { id: "a", version: "1.0.0" },
  });
  const closure = await resolveFeatureClosure(
    [
      [f("d"), {}],
      [f("a"), {}],
    ],
    { source },
  );
  assert.deepEqual(
    closure.order.map((n) => n.userFeatureId),
    [f("c"), f("b"), f("a"), f("d")],
  );
  const lock = lockOfClosure(closure);
  assert.deepEqual(Object.keys(lock.features), [f("a"), f("b"), f("c"), f("d")]);
  assert.deepEqual(lock.features[f("a")]!.dependsOn, [f("b"), f("c")]);
  assert.equal(lock.features[f("d")]!.dependsOn, undefined, "installsAfter is not dependsOn");
  assert.equal(lock.features[f("c")]!.version, "3.0.0");
});

test("closure refusals name the feature: a cycle, a dependency that cannot be fetched, a closure over its limit; controls pass", async () => {
  const cyc = memorySource({
    "a:1": { id: "a", dependsOn: { [f("b")]: {} } },
    "b:1": { id: "b", dependsOn: { [f("a")]: {} } },
  });
  const e = await assertCodeAsync(() => resolveFeatureClosure([[f("a"), {}]], { source: cyc }), "FEATURE_DEPENDENCY");
  assert.equal(e.path, f("a"));
  const missing = memorySource({ "a:1": { id: "a", dependsOn: { [f("gone")]: {} } } });
  const m = await assertCodeAsync(() => resolveFeatureClosure([[f("a"), {}]], { source: missing }), "FEATURE_DEPENDENCY");
  assert.equal(m.path, f("a"));
  assert.ok(m.message.includes(f("gone")), "names the missing dependency (a field name, a key of dependsOn)");
  const chain: Record<string, object> = {};
  for (let i = 0; i < 10; i++) chain[`n${i}:1`] = { id: `n${i}`, ...(i < 9 ? { dependsOn: { [f(`n${i + 1}`)]: {} } } : {}) };
  const long = memorySource(chain);
  await assertCodeAsync(() => resolveFeatureClosure([[f("n0"), {}]], { source: long, maxClosure: 9 }), "LIMIT_EXCEEDED");
  // controls: the same chain within the limit, no cycle, the dependency present
  assert.equal((await resolveFeatureClosure([[f("n0"), {}]], { source: long, maxClosure: 10 })).order.length, 10);
  const fine = memorySource({ "a:1": { id: "a", dependsOn: { [f("b")]: {} } }, "b:1": { id: "b" } });
  assert.equal((await resolveFeatureClosure([[f("a"), {}]], { source: fine })).order.length, 2);
});

test("overrideFeatureInstallOrder raises a feature of the closure (also one dependsOn pulled in); one outside the closure is refused", async () => {
  const source = memorySource({
    "a:1": { id: "a", dependsOn: { [f("c")]: {} } },
    "b:1": { id: "b" },
    "c:1": { id: "c" },
    "b:latest": { id: "b" },
    "c:latest": { id: "c" },
    "x:latest": { id: "x" },
  });
  const plain = await resolveFeatureClosure(
    [
      [f("a"), {}],
      [f("b"), {}],
    ],
    { source },
  );
  assert.deepEqual(
    plain.order.map((n) => n.userFeatureId),
    [f("b"), f("c"), f("a")],
  );
  const raised = await resolveFeatureClosure(
    [
      [f("a"), {}],
      [f("b"), {}],
    ],
    { source, overrideFeatureInstallOrder: [`${R}/c`] },
  );
  assert.deepEqual(
    raised.order.map((n) => n.userFeatureId),
    [f("c"), f("a"), f("b")],
  );
  await assertCodeAsync(() => resolveFeatureClosure([[f("a"), {}]], { source, overrideFeatureInstallOrder: [`${R}/x`] }), "FEATURE_DEPENDENCY");
});

test("metadata over featureMetadataBytes is refused before it is parsed, naming the feature; annotation and layer agree", async () => {
  const big = memorySource({ "a:1": { id: "a", pad: "x".repeat(MAX_FEATURE_METADATA_BYTES) } });
  const e = await assertCodeAsync(() => resolveFeatureClosure([[f("a"), {}]], { source: big }), "LIMIT_EXCEEDED");
  assert.equal(e.path, f("a"));
  assert.match(e.message, /featureMetadataBytes/);
  const viaNote = memorySource({ "a:1": { id: "a", version: "9.9.9" } }, { annotation: true });
  const viaLayer = memorySource({ "a:1": { id: "a", version: "9.9.9" } });
  const a = lockOfClosure(await resolveFeatureClosure([[f("a"), {}]], { source: viaNote }));
  const b = lockOfClosure(await resolveFeatureClosure([[f("a"), {}]], { source: viaLayer }));
  assert.equal(a.features[f("a")]!.version, "9.9.9");
  assert.equal(b.features[f("a")]!.version, "9.9.9");
});

test("a hostile metadata value is never echoed: only field names", async () => {
  const secret = "s3cr3t-value-never-printed";
  const source = memorySource({ "a:1": { id: "a", dependsOn: { [f("b")]: 42 } } });
  const e = await assertCodeAsync(() => resolveFeatureClosure([[f("a"), {}]], { source }), "MANIFEST_REFUSED");
  assert.ok(!e.message.includes("42"));
  const s2 = memorySource({ "a:1": { id: "a", installsAfter: secret } });
  const e2 = await assertCodeAsync(() => resolveFeatureClosure([[f("a"), {}]], { source: s2 }), "MANIFEST_REFUSED");
  assert.ok(!e2.message.includes(secret) && !(e2.hint ?? "").includes(secret));
});

test("a lockfile at ingest: its closure counts; an entry outside the closure, a missing dependency entry, a cycle are refused, naming the feature", () => {
  const D = (c: string): string => `sha256:${c.repeat(64)}`;
  const model = { image: "img", features: { [f("a")]: {} } };
  const entry = (name: string, c: string, deps?: string[]) => ({
    version: "1",
    resolved: `${R}/${name}@${D(c)}`,
    integrity: D(c),
    ...(deps ? { dependsOn: deps } : {}),
  });
  const bytes = (features: object) => Buffer.from(devcontainerLockText({ features } as never));
  const good = applyDevcontainerLock(model, "lock", bytes({ [f("a")]: entry("a", "a", [f("b")]), [f("b")]: entry("b", "b") }));
  assert.deepEqual(good.closure, [`${R}/b@${D("b")}`]);
  assert.equal(good.pinned, 1);
  assertCode(
    () => applyDevcontainerLock(model, "lock", bytes({ [f("a")]: entry("a", "a"), [f("z")]: entry("z", "c") })),
    "MANIFEST_MISMATCH",
    `/features/registry.test:5000~1features~1z:1`,
  );
  assertCode(() => applyDevcontainerLock(model, "lock", bytes({ [f("a")]: entry("a", "a", [f("b")]) })), "MANIFEST_MISMATCH");
  assertCode(
    () => applyDevcontainerLock(model, "lock", bytes({ [f("a")]: entry("a", "a", [f("b")]), [f("b")]: entry("b", "b", [f("a")]) })),
    "FEATURE_DEPENDENCY",
  );
  // a dependency entry whose resolved names another feature
  assertCode(() => applyDevcontainerLock(model, "lock", bytes({ [f("a")]: entry("a", "a", [f("b")]), [f("b")]: entry("q", "b") })), "MANIFEST_MISMATCH");
});

test("the lockfile's name follows the config's: .devcontainer.json → .devcontainer-lock.json", () => {
  assert.equal(devcontainerLockPath("/p/.devcontainer.json"), "/p/.devcontainer-lock.json");
  assert.equal(devcontainerLockPath("/p/.devcontainer/devcontainer.json"), "/p/.devcontainer/devcontainer-lock.json");
});

// Second pass (red team): a hostile registry must not hang pin, nor get INTERNAL.
/** A source serving one feature whose manifest and layer are given as they are. */
function rawSource(manifest: object, layer: Buffer): FeatureSource {
  const bytes = Buffer.from(JSON.stringify(manifest));
  return {
    resolve: async () => sha256(bytes),
    read: async (_ref, digest, feature) => featureArtifactOf(bytes, digest, feature, async () => layer),
  };
}
const manifestFor = (layer: Buffer, size: number = layer.length) => ({
  schemaVersion: 2,
  config: { mediaType: "application/vnd.devcontainers", digest: sha256(Buffer.alloc(0)), size: 0 },
  layers: [{ mediaType: "application/vnd.devcontainers.layer.v1+tar", digest: sha256(layer), size }],
});

test("second pass: a gzip bomb as a feature layer stops at featureLayerExpandedBytes, not after inflating it (control: a small gzip layer reads)", async () => {
  // members under the tar gate's fileSize, together over featureLayerExpandedBytes (64 MiB); the image limits would let 32 GiB through
  const zeros = Buffer.alloc(40 * 1024 * 1024);
  const bomb = gzip(
    writeTar([
      { name: "./a", type: "file", data: zeros },
      { name: "./b", type: "file", data: zeros },
      { name: "./devcontainer-feature.json", type: "file", data: "{}" },
    ]),
  );
  const e = await assertCodeAsync(() => resolveFeatureClosure([[f("a"), {}]], { source: rawSource(manifestFor(bomb), bomb) }), "LIMIT_EXCEEDED");
  assert.match(e.message, /featureLayerExpandedBytes/);
  const small = gzip(writeTar([{ name: "./devcontainer-feature.json", type: "file", data: '{"id":"a","version":"1"}' }]));
  const ok = await resolveFeatureClosure([[f("a"), {}]], { source: rawSource(manifestFor(small), small) });
  assert.equal(ok.order[0]!.oci!.metadata.version, "1");
});

test("second pass: a layer descriptor with a negative or fractional size is refused typed, naming the feature (never INTERNAL)", async () => {
  const layer = writeTar([{ name: "./devcontainer-feature.json", type: "file", data: "{}" }]);
  for (const size of [-1, 1.5]) {
    const e = await assertCodeAsync(() => resolveFeatureClosure([[f("a"), {}]], { source: rawSource(manifestFor(layer, size), layer) }), "MANIFEST_REFUSED");
    assert.equal(e.path, f("a"));
  }
});

test("second pass: a feature naming thousands of dependencies stops at max_feature_fetches (each would be a registry round trip)", async () => {
  const deps: Record<string, object> = {};
  for (let i = 0; i < 3000; i++) deps[`${R}/b:${i}`] = {};
  const tags: Record<string, object> = { "a:1": { id: "a", dependsOn: deps }, "b:latest": { id: "b" } };
  for (let i = 0; i < 3000; i++) tags[`b:${i}`] = { id: "b" };
  const source = memorySource(tags);
  const e = await assertCodeAsync(() => resolveFeatureClosure([[f("a"), {}]], { source }), "LIMIT_EXCEEDED");
  assert.match(e.message, /max_feature_fetches/);
  assert.ok(source.reads <= 1025, `stopped after ${source.reads} reads`);
});

test("second pass: a lockfile that is a dangling symlink is refused (IO_ERROR), not taken for no lockfile; a missing one is absent (control)", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-lockstate-"));
  try {
    const lock = join(dir, "devcontainer-lock.json");
    assert.equal(readLockFileState(lock).kind, "absent");
    symlinkSync(join(dir, "nowhere"), lock);
    assertCode(() => readLockFileState(lock), "IO_ERROR");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
