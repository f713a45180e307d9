// freeze-layer (issue 13 item 3): an overlayfs upper directory, as a user left
// it, becomes a layer: `c 0 0` deletions become `.wh.<name>`, opaque
// directories `.wh..wh..opq`, entries whose data or name live in a lower layer
// are refused; applied over the lower layer it deletes what the overlay hid.
// `cairn layer freeze` records the dirty lock in the layer's provenance and
// resolves the environment again, clean and signed. Needs root: mknod of a
// 0:0 device and trusted.* attributes, as a rootful overlay writes them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readVerifyingKey, sha256 } from "../../src/core/index.ts";
import { buildLayerBlob, overlayXattrs, readLayerBlobs, readLockfile } from "../../src/strata/index.ts";
import { readDirectory } from "../../src/tree/index.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCode } from "../helpers/errors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { exampleRegistry, resolveWithCli, tempDir } from "./fixtures.ts";

const rootMissing = process.getuid?.() === 0 ? undefined : "root (mknod of a 0:0 whiteout device, trusted.overlay.* attributes)";

function setXattr(path: string, name: string, value: string): void {
  execFileSync("/usr/bin/python3", [
    "-c",
    "import os,sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode(), follow_symlinks=False)",
    path,
    name,
    value,
  ]);
}

/** An upper directory: etc/motd deleted, opt/app made opaque with one new file, a new tool. */
function upperDir(opaqueAttr = "trusted.overlay.opaque"): string {
  const u = tempDir("cairn-upper-");
  mkdirSync(join(u, "etc"));
  execFileSync("mknod", [join(u, "etc", "motd"), "c", "0", "0"]);
  mkdirSync(join(u, "opt", "app"), { recursive: true });
  setXattr(join(u, "opt", "app"), opaqueAttr, "y");
  writeFileSync(join(u, "opt", "app", "new"), "new\n");
  mkdirSync(join(u, "usr", "bin"), { recursive: true });
  writeFileSync(join(u, "usr", "bin", "tool"), "#!/bin/sh\n", { mode: 0o755 });
  return u;
}

test("an upper directory's deletions and opaque directories become OCI whiteouts; control: the default reader refuses the device", {
  skip: needs(rootMissing),
}, () => {
  const u = upperDir();
  const paths = readDirectory(u, "", undefined, { whiteouts: "overlayfs", overlayXattrs })
    .map((e) => `${e.type} ${e.path}`)
    .sort();
  assert.deepEqual(paths, [
    "dir etc",
    "dir opt",
    "dir opt/app",
    "dir usr",
    "dir usr/bin",
    "file etc/.wh.motd",
    "file opt/app/.wh..wh..opq",
    "file opt/app/new",
    "file usr/bin/tool",
  ]);
  assertCode(() => readDirectory(u), "SOURCE_NOT_REGULAR", join(u, "etc", "motd"));
  // A userxattr overlay marks opaque directories with user.overlay.opaque.
  const user = readDirectory(upperDir("user.overlay.opaque"), "", undefined, { whiteouts: "overlayfs", overlayXattrs });
  assert.ok(user.some((e) => e.path === "opt/app/.wh..wh..opq"));
});

test("applied over the lower layer, the frozen layer deletes what the overlay hid and keeps what was added", { skip: needs(rootMissing) }, async () => {
  const lower = buildLayerBlob([
    { type: "dir", path: "etc", mode: 0o755 },
    { type: "file", path: "etc/motd", mode: 0o644, data: Buffer.from("hi\n") },
    { type: "file", path: "etc/keep", mode: 0o644, data: Buffer.from("keep\n") },
    { type: "dir", path: "opt", mode: 0o755 },
    { type: "dir", path: "opt/app", mode: 0o755 },
    { type: "file", path: "opt/app/old", mode: 0o644, data: Buffer.from("old\n") },
  ]);
  const frozen = buildLayerBlob(readDirectory(upperDir(), "", undefined, { whiteouts: "overlayfs", overlayXattrs }));
  assert.deepEqual(frozen.whiteouts, ["/etc/.wh.motd", "/opt/app/.wh..wh..opq"]);
  assert.ok(![...frozen.content_manifest.keys()].some((k) => k.includes(".wh.")), "markers are not content");
  const { tree } = await readLayerBlobs([
    { blob: lower.blob, expected: lower, where: "lower" },
    { blob: frozen.blob, expected: frozen, where: "frozen" },
  ]);
  const files = [...tree.values()].filter((e) => e.type === "file").map((e) => e.path);
  assert.deepEqual(files.sort(), ["/etc/keep", "/opt/app/new", "/usr/bin/tool"]);
});

