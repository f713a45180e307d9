// OCI registries as layered-environment registries (issue 11, item 4):
// layers and formations published to oci://127.0.0.1:PORT/REPO on the real
// Distribution registry resolve and verify from another CAIRN_HOME, and the
// hostile cases (a signature by another key, a blob swapped in the
// registry's storage, a tag moved between search and fetch, a manifest
// planted under another layer's tag) are refused, each next to its control.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TOY_LAYERS, buildExampleRegistry, toySpec, type ExampleRegistry } from "../../examples/strata/build-registry.ts";
import { generateSigningKey, sha256, writeKeyPair, type Sha256Digest } from "../../src/core/index.ts";
import { RegistryClient } from "../../src/oci/index.ts";
import {
  LocalRegistry,
  layerDocumentBytes,
  OciLayerRegistry,
  artifactTag,
  buildLayerFromDirectory,
  foldLayers,
  parseCapability,
  parseOciRegistryUrl,
  readLockfile,
  searchRegistries,
  withBlobStaging,
  writeLayerFromDirectory,
} from "../../src/strata/index.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { assertStoreSound, countingFetch, tempDir } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools());
const PROFILE = join(PROJECT_ROOT, "examples/strata/profile.yaml");
const NOW = "2026-03-01T12:00:00.000Z";

/** Copies every layer and formation of a directory registry into `oci://…/repo`, signed by `key` (Ed25519 is deterministic: the same envelopes). */
async function mirror(ex: ExampleRegistry, url: string, storeDir: string): Promise<OciLayerRegistry> {
  const local = LocalRegistry.open(ex.registry);
  const oci = await OciLayerRegistry.open(url, { remote: { plainHttp: true, env: {}, cwd: "/" }, storeDir, create: true });
  for (const l of local.listLayers()) {
    const doc = await oci.publishLayer(local.readBlob(l.value.sha256, l.value.size), l.value, [ex.registryKey]);
    assert.equal(doc.envelopeSha256, l.envelopeSha256, "the same signed bytes as the directory registry");
  }
  for (const f of local.listFormations()) await oci.publishFormation(f.value, [ex.registryKey]);
  return oci;
}

/** The registry's own file for a blob (Distribution's filesystem storage). */
function storedBlob(reg: TestRegistry, digest: Sha256Digest): string {
  const hex = digest.slice("sha256:".length);
  return join(reg.dir, "storage", "docker", "registry", "v2", "blobs", "sha256", hex.slice(0, 2), hex, "data");
}

