/**
 * Packs the compiled example program into a minimal OCI image layout
 * (examples/workload/image) and writes the matching OCI workload spec
 * (examples/workload/hello-oci.yaml), so the OCI path can be tried without
 * any container tooling:
 *
 *   gcc -static -no-pie -O2 -o examples/workload/hello examples/workload/hello.c
 *   node --import tsx examples/workload/make-image.ts
 *   node bin/cairn.js workload assemble examples/workload/hello-oci.yaml
 *
 * The layer is a gzip tar written with tar-stream: /app (0755, 0:0),
 * /app/hello (0755, 1000:1000), every mtime 1700000000.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { pack } from "tar-stream";

// The directory holding `hello` (default: this one); the image and spec are written there.
const here = process.argv[2] ?? dirname(fileURLToPath(import.meta.url));
const out = join(here, "image");
const mtime = new Date(1700000000 * 1000);

async function tarOf(exe: Buffer): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  p.on("data", (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((res) => p.on("end", () => res()));
  p.entry({ name: "app/", type: "directory", mode: 0o755, uid: 0, gid: 0, mtime });
  p.entry({ name: "app/hello", type: "file", mode: 0o755, uid: 1000, gid: 1000, mtime }, exe);
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}

function blob(bytes: Buffer): { digest: string; size: number } {
  const hex = createHash("sha256").update(bytes).digest("hex");
  writeFileSync(join(out, "blobs", "sha256", hex), bytes);
  return { digest: `sha256:${hex}`, size: bytes.length };
}

const exe = readFileSync(join(here, "hello"));
mkdirSync(join(out, "blobs", "sha256"), { recursive: true });
const tar = await tarOf(exe);
const layer = blob(gzipSync(tar, { level: 9 }));
const diffId = `sha256:${createHash("sha256").update(tar).digest("hex")}`;
const config = blob(
  Buffer.from(
    JSON.stringify({
      architecture: "amd64",
      os: "linux",
      config: { Entrypoint: ["/app/hello"], Cmd: ["world"], Env: ["GREETING=hello"], WorkingDir: "/app", User: "1000:1000" },
      rootfs: { type: "layers", diff_ids: [diffId] },
    }),
  ),
);
const manifest = blob(
  Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
      layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", ...layer }],
    }),
  ),
);
writeFileSync(join(out, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
writeFileSync(
  join(out, "index.json"),
  JSON.stringify({
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: [{ mediaType: "application/vnd.oci.image.manifest.v1+json", ...manifest, platform: { architecture: "amd64", os: "linux" } }],
  }),
);
writeFileSync(
  join(here, "hello-oci.yaml"),
  `# An OCI workload: the example program inside a minimal image layout (written by make-image.ts).
schema: cairn.workload/1
source:
  oci:
    layout: ./image                # a locator; not part of any identity
    manifest: "${manifest.digest}"  # selects the image; verified, never trusted
`,
);
process.stdout.write(`wrote ${out} (manifest ${manifest.digest}) and ${join(here, "hello-oci.yaml")}\n`);