test("entries whose data or name live in a lower layer are refused, naming them; another device is refused", { skip: needs(rootMissing) }, () => {
  const cases: [string[], string, string][] = [
    [["opt", "app"], "trusted.overlay.redirect", "/opt/was"],
    [["usr", "bin", "tool"], "trusted.overlay.metacopy", ""],
    [["usr"], "trusted.overlay.opaque", "x"],
  ];
  for (const [rel, name, value] of cases) {
    const u = upperDir();
    const at = join(u, ...rel);
    setXattr(at, name, value);
    assertCode(() => readDirectory(u, "", undefined, { whiteouts: "overlayfs", overlayXattrs }), "LAYER_INVALID", at);
  }
  const dev = upperDir();
  execFileSync("mknod", [join(dev, "null"), "c", "1", "3"]);
  assertCode(() => readDirectory(dev, "", undefined, { whiteouts: "overlayfs", overlayXattrs }), "SOURCE_NOT_REGULAR", join(dev, "null"));
});

test("cairn layer freeze: publishes the frozen layer with the dirty lock in its provenance, resolves again clean and signed; controls refuse a clean lock and another profile", {
  skip: needs(rootMissing),
}, async () => {
  const ex = exampleRegistry();
  const profile = join(ex.root, "dirty.yaml");
  writeFileSync(profile, 'name: dirty\nbase: {os: debian12, arch: x86_64}\nsoftware: [python]\nmutable_layer: {name: frozen, version: "1.0"}\n');
  const dirty = join(ex.root, "dirty.lock");
  assert.equal((await resolveWithCli(ex, profile, dirty, { sign: false })).code, 0);
  const dirtySha = sha256(readFileSync(dirty));
  const out = join(ex.root, "frozen.lock");
  const freeze = (lock: string, prof: string, name: string): Promise<{ code: number; stdout: string; stderr: string }> =>
    runCli([
      "layer",
      "freeze",
      upperDir(),
      "--lock",
      lock,
      "--name",
      name,
      "--version",
      "1.0",
      "--registry",
      ex.registry,
      "--key",
      join(ex.root, "registry.key"),
      "--profile",
      prof,
      "--out",
      out,
      "--sign",
      join(ex.root, "lock.key"),
      "--trust",
      `keyfile://${ex.root}/registry.pub`,
      "--json",
    ]);
  const r = await freeze(dirty, profile, "frozen");
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.deepEqual(j.whiteouts, ["/etc/.wh.motd", "/opt/app/.wh..wh..opq"]);
  const { lock } = readLockfile(out, [readVerifyingKey(join(ex.root, "lock.pub"))]);
  assert.equal(lock.mutable_layer, undefined);
  assert.ok(lock.layers.some((l) => l.id === "frozen-1.0-none-noarch"));
  const p = await runCli(["lock", "provenance", out, "--pub", join(ex.root, "lock.pub"), "--json"]);
  const frozen = JSON.parse(p.stdout).layers.find((l: { id: string }) => l.id === "frozen-1.0-none-noarch");
  assert.deepEqual(frozen.build.sources, [`dirty-lock:${dirtySha}`]);
  const v = await runCli(["lock", "verify", out, "--pub", join(ex.root, "lock.pub"), "--registry", ex.registry, "--contents"]);
  assert.equal(v.code, 0, v.stderr);

  // Controls: a clean lock has nothing to freeze; a profile other than the dirty lock's is refused.
  const again = await freeze(out, profile, "frozen2");
  assert.equal(again.code, 1);
  assert.equal(JSON.parse(again.stdout).error.code, "LOCK_INVALID");
  const other = join(ex.root, "other.yaml");
  writeFileSync(other, 'name: other\nbase: {os: debian12, arch: x86_64}\nsoftware: [python, numpy]\nmutable_layer: {name: frozen, version: "1.0"}\n');
  const wrong = await freeze(dirty, other, "frozen3");
  assert.equal(wrong.code, 1);
  assert.equal(JSON.parse(wrong.stdout).error.code, "LOCK_INVALID");
});

test("cairn layer freeze without --name and --version takes them from the dirty lock's mutable_layer spec (the seed's MutableLayerSpec names the layer freeze makes); control: a clean lock without them is LOCK_INVALID", {
  skip: needs(rootMissing),
}, async () => {
  const ex = exampleRegistry();
  const profile = join(ex.root, "dirty.yaml");
  writeFileSync(profile, 'name: dirty\nbase: {os: debian12, arch: x86_64}\nsoftware: [python]\nmutable_layer: {name: torch-ml, version: "2.1"}\n');
  const dirty = join(ex.root, "dirty.lock");
  assert.equal((await resolveWithCli(ex, profile, dirty, { sign: false })).code, 0);
  const args = (lock: string) => ["layer", "freeze", upperDir(), "--lock", lock, "--registry", ex.registry, "--key", join(ex.root, "registry.key"), "--json"];
  const r = await runCli(args(dirty));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /torch-ml-2\.1-none-noarch/);
  const clean = join(ex.root, "clean.yaml");
  writeFileSync(clean, "name: clean\nbase: {os: debian12, arch: x86_64}\nsoftware: [python]\n");
  const cleanLock = join(ex.root, "clean.lock");
  assert.equal((await resolveWithCli(ex, clean, cleanLock, { sign: false })).code, 0);
  const c = await runCli(args(cleanLock));
  assert.equal(c.code, 1, c.stdout + c.stderr);
  assert.equal(JSON.parse(c.stdout).error.code, "LOCK_INVALID");
});
