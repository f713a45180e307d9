// `cairn manifest pin` (issue 11, item 3, first half): a devcontainer.json
// naming an image and two features by tag, all pushed to the real registry,
// becomes a pinned file (comments kept) whose address `manifest ingest`
// reports with pinned: true, plus a devcontainer-lock.json in the
// devcontainers CLI format. Before pinning, ingest says unpinned (control).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256 } from "../../src/core/index.ts";
import { RegistryClient } from "../../src/oci/index.ts";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { file, writeTar } from "../workload/fixtures/tar-writer.ts";
import { tempDir, writeImage } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPush } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools());

/** Pushes a devcontainer feature the way the devcontainers CLI publishes one: a tar layer and the metadata annotation. */
async function pushFeature(client: RegistryClient, repo: string, tag: string, version: string): Promise<string> {
  const layer = writeTar([file("devcontainer-feature.json", JSON.stringify({ id: repo.split("/").pop(), version })), file("install.sh", "#!/bin/sh\n")]);
  const config = Buffer.from("{}");
  await client.pushBlob(repo, sha256(layer), layer);
  await client.pushBlob(repo, sha256(config), config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: "application/vnd.devcontainers", digest: sha256(config), size: config.length },
      layers: [{ mediaType: "application/vnd.devcontainers.layer.v1+tar", digest: sha256(layer), size: layer.length }],
      annotations: { "dev.containers.metadata": JSON.stringify({ id: repo.split("/").pop(), version }) },
    }),
  );
  return client.pushManifest(repo, tag, manifest, "application/vnd.oci.image.manifest.v1+json");
}