describe("OCI registries as layer registries", { skip }, () => {
  let reg: TestRegistry;
  let work: string;
  let ex: ExampleRegistry;
  let url: string;
  const open = (u: string, storeDir: string, fetch?: typeof globalThis.fetch) =>
    OciLayerRegistry.open(u, { remote: { plainHttp: true, env: {}, cwd: "/", fetch }, storeDir });
  const cli = (home: string, args: string[]) => runCli(args, { ...process.env, CAIRN_HOME: home, CAIRN_NOW: NOW });

  before(async () => {
    work = tempDir("layer-registry");
    reg = await TestRegistry.create(join(work, "registry"));
    ex = buildExampleRegistry(join(work, "example"));
    url = `oci://${reg.host}/layers`;
    await mirror(ex, url, join(work, "publisher-store"));
  });
  after(async () => {
    await reg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test("oci://HOST[:PORT]/REPO: a host and a repository, no tag, no digest", () => {
    assert.deepEqual(parseOciRegistryUrl("oci://127.0.0.1:5000/team/layers"), {
      host: "127.0.0.1:5000",
      repository: "team/layers",
      location: "oci://127.0.0.1:5000/team/layers",
    });
    for (const bad of ["oci://layers", "oci://127.0.0.1:5000/layers:1", `oci://h.io/l@sha256:${"a".repeat(64)}`, "oci://h.io/Layers", "oci://h.io/a/../b"])
      assertCode(() => parseOciRegistryUrl(bad), "REFERENCE_INVALID");
  });

  test("published to oci://127.0.0.1:PORT/layers, the example resolves and verifies from another CAIRN_HOME, with the same EnvironmentID", async () => {
    const home = join(work, "home-b");
    mkdirSync(home);
    const trust = ["--trust", `keyfile://${ex.root}/registry.pub`];
    // the CLI publishes too: one more layer, then search finds it in the registry
    const dir = join(work, "extra");
    mkdirSync(join(dir, "usr/local/bin"), { recursive: true });
    writeFileSync(join(dir, "usr/local/bin/extra"), "#!/bin/sh\necho extra\n", { mode: 0o755 });
    const pub = await cli(join(work, "home-a"), [
      "layer",
      "build",
      dir,
      "--name",
      "extra",
      "--version",
      "1.0",
      "--provides",
      "extra@1.0",
      "--registry",
      url,
      "--key",
      join(ex.root, "registry.key"),
      "--plain-http",
    ]);
    assert.equal(pub.code, 0, pub.stderr);
    const formation = ["formation", "build", "--name", "extras", "--version", "1.0", "--layer", "extra-1.0-none-noarch", "--registry", url, "--plain-http"];
    const f = await cli(join(work, "home-a"), [...formation, "--key", join(ex.root, "registry.key")]);
    assert.equal(f.code, 0, f.stderr + f.stdout);
    const search = await cli(home, ["search", "", "--registry", url, "--plain-http", "--json"]);
    assert.equal(search.code, 0, search.stderr);
    const hits = (JSON.parse(search.stdout) as { hits: { kind: string; name: string; versions: string[] }[] }).hits;
    assert.deepEqual(hits.find((h) => h.name === "python")?.versions, ["3.12.4", "3.11.9"]);
    assert.ok(hits.some((h) => h.name === "extra") && hits.some((h) => h.kind === "formation" && h.name === "bio-seq"));
    assert.deepEqual(hits.find((h) => h.kind === "formation" && h.name === "extras")?.versions, ["1.0"], "the formation built with the CLI");

    const lock = join(work, "oci.lock");
    const base = ["--base", `rootfs:${ex.rootfs}`, "--sign", join(ex.root, "lock.key")];
    const r = await cli(home, ["resolve", PROFILE, "--registry", url, ...trust, ...base, "--out", lock, "--plain-http", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const local = await cli(home, ["resolve", PROFILE, "--registry", ex.registry, ...trust, ...base, "--out", join(work, "dir.lock"), "--json"]);
    assert.equal(local.code, 0, local.stderr);
    const id = (JSON.parse(r.stdout) as { environment_id: string }).environment_id;
    assert.equal(id, (JSON.parse(local.stdout) as { environment_id: string }).environment_id, "one environment, wherever its layers were published");
    const lockfile = readLockfile(lock).lock;
    assert.equal(lockfile.verification_policy, "signed");

    const v = await cli(home, [
      "lock",
      "verify",
      lock,
      "--pub",
      join(ex.root, "lock.pub"),
      "--registry",
      url,
      ...trust,
      "--contents",
      "--plain-http",
      "--json",
    ]);
    assert.equal(v.code, 0, v.stderr);
    const out = JSON.parse(v.stdout) as { verified: boolean; layers_checked: number; contents_checked: number; layer_signatures_checked: boolean };
    assert.equal(out.verified, true);
    assert.equal(out.layers_checked, lockfile.layers.length);
    assert.equal(out.contents_checked, lockfile.layers.length);
    assert.equal(out.layer_signatures_checked, true);
    // every layer blob is now in home-b's store, by digest, and sound
    const stored = assertStoreSound(join(home, "store"));
    for (const l of lockfile.layers) assert.ok(stored.includes(l.sha256!), `${l.id} cached by digest`);
    // lock export opens the registry the same way: an OCI layout with the base and every layer
    const image = join(work, "exported");
    const e = await cli(home, [
      "lock",
      "export",
      lock,
      "--pub",
      join(ex.root, "lock.pub"),
      "--registry",
      url,
      "--base",
      `rootfs:${ex.rootfs}`,
      "--oci",
      image,
      "--plain-http",
      "--json",
    ]);
    assert.equal(e.code, 0, e.stderr + e.stdout);
    assert.ok(existsSync(join(image, "index.json")));
  });

  test("plain http only to loopback, as for pull: another host is REMOTE_INSECURE before any request", async () => {
    const home = join(work, "home-insecure");
    const r = await cli(home, ["search", "", "--registry", "oci://192.0.2.1:5000/layers", "--plain-http", "--json"]);
    assert.equal(r.code, 1);
    assert.equal((JSON.parse(r.stdout) as { error: { code: string } }).error.code, "REMOTE_INSECURE");
    const ok = await cli(home, ["search", "", "--registry", url, "--plain-http", "--json"]);
    assert.equal(ok.code, 0, "control: the loopback registry");
  });

  test("a blob fetched once is read from the store afterwards: no second blob request", async () => {
    const storeDir = join(work, "cache-store");
    const counted = countingFetch();
    const oci = await open(url, storeDir, counted.fetch);
    const m = oci.readLayer("tool-a-1.0-none-noarch").value;
    const blobGets = () => counted.requests.filter((q) => q.method === "GET" && q.path.endsWith(`/blobs/${m.sha256}`)).length;
    assert.equal(sha256(await oci.readBlob(m.sha256, m.size)), m.sha256);
    assert.equal(blobGets(), 1, "control: the first read fetched it");
    assert.equal(sha256(await oci.readBlob(m.sha256, m.size)), m.sha256);
    assert.equal(blobGets(), 1, "the second read came from the store");
  });

  test("layer fold reads its sources from an OCI registry (verified first) and publishes the fold to it, the same bytes as from the directory", async () => {
    const oci = await open(url, join(work, "fold-store"));
    const ids = ["tool-a-1.0-none-noarch", "tool-b-1.0-none-noarch"];
    const spec = { ...toySpec(TOY_LAYERS[5]!), name: "tools", version: "1.0" };
    await assertCodeAsync(() => foldLayers(oci, ids, spec, { keys: [generateSigningKey()], allowUnsignedOffline: false }), "TRUST_REFUSED");
    const folded = await foldLayers(oci, ids, spec, { keys: [ex.registryKey], allowUnsignedOffline: false });
    const fromDir = await foldLayers(LocalRegistry.open(ex.registry), ids, spec, { keys: [ex.registryKey], allowUnsignedOffline: false });
    assert.equal(folded.manifest.sha256, fromDir.manifest.sha256, "control: the same fold from the directory registry");
    await oci.publishLayer(folded.blob.blob, folded.manifest, [ex.registryKey]);
    assert.equal((await open(url, join(work, "fold-store"))).readLayer(folded.manifest.id).value.sha256, folded.manifest.sha256);
  });

  test("a layer streamed to a file is pushed from it in chunks and staged back checked (issue 16); control: a file with other bytes is refused", async () => {
    const oci = await open(url, join(work, "stream-store"));
    const src = join(work, "stream-src");
    mkdirSync(join(src, "bin"), { recursive: true });
    writeFileSync(join(src, "bin", "big"), Buffer.alloc(20 * 1024 * 1024 + 3, 5)); // over the 8 MiB push chunk
    const spec = { ...toySpec(TOY_LAYERS[5]!), name: "streamed", version: "1.0" };
    await withBlobStaging(async (s) => {
      const built = await writeLayerFromDirectory(src, spec, s.path("layer"));
      const other = s.path("other");
      writeFileSync(other, Buffer.alloc(built.blob.size, 1));
      await assertCodeAsync(() => Promise.resolve(oci.publishLayer({ path: other }, built.manifest, [ex.registryKey])), "DIGEST_MISMATCH");
      await oci.publishLayer({ path: built.blob.path }, built.manifest, [ex.registryKey]);
      const fresh = await open(url, join(work, "stream-store-2"));
      await fresh.checkBlob(built.manifest.sha256, built.manifest.size);
      const staged = await fresh.stageBlob(built.manifest.sha256, built.manifest.size, s);
      assert.ok(readFileSync(staged).equals(readFileSync(built.blob.path)), "control: the pushed blob comes back byte for byte");
    });
  });

  test("a layer signed by another key is refused by resolve against --trust; trusting that key accepts it", async () => {
    const rogueUrl = `oci://${reg.host}/rogue`;
    const rogueKey = generateSigningKey();
    writeKeyPair(join(work, "rogue"), rogueKey);
    const dir = join(work, "rogue-layer");
    mkdirSync(dir);
    writeFileSync(join(dir, "payload"), "not from the registry's builder\n");
    const built = buildLayerFromDirectory(dir, {
      name: "tool-a",
      version: "9.0",
      provides: [parseCapability("tool-a@9.0")],
      requires: [],
      arch: "noarch",
      abi: "none",
      install_layout: "rootfs",
      user_selectable: true,
      builder: "a stranger",
    });
    const oci = await OciLayerRegistry.open(rogueUrl, { remote: { plainHttp: true, env: {}, cwd: "/" }, storeDir: join(work, "rogue-store"), create: true });
    await oci.publishLayer(built.blob.blob, built.manifest, [rogueKey]);
    const profile = join(work, "rogue.yaml");
    writeFileSync(profile, "name: r\nbase: {os: debian12}\nsoftware: [tool-a@9.0]\n");
    const home = join(work, "home-rogue");
    const args = (pubKey: string) => [
      "resolve",
      profile,
      "--registry",
      rogueUrl,
      "--trust",
      `keyfile://${pubKey}`,
      "--out",
      join(work, "rogue.lock"),
      "--plain-http",
      "--json",
    ];
    const refused = await cli(home, args(join(ex.root, "registry.pub")));
    assert.equal(refused.code, 1);
    assert.equal((JSON.parse(refused.stdout) as { error: { code: string } }).error.code, "TRUST_REFUSED");
    const accepted = await cli(home, args(join(work, "rogue.pub")));
    assert.equal(accepted.code, 0, `control: ${accepted.stderr}${accepted.stdout}`);
  });

  test("a blob swapped in the registry's storage is refused while it streams and never stored; the intact blob verifies", async () => {
    const oci = await open(url, join(work, "swap-ok-store"));
    const m = oci.readLayer("numpy-2.0.1-none-noarch").value;
    const file = storedBlob(reg, m.sha256);
    assert.ok(existsSync(file), "the registry keeps the blob where Distribution does");
    assert.equal(sha256(await oci.readBlob(m.sha256, m.size)), m.sha256, "control: the intact blob");
    const original = readFileSync(file);
    const swapped = Buffer.from(original);
    swapped[swapped.length - 1] = swapped[swapped.length - 1]! ^ 0xff; // same size, other bytes
    writeFileSync(file, swapped);
    try {
      const storeDir = join(work, "swap-store");
      const fresh = await open(url, storeDir);
      await assertCodeAsync(() => fresh.readBlob(m.sha256, m.size), "DIGEST_MISMATCH");
      assert.ok(!assertStoreSound(storeDir).includes(m.sha256), "nothing was stored under the digest");
    } finally {
      writeFileSync(file, original);
    }
  });

  test("a tag moved between search and fetch does not mix: the open snapshot keeps its layer and blob; a lock pinned before the move is refused after it", async () => {
    const movedUrl = `oci://${reg.host}/moved`;
    await mirror(ex, movedUrl, join(work, "moved-pub"));
    const lockPath = join(work, "moved.lock");
    const home = join(work, "home-moved");
    const trust = ["--trust", `keyfile://${ex.root}/registry.pub`];
    const r = await cli(home, [
      "resolve",
      PROFILE,
      "--registry",
      movedUrl,
      ...trust,
      "--base",
      `rootfs:${ex.rootfs}`,
      "--sign",
      join(ex.root, "lock.key"),
      "--out",
      lockPath,
      "--plain-http",
    ]);
    assert.equal(r.code, 0, r.stderr);
    const snapshot = await open(movedUrl, join(work, "moved-store"));
    const id = "numpy-2.0.1-none-noarch";
    const before = snapshot.readLayer(id);
    assert.ok(searchRegistries([snapshot], "numpy").length === 1);

    // Move numpy's tag to another layer with the same id (other bytes, signed by the same key), pushed by hand.
    const dir = join(work, "numpy-other");
    mkdirSync(join(dir, "opt/python/site-packages/numpy"), { recursive: true });
    writeFileSync(join(dir, "opt/python/site-packages/numpy/__init__.py"), "__version__ = 'other'\n");
    const b = before.value;
    const other = buildLayerFromDirectory(dir, {
      name: b.name,
      version: b.version,
      arch: b.arch,
      abi: b.abi,
      install_layout: b.install_layout,
      user_selectable: b.user_selectable,
      provides: b.provides,
      requires: b.requires,
      builder: "cairn example",
    });
    assert.equal(other.manifest.id, id);
    assert.notEqual(other.manifest.sha256, before.value.sha256);
    const rogue = await OciLayerRegistry.open(`oci://${reg.host}/scratch`, {
      remote: { plainHttp: true, env: {}, cwd: "/" },
      storeDir: join(work, "scratch"),
      create: true,
    });
    const moved = await rogue.publishLayer(other.blob.blob, other.manifest, [ex.registryKey]); // the artifact, in another repository
    const client = new RegistryClient({ host: reg.host, plainHttp: true });
    const scratchManifest = await client.resolve("scratch", artifactTag("layer", id));
    const bytes = (await client.fetchManifest("scratch", scratchManifest.digest, scratchManifest.size)).bytes;
    const document = layerDocumentBytes(moved.value, moved.envelope);
    await client.pushBlob("moved", sha256(document), document);
    await client.pushBlob("moved", moved.envelopeSha256, moved.envelopeBytes);
    await client.pushBlob("moved", other.manifest.sha256, other.blob.blob);
    await client.pushManifest("moved", artifactTag("layer", id), bytes, "application/vnd.oci.image.manifest.v1+json");

    // The snapshot taken before the move: the same manifest, and the blob that manifest names.
    assert.equal(snapshot.readLayer(id).payloadSha256, before.payloadSha256);
    assert.equal(sha256(await snapshot.readBlob(before.value.sha256, before.value.size)), before.value.sha256);
    assert.ok(!snapshot.hasBlob(other.manifest.sha256), "the moved tag's blob is not part of the snapshot");
    // Control: a new open sees the moved tag.
    assert.equal((await open(movedUrl, join(work, "moved-store-2"))).readLayer(id).value.sha256, other.manifest.sha256);
    // A lockfile resolved before the move pins the envelope: verification after it is refused.
    const v = await cli(home, ["lock", "verify", lockPath, "--pub", join(ex.root, "lock.pub"), "--registry", movedUrl, "--plain-http", "--json"]);
    assert.equal(v.code, 1);
    assert.equal((JSON.parse(v.stdout) as { error: { code: string } }).error.code, "DIGEST_MISMATCH");
  });

  test("a manifest planted under another layer's tag is refused when the registry is opened", async () => {
    const plantedUrl = `oci://${reg.host}/planted`;
    await mirror(ex, plantedUrl, join(work, "planted-pub"));
    const client = new RegistryClient({ host: reg.host, plainHttp: true });
    await open(plantedUrl, join(work, "planted-ok")); // control
    const a = await client.resolve("planted", artifactTag("layer", "tool-a-1.0-none-noarch"));
    const bytes = (await client.fetchManifest("planted", a.digest, a.size)).bytes;
    await client.pushManifest("planted", artifactTag("layer", "numpy-2.0.1-none-noarch"), bytes, "application/vnd.oci.image.manifest.v1+json");
    await assertCodeAsync(() => open(plantedUrl, join(work, "planted-store")), "REGISTRY_INVALID");
  });

  test("a layer artifact whose seed document is not the one its envelope gives is refused when the registry is opened", async () => {
    const editedUrl = `oci://${reg.host}/edited-doc`;
    await mirror(ex, editedUrl, join(work, "edited-pub"));
    const client = new RegistryClient({ host: reg.host, plainHttp: true });
    const tag = artifactTag("layer", "tool-a-1.0-none-noarch");
    const a = await client.resolve("edited-doc", tag);
    const manifest = JSON.parse((await client.fetchManifest("edited-doc", a.digest, a.size)).bytes.toString()) as {
      layers: { mediaType: string; digest: string; size: number }[];
    };
    assert.equal(manifest.layers.length, 3, "document, envelope, blob");
    const docRef = manifest.layers[0]!;
    const parts: Uint8Array[] = [];
    await client.fetchBlob("edited-doc", docRef.digest as Sha256Digest, docRef.size, (c) => void parts.push(c));
    const doc = JSON.parse(Buffer.concat(parts).toString()) as { version: string };
    assert.equal(doc.version, "1.0", "the seed's LayerManifest, readable as it is");
    await open(editedUrl, join(work, "edited-ok")); // control
    const edited = Buffer.from(`${JSON.stringify({ ...doc, version: "9.9" }, null, 2)}\n`);
    await client.pushBlob("edited-doc", sha256(edited), edited);
    manifest.layers[0] = { ...docRef, digest: sha256(edited), size: edited.length };
    await client.pushManifest("edited-doc", tag, Buffer.from(JSON.stringify(manifest)), "application/vnd.oci.image.manifest.v1+json");
    const e = await assertCodeAsync(() => open(editedUrl, join(work, "edited-store")), "REGISTRY_INVALID");
    assert.match(e.message, /field "version" differs/);
  });

  test("the same layer published again is accepted (same bytes); other bytes under a published id are refused", async () => {
    const oci = await open(url, join(work, "republish"));
    const local = LocalRegistry.open(ex.registry);
    const l = local.readLayer("tool-a-1.0-none-noarch");
    const blob = local.readBlob(l.value.sha256, l.value.size);
    assert.equal((await oci.publishLayer(blob, l.value, [ex.registryKey])).envelopeSha256, l.envelopeSha256, "control: identical bytes");
    await assertCodeAsync(() => Promise.resolve(oci.publishLayer(blob, l.value, [generateSigningKey()])), "REGISTRY_INVALID");
  });
});

describe("an OCI layer registry behind htpasswd auth", { skip }, () => {
  const USER = "layers";
  const SENTINEL = "S3ntinel-layer-pa55-91c2";
  let reg: TestRegistry;
  let work: string;
  before(async () => {
    work = tempDir("layer-registry-auth");
    reg = await TestRegistry.create(join(work, "registry"), { users: { [USER]: SENTINEL } });
  });
  after(async () => {
    await reg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test("credentials from REGISTRY_AUTH_FILE publish and search; without them REMOTE_AUTH; the password is never printed", async () => {
    const ex = buildExampleRegistry(join(work, "example"));
    const auth = join(work, "auth.json");
    writeFileSync(auth, JSON.stringify({ auths: { [reg.host]: { auth: Buffer.from(`${USER}:${SENTINEL}`).toString("base64") } } }));
    const url = `oci://${reg.host}/team/layers`;
    const env = (withAuth: boolean): NodeJS.ProcessEnv => ({
      HOME: work,
      CAIRN_HOME: join(work, "home"),
      CAIRN_NOW: NOW,
      ...(withAuth ? { REGISTRY_AUTH_FILE: auth } : {}),
    });
    const dir = join(work, "tool");
    mkdirSync(dir);
    writeFileSync(join(dir, "tool"), "tool\n");
    const build = [
      "layer",
      "build",
      dir,
      "--name",
      "tool",
      "--version",
      "1.0",
      "--registry",
      url,
      "--key",
      join(ex.root, "registry.key"),
      "--plain-http",
      "--json",
    ];
    const denied = await runCli(build, env(false));
    assert.equal(denied.code, 1);
    assert.equal((JSON.parse(denied.stdout) as { error: { code: string } }).error.code, "REMOTE_AUTH");
    const pub = await runCli(build, env(true));
    assert.equal(pub.code, 0, `control: ${pub.stderr}${pub.stdout}`);
    const s = await runCli(["search", "tool", "--registry", url, "--plain-http", "--json"], env(true));
    assert.equal(s.code, 0, s.stderr);
    assert.deepEqual(
      (JSON.parse(s.stdout) as { hits: { name: string }[] }).hits.map((h) => h.name),
      ["tool"],
    );
    for (const r of [denied, pub, s]) {
      const text = r.stdout + r.stderr;
      assert.ok(!text.includes(SENTINEL) && !text.includes(Buffer.from(`${USER}:${SENTINEL}`).toString("base64")), "the password never appears");
    }
  });
});
