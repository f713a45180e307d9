// Build provenance (issue 13 item 5): a layer manifest records how it was
// built (recipe digest, build environment, builder, built_at, sources sorted
// and unique), signed with the layer; `cairn lock provenance` shows it from the
// manifests the lockfile embeds. Each refusal has a passing control.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CairnError, canonicalize, sha256, signEnvelope, verifyEnvelope, generateSigningKey, type JsonModel } from "../../src/core/index.ts";
import { buildLayerBlob, layerManifestToModel, manifestFor, parseLayerManifest, LAYER_MANIFEST_TYPE, type LayerSpec } from "../../src/strata/index.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCode } from "../helpers/errors.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { exampleRegistry, resolveWithCli, tempDir } from "./fixtures.ts";

const D = (c: string): string => `sha256:${c.repeat(64)}`;
const blob = buildLayerBlob([{ type: "file", path: "bin/tool", mode: 0o755, data: Buffer.from("#!/bin/sh\n") }]);
const SPEC: LayerSpec = {
  name: "tool",
  version: "1.0",
  arch: "noarch",
  abi: "none",
  install_layout: "rootfs",
  user_selectable: true,
  provides: [],
  requires: [],
  builder: "cairn test",
};

test("recorded build: sources sorted by bytes and de-duplicated, every field read back equal", () => {
  const m = manifestFor(
    {
      ...SPEC,
      recorded: { recipe: D("a") as never, environment: { base_digest: D("b") as never }, built_at: "2026-01-02T03:04:05Z", sources: ["z", "B", "a", "z"] },
    },
    blob,
  );
  assert.deepEqual(m.build.sources, ["B", "a", "z"]);
  const model = layerManifestToModel(m);
  assert.deepEqual(layerManifestToModel(parseLayerManifest(JSON.parse(JSON.stringify(model)) as JsonModel)), model);
  // Control: without recorded provenance the manifest is what it was (no new keys), so rebuilds stay byte-identical.
  assert.deepEqual(Object.keys(layerManifestToModel(manifestFor(SPEC, blob)).build as object).sort(), ["builder", "diff_id"]);
});

test("hostile recorded builds are refused with the field's path; control: the canonical one reads", () => {
  const good = layerManifestToModel(
    manifestFor({ ...SPEC, recorded: { environment: { lock_id: D("c") as never }, built_at: "2026-01-02T03:04:05Z", sources: ["a", "b"] } }, blob),
  );
  parseLayerManifest(good as JsonModel);
  const edit = (build: object): JsonModel => JSON.parse(JSON.stringify({ ...good, build: { ...(good.build as object), ...build } })) as JsonModel;
  /** Every issue of the refusal (one issue is thrown as itself, with its own code). */
  const issuePath = (build: object): string[] => {
    try {
      parseLayerManifest(edit(build));
    } catch (e) {
      assert.ok(e instanceof CairnError);
      return e.issues.length > 0 ? e.issues.map((i) => `${i.code} ${i.path}`) : [`${e.code} ${e.path}`];
    }
    assert.fail("accepted");
  };
  assert.deepEqual(issuePath({ sources: ["b", "a"] }), ["LAYER_INVALID /build/sources"]);
  assert.deepEqual(issuePath({ sources: ["a", "a"] }), ["LAYER_INVALID /build/sources"]);
  assert.deepEqual(issuePath({ built_at: "2026-02-30T00:00:00Z" }), ["MODEL_VALUE /build/built_at"]);
  assert.deepEqual(issuePath({ built_at: "2026-01-02T03:04:05.123Z" }), ["MODEL_VALUE /build/built_at"]);
  assert.deepEqual(issuePath({ environment: {} }), ["MODEL_VALUE /build/environment"]);
  assert.deepEqual(issuePath({ environment: { lock_id: "sha256:ABC" } }), ["DIGEST_INVALID /build/environment/lock_id"]);
  assert.deepEqual(issuePath({ recipe: "md5:x" }), ["DIGEST_INVALID /build/recipe"]);
  assert.deepEqual(issuePath({ sources: Array.from({ length: 257 }, (_, i) => `s${String(i).padStart(3, "0")}`) }), ["LIMIT_EXCEEDED /build/sources"]);
  assert.deepEqual(issuePath({ signed_by_whom: "x" }), ["MODEL_UNKNOWN_FIELD /build/signed_by_whom"]);
  // The builder side refuses the same things before anything is signed.
  assertCode(() => manifestFor({ ...SPEC, recorded: { built_at: "yesterday" } }, blob), "USAGE");
  assertCode(() => manifestFor({ ...SPEC, recorded: { environment: {} } }, blob), "USAGE");
});