describe("manifest pin through a registry", { skip }, () => {
  let reg: TestRegistry;
  let work: string;
  let imageDigest: string;
  const features: Record<string, string> = {};
  before(async () => {
    work = tempDir("pin");
    reg = await TestRegistry.create(join(work, "registry"));
    const img = writeImage(join(work, "src"), "1");
    imageDigest = img.manifestDigest;
    await skopeoPush(`${img.dir}:1`, `${reg.host}/images/base:1`);
    const client = new RegistryClient({ host: reg.host, plainHttp: true });
    features.node = await pushFeature(client, "features/node", "1", "1.6.2");
    features.go = await pushFeature(client, "features/go", "1", "1.3.0");
  });
  after(async () => {
    await reg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test("an unpinned devcontainer.json becomes pinned; ingest then reports pinned: true", async () => {
    const dc = join(work, "devcontainer.json");
    writeFileSync(
      dc,
      `{
  // the base image
  "image": "${reg.host}/images/base:1",
  "features": {
    "${reg.host}/features/node:1": {},
    "${reg.host}/features/go:1": { "version": "1.22" }, // trailing comma kept
  },
}
`,
    );
    const env = { HOME: work, CAIRN_HOME: join(work, "home") };
    const before = await runCli(["manifest", "ingest", dc, "--json"], env);
    assert.equal(before.code, 0, before.stdout + before.stderr);
    assert.equal(JSON.parse(before.stdout).manifest.pinned, false, "control: unpinned before");
    const r = await runCli(["manifest", "pin", dc, "--write", "--plain-http", "--json"], env);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(JSON.parse(r.stdout).changes.length, 3);
    const text = readFileSync(dc, "utf8");
    assert.match(text, /\/\/ the base image/, "comments survive");
    assert.match(text, /\/\/ trailing comma kept/);
    assert.ok(text.includes(`"${reg.host}/images/base:1@${imageDigest}"`));
    assert.ok(text.includes(`"${reg.host}/features/node@${features.node}"`));
    const lock = JSON.parse(readFileSync(join(work, "devcontainer-lock.json"), "utf8"));
    // keyed by the ids the rewritten file writes (issue 33: the devcontainers CLI looks entries up by them)
    assert.deepEqual(lock.features[`${reg.host}/features/go@${features.go}`], {
      version: "1.3.0",
      resolved: `${reg.host}/features/go@${features.go}`,
      integrity: features.go,
    });
    assert.deepEqual(Object.keys(lock.features), [`${reg.host}/features/go@${features.go}`, `${reg.host}/features/node@${features.node}`]);
    const after = await runCli(["manifest", "ingest", dc, "--json"], env);
    assert.equal(after.code, 0, after.stdout + after.stderr);
    assert.equal(JSON.parse(after.stdout).manifest.pinned, true);
    // pinning again changes nothing in the file or the lock (it reads each feature's metadata again for the
    // dependsOn closure, issue 33, so the registry is asked, by digest)
    const lockBefore = readFileSync(join(work, "devcontainer-lock.json"), "utf8");
    const again = await runCli(["manifest", "pin", dc, "--write", "--plain-http", "--json"], env);
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.equal(JSON.parse(again.stdout).changes.length, 0);
    assert.equal(readFileSync(dc, "utf8"), text);
    assert.equal(readFileSync(join(work, "devcontainer-lock.json"), "utf8"), lockBefore);
  });

  test("ingest reads devcontainer-lock.json: locked features count as pinned, with the address of the pinned file", async () => {
    const a = join(work, "a");
    const b = join(work, "b");
    mkdirSync(a);
    mkdirSync(b);
    const text = `{
  "image": "${reg.host}/images/base@${imageDigest}",
  "features": { "${reg.host}/features/node:1": {}, "${reg.host}/features/go:1": { "version": "1.22" } }
}
`;
    writeFileSync(join(a, "devcontainer.json"), text);
    writeFileSync(join(b, "devcontainer.json"), text);
    const env = { HOME: work, CAIRN_HOME: join(work, "home") };
    // a's lock only, its file unchanged (what `devcontainer upgrade` leaves: tags in the file, digests in the lock); b pinned in place
    const p = await runCli(["manifest", "pin", join(a, "devcontainer.json"), "--lockfile-only", "--plain-http", "--json"], env);
    assert.equal(p.code, 0, p.stdout + p.stderr);
    assert.equal(readFileSync(join(a, "devcontainer.json"), "utf8"), text);
    const q = await runCli(["manifest", "pin", join(b, "devcontainer.json"), "--write", "--plain-http", "--json"], env);
    assert.equal(q.code, 0, q.stdout + q.stderr);
    const withLock = await runCli(["manifest", "ingest", join(a, "devcontainer.json"), "--json"], env);
    assert.equal(withLock.code, 0, withLock.stdout + withLock.stderr);
    assert.equal(JSON.parse(withLock.stdout).manifest.pinned, true);
    const pinnedFile = await runCli(["manifest", "ingest", join(b, "devcontainer.json"), "--json"], env);
    assert.equal(
      JSON.parse(withLock.stdout).manifest.address,
      JSON.parse(pinnedFile.stdout).manifest.address,
      "the lock pins exactly what the pinned file names",
    );
    const without = await runCli(["manifest", "ingest", join(a, "devcontainer.json"), "--no-lockfile", "--json"], env);
    assert.equal(JSON.parse(without.stdout).manifest.pinned, false, "control: without the lock the file is unpinned");
    // a lock for another feature set is refused, naming the feature
    const lock = JSON.parse(readFileSync(join(a, "devcontainer-lock.json"), "utf8"));
    lock.features[`${reg.host}/features/python:1`] = lock.features[`${reg.host}/features/go:1`];
    writeFileSync(join(a, "other-lock.json"), JSON.stringify(lock));
    const other = await runCli(["manifest", "ingest", join(a, "devcontainer.json"), "--lockfile", join(a, "other-lock.json"), "--json"], env);
    assert.equal(other.code, 1);
    const err = JSON.parse(other.stdout).error;
    assert.equal(err.code, "MANIFEST_MISMATCH");
    assert.equal(err.path, `/features/${reg.host}~1features~1python:1`);
    // and one that resolves a feature to another feature's digest name
    const swapped = JSON.parse(readFileSync(join(a, "devcontainer-lock.json"), "utf8"));
    swapped.features[`${reg.host}/features/go:1`].resolved = swapped.features[`${reg.host}/features/node:1`].resolved;
    swapped.features[`${reg.host}/features/go:1`].integrity = swapped.features[`${reg.host}/features/node:1`].integrity;
    writeFileSync(join(a, "swapped-lock.json"), JSON.stringify(swapped));
    const sw = await runCli(["manifest", "ingest", join(a, "devcontainer.json"), "--lockfile", join(a, "swapped-lock.json"), "--json"], env);
    assert.equal(JSON.parse(sw.stdout).error.code, "MANIFEST_MISMATCH");
  });

  test("a tag the registry does not have is refused, and nothing is written", async () => {
    const dc = join(work, "missing.json");
    const original = `{"image": "${reg.host}/images/base:nope"}\n`;
    writeFileSync(dc, original);
    const r = await runCli(["manifest", "pin", dc, "--write", "--plain-http", "--lockfile", join(work, "missing-lock.json"), "--json"], { HOME: work });
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout).error.code, "REMOTE_REFUSED");
    assert.equal(readFileSync(dc, "utf8"), original);
  });
});
