// A manifest without `mediaType` (issue 31, case 11): umoci writes image
// manifests without the field, which the image-spec allows (SHOULD). Pushed to
// the real registry with skopeo, the first pull by digest worked (the registry's
// Content-Type named the type) but the second, read from the store, and every
// re-assembly of a ref spec, was OCI_MEDIA_TYPE, registry up or down. The type
// now comes from the verified bytes (the field, or the shape: config and layers
// is an image manifest), so every pull of the digest reads the same.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseJsonText, type JsonObject } from "../../src/core/index.ts";
import { documentMediaType } from "../../src/oci/media-types.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCode } from "../helpers/errors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { umociAvailable, umociBuild } from "../tree/fixtures/umoci.ts";
import { tempDir } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPush } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools() ?? (umociAvailable() ? undefined : "umoci (Debian package umoci)"));

describe("a manifest without mediaType, written by umoci", { skip }, () => {
  let reg: TestRegistry;
  let work: string;
  let digest: string;
  before(async () => {
    work = tempDir("umoci-mt");
    reg = await TestRegistry.create(join(work, "registry"));
    const layout = join(work, "layout");
    umociBuild(layout, "v1", join(work, "bundles"), [(rootfs) => writeFileSync(join(rootfs, "hello"), "#!/hello\n", { mode: 0o755 })], ["--config.cmd=/hello"]);
    const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as { manifests: { digest: string }[] };
    digest = index.manifests[0]!.digest;
    const manifest = JSON.parse(readFileSync(join(layout, "blobs", "sha256", digest.slice(7)), "utf8")) as Record<string, unknown>;
    assert.equal(manifest.mediaType, undefined, "the fixture is the case: umoci's manifest has no mediaType");
    assert.ok(Array.isArray(manifest.layers) && manifest.layers.length === 1);
    await skopeoPush(`${layout}:v1`, `${reg.host}/u/app:v1`);
  });
  after(async () => {
    await reg?.stop();
    rmSync(work, { recursive: true, force: true });
  });
  const env = () => ({ HOME: work, CAIRN_HOME: join(work, "home") });
  let n = 0;
  const pull = async () => {
    const out = join(work, `out-${++n}`);
    const r = await runCli(["pull", `${reg.host}/u/app@${digest}`, "--oci", out, "--plain-http", "--json"], env());
    assert.equal(r.code, 0, r.stdout + r.stderr);
    return JSON.parse(r.stdout) as { manifest: { digest: string; media_type: string }; blob_bytes_fetched: number };
  };

  test("pulled twice by digest, and again with the registry stopped; a ref spec re-assembles, registry up and down", async () => {
    const first = await pull();
    assert.equal(first.manifest.digest, digest);
    assert.equal(first.manifest.media_type, "application/vnd.oci.image.manifest.v1+json");
    assert.ok(first.blob_bytes_fetched > 0, "control: the first pull fetched the layer");
    const second = await pull(); // read from the store: was OCI_MEDIA_TYPE
    assert.deepEqual(second.manifest, first.manifest);
    assert.equal(second.blob_bytes_fetched, 0);
    const spec = join(work, "spec.json");
    writeFileSync(spec, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { ref: `${reg.host}/u/app@${digest}` } } }));
    const a = await runCli(["workload", "assemble", spec, "--plain-http", "--json"], env());
    assert.equal(a.code, 0, a.stdout + a.stderr);
    await reg.stop();
    const third = await pull();
    assert.deepEqual(third.manifest, first.manifest);
    const b = await runCli(["workload", "assemble", spec, "--plain-http", "--json"], env());
    assert.equal(b.code, 0, b.stdout + b.stderr);
    assert.equal(JSON.parse(b.stdout).workload, JSON.parse(a.stdout).workload, "the same workload, assembled from the store");
    await reg.start();
  });
});

test("a document's media type: its field, else its shape (image manifest or index); any other shape is OCI_MEDIA_TYPE", () => {
  const m = (o: Record<string, unknown>) => parseJsonText(JSON.stringify(o), { source: "t" }) as JsonObject;
  const config = { mediaType: "application/vnd.oci.image.config.v1+json", digest: `sha256:${"0".repeat(64)}`, size: 2 };
  assert.equal(documentMediaType(m({ schemaVersion: 2, config, layers: [] }), "/mediaType"), "application/vnd.oci.image.manifest.v1+json");
  assert.equal(documentMediaType(m({ schemaVersion: 2, manifests: [] }), "/mediaType"), "application/vnd.oci.image.index.v1+json");
  assert.equal(
    documentMediaType(m({ mediaType: "application/vnd.docker.distribution.manifest.v2+json", config, layers: [] }), "/mediaType"),
    "application/vnd.docker.distribution.manifest.v2+json",
  );
  for (const bad of [
    { schemaVersion: 2, config, layers: [], manifests: [] },
    { schemaVersion: 2 },
    { schemaVersion: 2, config },
    { mediaType: 5, config, layers: [] },
    { manifests: [], layers: [] },
  ])
    assertCode(() => documentMediaType(m(bad), "/mediaType"), "OCI_MEDIA_TYPE");
});
