/**
 * What the OCI source accepts and what it stages: unselected content is
 * ignored, unknown fields pass (as the OCI spec requires), the staged copy is
 * private and is itself a readable OCI layout, and only the staged copy is
 * used after verification.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { sha256 } from "../../src/core/index.ts";
import { applyLayers } from "../../src/tree/index.ts";
import { openLayoutDir, readOciSource, type OciObjectReader } from "../../src/oci/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { appendFileSync, rmSync, truncateSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { STRICT_POLICY } from "../../src/tree/layer-policy.ts";
import { MemorySink } from "../tree/fixtures/memory-sink.ts";
import { writeCase } from "./fixtures/oci-refusals.ts";
import { MEDIA, blobPath, writeBlob } from "../workload/fixtures/oci-writer.ts";
import { file } from "../workload/fixtures/tar-writer.ts";
import { randomBytes } from "node:crypto";

const tmp = (): string => mkdtempSync(join(tmpdir(), "cairn-ocisrc-"));

function flipLastMiB(path: string): void {
  const b = readFileSync(path);
  const at = b.length - (1 << 19);
  b.writeUInt8(b.readUInt8(at) ^ 1, at);
  writeFileSync(path, b);
}

describe("OCI source", () => {
  it("ignores unselected descriptors, even broken ones, and unknown fields", async () => {
    const d = tmp();
    const other = {
      mediaType: MEDIA.manifest,
      digest: `sha256:${"7".repeat(64)}`,
      size: 12,
      platform: { architecture: "arm64", os: "linux", variant: "v8" },
      urls: ["https://x"],
    };
    const nested = { mediaType: MEDIA.index, digest: `sha256:${"8".repeat(64)}`, size: 5 };
    const img = writeCase(join(d, "layout"), {
      extraDescriptors: [other, nested],
      editIndex: (i) => {
        i.futureField = { any: true };
      },
      editManifest: (m) => {
        m.annotations = { "org.example": "x" };
        m.futureField = 1;
      },
      editConfig: (c) => {
        c.futureField = [1, 2];
        (c.config as Record<string, unknown>).Labels = { a: "b" };
      },
    });
    const src = await readOciSource({ layoutDir: join(d, "layout"), manifestDigest: img.manifestDigest, stagingDir: join(d, "staging") });
    assert.equal(src.layers.length, 2);
    assert.deepEqual(src.launch, { entrypoint: ["/app"], cmd: undefined, env: ["A=1"], workingDir: "/", user: "1000:1000" });
    assert.deepEqual(
      src.diffIds,
      img.layers.map((l) => l.diffId),
    );
  });

  it("stages a private copy that is itself an OCI layout holding the selected closure only", async () => {
    const d = tmp();
    const layout = join(d, "layout");
    const img = writeCase(layout);
    writeBlob(layout, Buffer.from("an unrelated blob"));
    const staging = join(d, "staging");
    const src = await readOciSource({ layoutDir: layout, manifestDigest: img.manifestDigest, stagingDir: staging });
    for (const p of [staging, join(staging, "blobs"), join(staging, "blobs", "sha256")]) assert.equal(statSync(p).mode & 0o777, 0o700, p);
    const blobs = readdirSync(join(staging, "blobs", "sha256")).sort();
    assert.deepEqual(blobs, [img.manifestDigest, img.configDigest, ...img.layers.map((l) => l.digest)].map((x) => x.slice(7)).sort());
    for (const f of ["oci-layout", "index.json", "descriptor.json", ...blobs.map((b) => join("blobs", "sha256", b))]) {
      assert.equal(statSync(join(staging, f)).mode & 0o777, 0o600, f);
    }
    for (const l of src.layers) {
      assert.ok(l.path.startsWith(staging));
      assert.equal(sha256(readFileSync(l.path)), l.digest);
    }
    assert.equal(src.manifest.digest, img.manifestDigest);
    assert.equal(sha256(src.descriptor.bytes), src.descriptor.digest);
    assert.deepEqual(JSON.parse(Buffer.from(src.descriptor.bytes).toString()).digest, img.manifestDigest);
    // The staging directory reads back as an OCI layout with identical raw objects.
    const again = await readOciSource({ layoutDir: staging, manifestDigest: img.manifestDigest, stagingDir: join(d, "staging2") });
    for (const k of ["ociLayout", "index", "descriptor", "manifest", "config"] as const) assert.equal(again[k].digest, src[k].digest, k);
    assert.deepEqual(
      again.layers.map((l) => l.digest),
      src.layers.map((l) => l.digest),
    );
  });

  it("uses only the staged copy: changing the source after reading changes nothing", async () => {
    const d = tmp();
    const layout = join(d, "layout");
    const img = writeCase(layout);
    const src = await readOciSource({ layoutDir: layout, manifestDigest: img.manifestDigest, stagingDir: join(d, "staging") });
    for (const l of img.layers) writeFileSync(blobPath(layout, l.digest), "tampered after verification");
    const { tree } = await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: new MemorySink() });
    assert.ok(tree.has("/etc/hello") && tree.has("/app"));
  });

  it("a layer listed twice in a manifest is staged once and applied twice", async () => {
    const d = tmp();
    const img = writeCase(join(d, "layout"), {
      editManifest: (m) => {
        (m.layers as unknown[]).push((m.layers as unknown[])[0]);
      },
      editConfig: (c) => {
        const ids = (c.rootfs as { diff_ids: string[] }).diff_ids;
        ids.push(ids[0]!);
      },
    });
    const src = await readOciSource({ layoutDir: join(d, "layout"), manifestDigest: img.manifestDigest, stagingDir: join(d, "staging") });
    assert.equal(src.layers.length, 3);
    assert.equal(src.layers[0]!.path, src.layers[2]!.path);
    await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: new MemorySink() });
  });

  it("a blob that grows or shrinks after its size was taken is SOURCE_CHANGED (control: unchanged)", async () => {
    for (const change of ["grow", "shrink", "none"] as const) {
      const d = tmp();
      const layout = join(d, "layout");
      const img = writeCase(layout);
      const inner = await openLayoutDir(layout);
      const target = img.layers[1]!;
      // A reader that took the blob's size before someone changed the file under it.
      const reader: OciObjectReader = {
        openTop: (n) => inner.openTop(n),
        async openBlob(digest, path) {
          const f = await inner.openBlob(digest, path);
          if (digest !== target.digest || change === "none") return f;
          if (change === "grow") appendFileSync(blobPath(layout, digest), "more");
          else truncateSync(blobPath(layout, digest), f.size - 10);
          return f;
        },
        close: () => inner.close(),
      };
      const read = (): Promise<unknown> => readOciSource({ reader, manifestDigest: img.manifestDigest, stagingDir: join(d, "staging") });
      if (change === "none") await read();
      else await assertCodeAsync(read, "SOURCE_CHANGED");
      await inner.close();
    }
  });

  // claim W43: the copy is written chunk by chunk at its own offsets (two 1 MiB buffers in turn, each reused only after its write settled)
  it("stages a layer of several MiB byte for byte, and a byte changed in its last MiB is DIGEST_MISMATCH with nothing under the blob name", async () => {
    const d = tmp();
    const layout = join(d, "layout");
    const noise = randomBytes((3 << 20) + 12345); // gzip cannot shrink it: the blob spans four 1 MiB chunks
    const img = writeCase(layout, { layers: [{ entries: [file("noise.bin", noise, { mode: 0o644 })] }] });
    const layer = img.layers[0]!;
    assert.ok(layer.size > 3 << 20);
    const src = await readOciSource({ layoutDir: layout, manifestDigest: img.manifestDigest, stagingDir: join(d, "staging") });
    assert.ok(readFileSync(src.layers[0]!.path).equals(readFileSync(blobPath(layout, layer.digest))), "control: the staged copy is the blob");
    assert.equal(statSync(src.layers[0]!.path).mode & 0o777, 0o600);
    flipLastMiB(blobPath(layout, layer.digest));
    const staging = join(d, "staging2");
    await assertCodeAsync(() => readOciSource({ layoutDir: layout, manifestDigest: img.manifestDigest, stagingDir: staging }), "DIGEST_MISMATCH");
    const names = readdirSync(join(staging, "blobs", "sha256"));
    assert.ok(!names.includes(layer.digest.slice("sha256:".length)), "no copy under the layer's name");
    assert.deepEqual(
      names.sort(),
      [img.manifestDigest, img.configDigest].map((x) => x.slice("sha256:".length)).sort(),
      "only the verified documents, no temporary file left",
    );
  });

  it("a device node in the layout is refused without being opened (root only: mknod)", {
    skip: process.getuid?.() === 0 ? false : "creating a device node needs root",
  }, async () => {
    const d = tmp();
    const layout = join(d, "layout");
    const img = writeCase(layout);
    const p = blobPath(layout, img.layers[0]!.digest);
    rmSync(p);
    execFileSync("mknod", [p, "c", "1", "3"]);
    await assertCodeAsync(() => readOciSource({ layoutDir: layout, manifestDigest: img.manifestDigest, stagingDir: join(d, "staging") }), "SOURCE_NOT_REGULAR");
  });
});
