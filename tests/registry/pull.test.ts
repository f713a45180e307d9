// `pull` against the real CNCF Distribution registry, with skopeo as the
// peer that writes and reads the same images (issue 11, items 1, 2 and 5).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { readOciSource } from "../../src/oci/index.ts";
import { Store } from "../../src/store/index.ts";
import { pullToLayout } from "../../src/workload/index.ts";
import { needs } from "../helpers/prerequisites.ts";
import { runCli } from "../helpers/cli.ts";
import type { ProgressEvent } from "../../src/core/index.ts";
import { countingFetch, readJson, tempDir, writeImage } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPull, skopeoPush } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools());

describe("pull from a loopback registry", { skip }, () => {
  let reg: TestRegistry;
  let work: string;
  before(async () => {
    work = tempDir("pull");
    reg = await TestRegistry.create(join(work, "registry"));
  });
  after(async () => {
    await reg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const remote = (extra: Record<string, unknown> = {}) => ({ plainHttp: true, env: { HOME: work }, cwd: work, ...extra });

  test("an image pushed by skopeo pulls into a layout cairn reads, with the digest skopeo reads", async () => {
    const img = writeImage(join(work, "src1"), "v1");
    await skopeoPush(`${img.dir}:v1`, `${reg.host}/tools/app:v1`);
    const store = new Store(join(work, "store"));
    const layout = join(work, "out1");
    const r = await pullToLayout(`${reg.host}/tools/app:v1`, layout, store, remote());
    store.close();
    assert.equal(r.image.manifest.digest, img.manifestDigest, "skopeo keeps the manifest as written; cairn keeps it as served");
    assert.equal(r.pinned, `${reg.host}/tools/app@${img.manifestDigest}`);
    const index = readJson(join(layout, "index.json")) as { manifests: { platform: unknown; digest: string }[] };
    assert.deepEqual(index.manifests[0]!.platform, { architecture: "amd64", os: "linux" });
    const src = await readOciSource({ layoutDir: layout, manifestDigest: r.image.manifest.digest, stagingDir: join(work, "stage1") });
    assert.deepEqual(
      src.layers.map((l) => l.digest),
      img.layers.map((l) => l.digest),
    );
    // the peer reads the same image and agrees on the digest
    await skopeoPull(`${reg.host}/tools/app:v1`, `${join(work, "peer1")}:v1`);
    const peer = readJson(join(work, "peer1", "index.json")) as { manifests: { digest: string }[] };
    assert.equal(peer.manifests[0]!.digest, r.image.manifest.digest);
  });

  test("a second pull of the same digest makes no blob request (the store holds it); the first made them", async () => {
    const img = writeImage(join(work, "src2"), "v2");
    await skopeoPush(`${img.dir}:v2`, `${reg.host}/tools/cached:v2`);
    const store = new Store(join(work, "store2"));
    const first = countingFetch();
    await pullToLayout(`${reg.host}/tools/cached@${img.manifestDigest}`, join(work, "out2a"), store, remote({ fetch: first.fetch }));
    const blobGets = (c: typeof first) => c.requests.filter((q) => q.path.includes("/blobs/")).length;
    assert.equal(blobGets(first), 3, "control: the first pull fetched config and two layers");
    const second = countingFetch();
    await pullToLayout(`${reg.host}/tools/cached@${img.manifestDigest}`, join(work, "out2b"), store, remote({ fetch: second.fetch }));
    assert.equal(second.requests.length, 0, `no request at all: ${JSON.stringify(second.requests)}`);
    // by tag: one manifest HEAD, still no blob
    const third = countingFetch();
    await pullToLayout(`${reg.host}/tools/cached:v2`, join(work, "out2c"), store, remote({ fetch: third.fetch }));
    assert.equal(blobGets(third), 0);
    assert.deepEqual(
      third.requests.map((q) => q.method),
      ["HEAD"],
    );
    store.close();
  });

  test("a Docker v2 schema 2 image is accepted and its digest kept as served", async () => {
    const img = writeImage(join(work, "src3"), "v3");
    await skopeoPush(`${img.dir}:v3`, `${reg.host}/tools/docker:v3`, ["--format", "v2s2"]);
    const served = execFileSync("skopeo", ["inspect", "--raw", "--tls-verify=false", `docker://${reg.host}/tools/docker:v3`]);
    const store = new Store(join(work, "store3"));
    const r = await pullToLayout(`${reg.host}/tools/docker:v3`, join(work, "out3"), store, remote());
    store.close();
    assert.equal(r.image.manifest.mediaType, "application/vnd.docker.distribution.manifest.v2+json");
    assert.notEqual(r.image.manifest.digest, img.manifestDigest, "control: skopeo converted the manifest");
    assert.equal(`sha256:${(await import("node:crypto")).createHash("sha256").update(served).digest("hex")}`, r.image.manifest.digest);
    const src = await readOciSource({ layoutDir: join(work, "out3"), manifestDigest: r.image.manifest.digest, stagingDir: join(work, "stage3") });
    assert.equal(src.layers.length, 2);
  });

  test("a layout is written whole or not at all: an existing non-empty directory is refused and left alone", async () => {
    const img = writeImage(join(work, "src4"), "v4");
    await skopeoPush(`${img.dir}:v4`, `${reg.host}/tools/exists:v4`);
    const store = new Store(join(work, "store4"));
    await assert.rejects(pullToLayout(`${reg.host}/tools/exists:v4`, img.dir, store, remote()), { code: "IO_ERROR" });
    assert.deepEqual(
      readdirSync(work).filter((n) => n.startsWith(".")),
      [],
      "no temporary sibling left",
    );
    await pullToLayout(`${reg.host}/tools/exists:v4`, join(work, "out4"), store, remote());
    assert.ok(existsSync(join(work, "out4", "index.json")), "control: a new directory is written");
    store.close();
  });

  test("progress is data: phase pull in bytes of the layers fetched, on each chunk, up to the whole; a cached pull reports none; the CLI prints no line per layer off a terminal", async () => {
    const img = writeImage(join(work, "src5"), "v5");
    await skopeoPush(`${img.dir}:v5`, `${reg.host}/tools/progress:v5`);
    const store = new Store(join(work, "store5"));
    const events: ProgressEvent[] = [];
    const lines: string[] = [];
    await pullToLayout(`${reg.host}/tools/progress:v5`, join(work, "out5"), store, remote(), { progress: (e) => events.push(e), log: (l) => lines.push(l) });
    const total = img.layers.reduce((n, l) => n + l.size, 0);
    assert.ok(events.length >= 2, `a first event and one per chunk: ${events.length}`);
    for (const e of events) assert.deepEqual({ phase: e.phase, unit: e.unit, total: e.total }, { phase: "pull", unit: "bytes", total });
    assert.deepEqual(
      events.map((e) => e.done),
      events.map((e) => e.done).sort((a, b) => a - b),
      "done never goes down",
    );
    assert.equal(events[0]!.done, 0);
    assert.equal(events.at(-1)!.done, total);
    assert.deepEqual(lines, [`${reg.host}/tools/progress:v5 is ${img.manifestDigest}`], "the tag's digest stays a message; no line per layer");
    const again: ProgressEvent[] = [];
    await pullToLayout(`${reg.host}/tools/progress:v5`, join(work, "out5b"), store, remote(), { progress: (e) => again.push(e) });
    assert.deepEqual(again, [], "nothing fetched, nothing reported");
    store.close();
    const cli = await runCli(["pull", `${reg.host}/tools/progress:v5`, "--oci", join(work, "out5c"), "--store", join(work, "store5c"), "--plain-http"], {
      HOME: work,
    });
    assert.equal(cli.code, 0, cli.stderr);
    assert.doesNotMatch(cli.stderr, /layer \d|[\r\x1b]/, "no line per layer and no bar in a pipe");
    assert.match(cli.stdout, /^layers {4}2 \(\d+ bytes fetched/m, "control: two layers were fetched");
  });
});