test("the recorded build is signed with the layer: an edited built_at breaks the signature; control: the signed payload verifies", () => {
  const key = generateSigningKey();
  const model = layerManifestToModel(
    manifestFor({ ...SPEC, recorded: { built_at: "2026-01-02T03:04:05Z", sources: ["git+https://example.org/x@abc"] } }, blob),
  );
  const env = signEnvelope(LAYER_MANIFEST_TYPE, Buffer.from(canonicalize(model as never)), [key]);
  assert.equal(verifyEnvelope(env, LAYER_MANIFEST_TYPE, [key]).keyId, key.keyId);
  const edited = { ...model, build: { ...(model.build as object), built_at: "2020-01-01T00:00:00Z" } };
  const forged = { ...env, payload: Buffer.from(canonicalize(edited as never)).toString("base64") };
  assertCode(() => verifyEnvelope(forged, LAYER_MANIFEST_TYPE, [key]), "SIGNATURE_INVALID");
});

test("cairn layer build records --recipe, --build-base, --build-lock-id, --built-at, --source; lock provenance shows them", async () => {
  const ex = exampleRegistry();
  const src = tempDir("cairn-prov-src-");
  mkdirSync(join(src, "usr", "bin"), { recursive: true });
  writeFileSync(join(src, "usr", "bin", "hello"), "#!/bin/sh\necho hello\n", { mode: 0o755 });
  const recipe = join(src, "..", `${src.split("/").pop()}.recipe.sh`);
  writeFileSync(recipe, "make install DESTDIR=$OUT\n");
  const args = ["layer", "build", src, "--name", "hello", "--version", "1.0", "--provides", "hello@1.0", "--registry", ex.registry];
  const provenance = [
    "--recipe",
    recipe,
    "--build-base",
    D("b"),
    "--build-lock-id",
    D("c"),
    "--built-at",
    "now",
    "--source",
    "https://example.org/hello-1.0.tar.gz",
    "--source",
    "git+https://example.org/hello@v1.0",
    "--source",
    "https://example.org/hello-1.0.tar.gz",
  ];
  const built = await runCli([...args, ...provenance, "--key", join(ex.root, "registry.key"), "--json"], {
    ...process.env,
    CAIRN_NOW: "2026-03-01T12:00:00.000Z",
  });
  assert.equal(built.code, 0, built.stderr);
  const build = JSON.parse(built.stdout).build;
  assert.deepEqual(build.sources, ["git+https://example.org/hello@v1.0", "https://example.org/hello-1.0.tar.gz"]);
  assert.equal(build.recipe, sha256("make install DESTDIR=$OUT\n"));
  assert.deepEqual(build.environment, { lock_id: D("c"), base_digest: D("b") });
  assert.equal(build.built_at, "2026-03-01T12:00:00Z");
  const bad = await runCli([...args, "--built-at", "March", "--key", join(ex.root, "registry.key")]);
  assert.equal(bad.code, 2, "a malformed --built-at is a usage error");

  const profile = join(ex.root, "hello.yaml");
  writeFileSync(profile, 'name: hello\nversion: "1"\nbase:\n  os: debian12\n  arch: x86_64\nsoftware:\n  - hello@1.0\n  - python@3.12\n');
  const lock = join(ex.root, "hello.lock");
  const r = await resolveWithCli(ex, profile, lock, { env: { ...process.env, CAIRN_NOW: "2026-03-01T12:00:00.000Z" } });
  assert.equal(r.code, 0, r.stderr);
  const p = await runCli(["lock", "provenance", lock, "--pub", join(ex.root, "lock.pub")]);
  assert.equal(p.code, 0, p.stderr);
  assert.match(
    p.stdout,
    /hello-1\.0-none-noarch[^\n]*\n {7}builder {2}cairn [^\n]*\n {7}recipe {3}sha256:[0-9a-f]{64}\n {7}built in lock sha256:c{64}, base sha256:b{64}\n {7}built at 2026-03-01T12:00:00Z\n {7}source {3}git\+https/,
  );
  const j = JSON.parse((await runCli(["lock", "provenance", lock, "--pub", join(ex.root, "lock.pub"), "--json"])).stdout);
  const hello = j.layers.find((l: { id: string }) => l.id === "hello-1.0-none-noarch");
  assert.equal(hello.build.built_at, "2026-03-01T12:00:00Z");
  // Control: a layer built without the flags shows only its builder.
  const python = j.layers.find((l: { id: string }) => l.id.startsWith("python-"));
  assert.deepEqual(Object.keys(python.build).sort(), ["builder", "diff_id"]);
  void PROJECT_ROOT;
});
