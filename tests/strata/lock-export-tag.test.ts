/**
 * `lock export --tag NAME` (issue 32, item 6): the layout's index.json entry
 * carries `org.opencontainers.image.ref.name` = NAME, so umoci and skopeo
 * address the image by that name; a NAME outside the image-spec's ref grammar
 * is refused naming `--tag` before anything is written; without `--tag` the
 * layout is byte for byte what it was, and the tag never enters the manifest
 * digest.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { exampleRegistry, resolveArgs, tempDir } from "./fixtures.ts";
import { canonicalBytes, sha256 } from "../../src/core/index.ts";
import { checkRefName, MAX_REF_NAME_BYTES } from "../../src/oci/index.ts";

const ex = exampleRegistry();
const PROFILE = join(PROJECT_ROOT, "examples/strata/profile.yaml");
const env = { ...process.env, CAIRN_NOW: "2026-03-01T12:00:00.000Z" };
const LOCK = join(ex.root, "env.lock");
const PUB = join(ex.root, "lock.pub");

function exportArgs(out: string, extra: string[] = []): string[] {
  return ["lock", "export", LOCK, "--pub", PUB, "--registry", ex.registry, "--base", `rootfs:${ex.rootfs}`, "--oci", out, ...extra, "--json"];
}

function has(cmd: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;
}

const resolved = await runCli(resolveArgs(ex, PROFILE, LOCK), env);
assert.equal(resolved.code, 0, resolved.stderr);

test("--tag writes org.opencontainers.image.ref.name on the index entry; umoci and skopeo address the image by it", async () => {
  const dir = tempDir("cairn-export-tag-");
  const tagged = join(dir, "tagged");
  const r = await runCli(exportArgs(tagged, ["--tag", "v1.0"]), env);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const manifest = (JSON.parse(r.stdout) as { manifest: string }).manifest;
  const index = JSON.parse(readFileSync(join(tagged, "index.json"), "utf8")) as { manifests: { digest: string; annotations?: Record<string, string> }[] };
  assert.deepEqual(index.manifests[0]!.annotations, { "org.opencontainers.image.ref.name": "v1.0" });
  assert.equal(index.manifests[0]!.digest, manifest);

  // without --tag: no annotation, the index is the one-entry selection document it always was, and the same manifest digest
  const plain = join(dir, "plain");
  const p = await runCli(exportArgs(plain), env);
  assert.equal(p.code, 0, p.stderr);
  assert.equal((JSON.parse(p.stdout) as { manifest: string }).manifest, manifest, "the tag is not part of the manifest digest");
  const plainIndex = readFileSync(join(plain, "index.json"));
  const { annotations: _a, ...entry } = index.manifests[0]!;
  assert.deepEqual(plainIndex, canonicalBytes({ schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: [entry] }));
  // every other file of the layout is the same bytes
  const files = (root: string): string[] => readdirSync(join(root, "blobs", "sha256")).sort();
  assert.deepEqual(files(tagged), files(plain));
  assert.equal(sha256(readFileSync(join(tagged, "oci-layout"))), sha256(readFileSync(join(plain, "oci-layout"))));

  if (has("skopeo")) {
    const inspect = JSON.parse(execFileSync("skopeo", ["inspect", `oci:${tagged}:v1.0`], { encoding: "utf8" })) as { Digest: string };
    assert.equal(inspect.Digest, manifest);
    // control: skopeo does not find a name the layout does not carry
    assert.notEqual(spawnSync("skopeo", ["inspect", `oci:${tagged}:v2.0`]).status, 0);
  }
  if (has("umoci")) {
    assert.match(execFileSync("umoci", ["ls", "--layout", tagged], { encoding: "utf8" }), /^v1\.0$/m);
    const bundle = join(dir, "bundle");
    execFileSync("umoci", ["unpack", "--rootless", "--image", `${tagged}:v1.0`, bundle], { stdio: "pipe" });
    assert.ok(existsSync(join(bundle, "rootfs", "usr", "lib", "os-release")), "umoci unpacked the tagged image's tree");
    // control: umoci refuses a name the layout does not carry
    assert.notEqual(spawnSync("umoci", ["unpack", "--rootless", "--image", `${tagged}:nope`, join(dir, "bundle2")]).status, 0);
  }
});

test("a NAME outside the image-spec ref grammar is refused naming --tag, before anything is written; every separator is accepted", async () => {
  const dir = tempDir("cairn-export-badtag-");
  const bad = ["", "-v1", "v1-", "a..b", "a---b", "a//b", "/a", "a/", "a b", "tag\u00e9", "a_", "a:", "x".repeat(MAX_REF_NAME_BYTES + 1)];
  for (const [i, name] of bad.entries()) {
    const out = join(dir, `bad${i}`);
    const r = await runCli(exportArgs(out, ["--tag", name]), env);
    assert.equal(r.code, 1, `${JSON.stringify(name)}: ${r.stdout}`);
    const err = (JSON.parse(r.stdout) as { error: { code: string; path: string } }).error;
    assert.equal(err.path, "--tag", JSON.stringify(name));
    assert.equal(err.code, name.length > MAX_REF_NAME_BYTES ? "LIMIT_EXCEEDED" : "REFERENCE_INVALID", JSON.stringify(name));
    assert.equal(existsSync(out), false);
  }
  // control: names using each separator of the grammar ([-._:@+], "--" and "/" between components) export
  const good = ["v1", "1.0.0-rc.1+build_7", "registry.example:5000/team/app@stable--x", "A_b.c-d:e@f+g--h/i", "x".repeat(MAX_REF_NAME_BYTES)];
  for (const [i, name] of good.entries()) {
    assert.doesNotThrow(() => checkRefName(name, "--tag"), name);
    if (i > 2) continue; // three end to end; the rest by the same function the command calls
    const out = join(dir, `good${i}`);
    const r = await runCli(exportArgs(out, ["--tag", name]), env);
    assert.equal(r.code, 0, `${name}: ${r.stdout}`);
    const index = JSON.parse(readFileSync(join(out, "index.json"), "utf8")) as { manifests: { annotations: Record<string, string> }[] };
    assert.equal(index.manifests[0]!.annotations["org.opencontainers.image.ref.name"], name);
  }
  assert.deepEqual(
    readdirSync(dir).filter((n) => n.startsWith(".")),
    [],
    "no staging left",
  );
});
