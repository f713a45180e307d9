// Pushing with cairn's client, read back by skopeo and by cairn (issue 11,
// item 1): monolithic and chunked uploads, manifests, an index from which
// pull selects linux/amd64, tag listing, and referrers through the tag-schema
// fallback (the registry here, Distribution 2.8, has no referrers API).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { RegistryClient, pushLayoutImage, referrersTag } from "../../src/oci/index.ts";
import { parseSha256, sha256 } from "../../src/core/index.ts";
import { Store } from "../../src/store/index.ts";
import { pullToLayout } from "../../src/workload/index.ts";
import { needs } from "../helpers/prerequisites.ts";
import { countingFetch, readJson, tempDir, writeImage } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPull } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools());
const run = promisify(execFile);
const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";

describe("push with cairn's client", { skip }, () => {
  let reg: TestRegistry;
  let work: string;
  let client: RegistryClient;
  before(async () => {
    work = tempDir("push");
    reg = await TestRegistry.create(join(work, "registry"));
  });
  after(async () => {
    await reg?.stop();
    rmSync(work, { recursive: true, force: true });
  });
  const fresh = (fetch?: typeof globalThis.fetch) => new RegistryClient({ host: reg.host, plainHttp: true, fetch });

  test("a monolithic push is read back by skopeo with the same digest; a second push sends no blob", async () => {
    client = fresh();
    const img = writeImage(join(work, "src1"), "m1");
    const d = await pushLayoutImage(client, img.dir, img.manifestDigest, "p/mono", "m1");
    assert.equal(d, img.manifestDigest);
    await skopeoPull(`${reg.host}/p/mono:m1`, `${join(work, "peer1")}:m1`);
    assert.equal((readJson(join(work, "peer1", "index.json")) as { manifests: { digest: string }[] }).manifests[0]!.digest, img.manifestDigest);
    const counted = countingFetch();
    await pushLayoutImage(fresh(counted.fetch), img.dir, img.manifestDigest, "p/mono", "again");
    assert.equal(counted.requests.filter((q) => q.method === "POST" || q.method === "PATCH").length, 0, "blobs were present: only HEADs and the manifest PUT");
  });

  test("a chunked push (PATCH ranges, then PUT) is read back by skopeo", async () => {
    const img = writeImage(join(work, "src2"), "c1");
    const counted = countingFetch();
    const events: { phase: string; done: number; total?: number | undefined; unit: string }[] = [];
    await pushLayoutImage(fresh(counted.fetch), img.dir, img.manifestDigest, "p/chunked", "c1", { chunkBytes: 16, progress: (e) => events.push(e) });
    // progress (issue 36, item 3): phase push in bytes, a first event and one a blob (config and two layers), up to the whole
    const total = readJson(join(img.dir, "blobs", "sha256", img.manifestDigest.slice(7))) as { config: { size: number }; layers: { size: number }[] };
    const bytes = total.config.size + total.layers.reduce((n, l) => n + l.size, 0);
    assert.deepEqual(
      events.map((e) => [e.phase, e.unit, e.total]),
      Array(4).fill(["push", "bytes", bytes]),
    );
    assert.deepEqual(
      events.map((e) => e.done),
      [0, total.config.size, total.config.size + total.layers[0]!.size, bytes],
    );
    assert.ok(counted.requests.filter((q) => q.method === "PATCH").length > 3, "control: several chunks were sent");
    await skopeoPull(`${reg.host}/p/chunked:c1`, `${join(work, "peer2")}:c1`);
    assert.deepEqual((await client.listTags("p/chunked")).sort(), ["c1"]);
  });

  test("an index of two platforms pulls as its linux/amd64 manifest, and the layout's descriptor carries the platform", async () => {
    const amd = writeImage(join(work, "amd"), "amd");
    const arm = writeImage(join(work, "arm"), "arm", {
      editConfig: (c) => {
        c.architecture = "arm64";
      },
    });
    await pushLayoutImage(client, amd.dir, amd.manifestDigest, "p/multi", "amd");
    await pushLayoutImage(client, arm.dir, arm.manifestDigest, "p/multi", "arm");
    const index = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_INDEX,
        manifests: [
          { mediaType: OCI_MANIFEST, digest: arm.manifestDigest, size: arm.manifestSize, platform: { architecture: "arm64", os: "linux" } },
          { mediaType: OCI_MANIFEST, digest: amd.manifestDigest, size: amd.manifestSize, platform: { architecture: "amd64", os: "linux" } },
        ],
      }),
    );
    const indexDigest = await client.pushManifest("p/multi", "latest", index, OCI_INDEX);
    const raw = await run("skopeo", ["inspect", "--raw", "--tls-verify=false", `docker://${reg.host}/p/multi:latest`], { encoding: "buffer" });
    assert.equal(sha256(raw.stdout), indexDigest, "skopeo reads the index cairn pushed");
    const store = new Store(join(work, "store3"));
    const r = await pullToLayout(`${reg.host}/p/multi:latest`, join(work, "out3"), store, { plainHttp: true, env: { HOME: work }, cwd: work });
    store.close();
    assert.equal(r.image.index?.digest, indexDigest);
    assert.equal(r.image.manifest.digest, amd.manifestDigest);
    assert.equal(r.pinned, `${reg.host}/p/multi@${indexDigest}`);
    const written = readJson(join(work, "out3", "index.json")) as { manifests: { digest: string; platform: unknown }[] };
    assert.deepEqual(written.manifests, [{ ...written.manifests[0], digest: amd.manifestDigest, platform: { architecture: "amd64", os: "linux" } }]);
    // control: an index without linux/amd64 is refused
    const armOnly = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests: [JSON.parse(index.toString()).manifests[0]] }));
    await client.pushManifest("p/multi", "armonly", armOnly, OCI_INDEX);
    const s2 = new Store(join(work, "store3b"));
    await assert.rejects(pullToLayout(`${reg.host}/p/multi:armonly`, join(work, "out3b"), s2, { plainHttp: true, env: { HOME: work }, cwd: work }), {
      code: "OCI_SELECTION",
    });
    s2.close();
  });

  test("referrers are found through the tag-schema fallback, filtered by artifact type", async () => {
    const img = writeImage(join(work, "src4"), "r1");
    const subjectDigest = parseSha256(img.manifestDigest);
    const subject = { mediaType: OCI_MANIFEST, digest: img.manifestDigest, size: img.manifestSize };
    await pushLayoutImage(client, img.dir, img.manifestDigest, "p/ref", "r1");
    const empty = Buffer.from("{}");
    await client.pushBlob("p/ref", sha256(empty), empty);
    const sig = Buffer.from("signature bytes");
    await client.pushBlob("p/ref", sha256(sig), sig);
    const artifact = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        artifactType: "application/vnd.cairn.test.sig",
        config: { mediaType: "application/vnd.oci.empty.v1+json", digest: sha256(empty), size: 2 },
        layers: [{ mediaType: "application/octet-stream", digest: sha256(sig), size: sig.length }],
        subject,
      }),
    );
    const artifactDigest = await client.pushManifest("p/ref", sha256(Buffer.from("x")).replace(":", "-").slice(0, 20), artifact, OCI_MANIFEST);
    assert.deepEqual((await client.referrers("p/ref", subjectDigest)).descriptors, [], "control: nothing before the fallback index exists");
    const fallback = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_INDEX,
        manifests: [{ mediaType: OCI_MANIFEST, digest: artifactDigest, size: artifact.length, artifactType: "application/vnd.cairn.test.sig" }],
      }),
    );
    await client.pushManifest("p/ref", referrersTag(subjectDigest), fallback, OCI_INDEX);
    const found = await client.referrers("p/ref", subjectDigest);
    assert.equal(found.via, "tag");
    assert.deepEqual(
      found.descriptors.map((d) => d.digest),
      [artifactDigest],
    );
    assert.equal((await client.referrers("p/ref", subjectDigest, "application/other")).descriptors.length, 0);
  });
});
