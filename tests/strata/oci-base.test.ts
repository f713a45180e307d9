import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { writeToyRootfs } from "../../examples/strata/build-registry.ts";
import { buildLayerBlob } from "../../src/strata/index.ts";
import { readDirectory } from "../../src/tree/index.ts";
import { writeOciLayout } from "../workload/fixtures/oci-writer.ts";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { exampleRegistry, tempDir } from "./fixtures.ts";

function imageOf(rootfs: string): { dir: string; manifest: string } {
  const tar = gunzipSync(buildLayerBlob(readDirectory(rootfs)).blob);
  const dir = tempDir("cairn-oci-base-");
  const img = writeOciLayout(dir, { layers: [{ tar }], config: { Cmd: ["/bin/sh"], User: "1000" } });
  return { dir, manifest: img.manifestDigest };
}

test("--base oci:LAYOUT@sha256:DIGEST probes the image's root filesystem and records the image digest", async () => {
  const ex = exampleRegistry();
  const img = imageOf(ex.rootfs);
  const lock = join(ex.root, "oci.lock");
  const profile = join(PROJECT_ROOT, "examples/strata/profile.yaml");
  const r = await runCli([
    "resolve",
    profile,
    "--registry",
    ex.registry,
    "--trust",
    `keyfile://${ex.root}/registry.pub`,
    "--base",
    `oci:${img.dir}@${img.manifest}`,
    "--out",
    lock,
    "--json",
  ]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const text = readFileSync(lock, "utf8");
  assert.match(readFileSync(`${lock}.cairn.json`, "utf8"), /"base_source": "oci:/, "cairn's records say how the base was probed");
  assert.ok(text.includes(`  ami_id: ${img.manifest}`), "the image digest is the base's ami_id");
  assert.match(text, /\{name: glibc, version: "2\.36"\}|name: glibc\n {8}version: "2\.36"/);
  assert.match(text, /\{name: gcc, version: "12"\}|name: gcc\n {8}version: "12"/);
  // The same root filesystem probed as a directory has the same facts but no image digest.
  const dirLock = join(ex.root, "dir.lock");
  const d = await runCli([
    "resolve",
    profile,
    "--registry",
    ex.registry,
    "--trust",
    `keyfile://${ex.root}/registry.pub`,
    "--base",
    `rootfs:${ex.rootfs}`,
    "--out",
    dirLock,
  ]);
  assert.equal(d.code, 0, d.stderr);
  assert.notEqual(
    /ami_sha256: (\S+)/.exec(readFileSync(dirLock, "utf8"))![1],
    /ami_sha256: (\S+)/.exec(text)![1],
    "the image digest is part of the base digest",
  );
});

test("--base oci: with a digest the layout does not hold is refused; a malformed spec is a usage error", async () => {
  const ex = exampleRegistry();
  const img = imageOf(ex.rootfs);
  const profile = join(PROJECT_ROOT, "examples/strata/profile.yaml");
  const args = (base: string): string[] => [
    "resolve",
    profile,
    "--registry",
    ex.registry,
    "--trust",
    `keyfile://${ex.root}/registry.pub`,
    "--base",
    base,
    "--out",
    join(ex.root, "x.lock"),
    "--json",
  ];
  const missing = await runCli(args(`oci:${img.dir}@sha256:${"0".repeat(64)}`));
  assert.equal(missing.code, 1);
  assert.match((JSON.parse(missing.stdout) as { error: { code: string } }).error.code, /^OCI_/);
  const usage = await runCli(args(`oci:${img.dir}`));
  assert.equal(usage.code, 2);
  const other = tempDir("cairn-ubuntu-");
  writeToyRootfs(other, { id: "ubuntu", versionId: "24.04" });
  const ubuntu = imageOf(other);
  const mismatch = await runCli(args(`oci:${ubuntu.dir}@${ubuntu.manifest}`));
  assert.equal((JSON.parse(mismatch.stdout) as { error: { code: string } }).error.code, "RESOLVE_FAILED", "ubuntu24 is not the profile's debian12");
});
