/**
 * `lock export`: a verified lockfile becomes an OCI image layout whose tree is
 * exactly the base plus the lockfile's layers in mount order, whose manifest
 * digest does not depend on the exporting host's umask, time zone or locale,
 * and which a peer (umoci, skopeo) reads. Refusals each have a control that
 * exports.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli, runCliOnTerminal } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { exampleRegistry, resolveArgs, tempDir } from "./fixtures.ts";
import { EXPORT_ANNOTATIONS, LocalRegistry, environmentId, readLockfile } from "../../src/strata/index.ts";
import { readOciSource } from "../../src/oci/index.ts";
import { applyLayers, HASH_ONLY_SINK, STRICT_POLICY } from "../../src/tree/index.ts";
import { sha256, type Sha256Digest } from "../../src/core/index.ts";

const ex = exampleRegistry();
const PROFILE = join(PROJECT_ROOT, "examples/strata/profile.yaml");
const NOW = "2026-03-01T12:00:00.000Z";
const env = { ...process.env, CAIRN_NOW: NOW };
const LOCK = join(ex.root, "env.lock");
const PUB = join(ex.root, "lock.pub");

async function resolveTo(profile: string, out: string): Promise<void> {
  const r = await runCli(resolveArgs(ex, profile, out), env);
  assert.equal(r.code, 0, r.stderr);
}

function exportArgs(lock: string, out: string, extra: string[] = []): string[] {
  return ["lock", "export", lock, "--pub", PUB, "--registry", ex.registry, "--base", `rootfs:${ex.rootfs}`, "--oci", out, ...extra, "--json"];
}

await resolveTo(PROFILE, LOCK);

test("the image's Cmd may follow --, so an argument may start with - (with --cmd commander reads it as an option)", async () => {
  const out = join(tempDir("cairn-export-dashes-"), "img");
  const r = await runCli([...exportArgs(LOCK, out), "--", "/bin/sh", "-c", "echo hi"], env);
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout) as { manifest: string };
  const src = await readOciSource({ layoutDir: out, manifestDigest: j.manifest, stagingDir: join(tempDir("cairn-export-read-"), "s") });
  assert.deepEqual(src.launch.cmd, ["/bin/sh", "-c", "echo hi"]);
  // the same argv through --cmd: "-c" is read as an unknown option (usage error), which is why -- exists
  const viaFlag = await runCli(exportArgs(LOCK, join(tempDir("cairn-export-dashes-"), "img"), ["--cmd", "/bin/sh", "-c", "echo hi"]), env);
  assert.equal(viaFlag.code, 2);
  // both forms at once is a usage error naming --cmd
  const both = await runCli([...exportArgs(LOCK, join(tempDir("cairn-export-dashes-"), "img"), ["--cmd", "/bin/true"]), "--", "/bin/sh"], env);
  assert.equal(both.code, 2);
  assert.equal((JSON.parse(both.stdout) as { error: { path: string } }).error.path, "--cmd");
});

test("the exported image holds exactly the base and the lockfile's layers in mount order, with env, launch and annotations", async () => {
  const out = join(tempDir("cairn-export-"), "img");
  const r = await runCli(exportArgs(LOCK, out, ["--cmd", "/opt/python/3.12/bin/python3", "hello"]), env);
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout) as { manifest: string; environment_id: string; lockfile_sha256: string; layers: number };
  const lock = readLockfile(LOCK).lock;
  assert.equal(j.environment_id, environmentId(lock));
  assert.equal(j.lockfile_sha256, sha256(readFileSync(LOCK)));
  assert.equal(j.layers, lock.layers.length + 1);

  const src = await readOciSource({ layoutDir: out, manifestDigest: j.manifest, stagingDir: join(tempDir("cairn-export-read-"), "s") });
  const manifest = JSON.parse(Buffer.from(src.manifest.bytes).toString("utf8")) as { annotations: Record<string, string> };
  assert.deepEqual(manifest.annotations, {
    [EXPORT_ANNOTATIONS.base]: lock.base.digest,
    [EXPORT_ANNOTATIONS.environmentId]: environmentId(lock),
    [EXPORT_ANNOTATIONS.lockfile]: sha256(readFileSync(LOCK)),
  });
  assert.deepEqual(src.launch.cmd, ["/opt/python/3.12/bin/python3", "hello"]);
  assert.deepEqual(src.launch.env, ["LC_ALL=C.UTF-8"]);
  assert.equal(src.launch.user, "1000:1000");
  // strata layers, byte for byte, in mount order after the base
  const ordered = [...lock.layers].sort((a, b) => a.mount_order! - b.mount_order!);
  assert.deepEqual(
    src.layers.slice(1).map((l) => l.digest),
    ordered.map((l) => l.sha256),
  );
  // the tree: every file and symlink a layer manifest lists, with its digest, plus the base directory's files
  const { tree } = await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: HASH_ONLY_SINK });
  const reg = LocalRegistry.open(ex.registry);
  const expectedFiles = new Map<string, Sha256Digest>();
  const expectedLinks = new Map<string, string>();
  for (const l of ordered) {
    const m = reg.readLayer(l.id).value;
    for (const [p, d] of m.content_manifest) expectedFiles.set(p, d);
    for (const [p, t] of m.symlinks) expectedLinks.set(p, t);
  }
  for (const rel of ["usr/lib/os-release", "usr/lib/x86_64-linux-gnu/libc.so.6", "usr/bin/dash", "usr/bin/gcc-12"]) {
    expectedFiles.set(`/${rel}`, sha256(readFileSync(join(ex.rootfs, rel))));
  }
  for (const [p, t] of [
    ["/bin", "usr/bin"],
    ["/etc/os-release", "../usr/lib/os-release"],
    ["/usr/bin/sh", "dash"],
  ] as const)
    expectedLinks.set(p, t);
  const files = new Map([...tree.values()].filter((e) => e.type === "file").map((e) => [e.path, e.type === "file" ? e.sha256 : ""]));
  for (const [p, d] of expectedFiles) assert.equal(files.get(p), d, p);
  const allLayerFiles = ordered.flatMap((l) => [...reg.readLayer(l.id).value.content_manifest.keys()]).length;
  assert.ok(allLayerFiles >= 4, "the example layers list files");
  for (const [p, t] of expectedLinks) {
    const e = tree.get(p);
    assert.equal(e?.type === "symlink" ? e.target : undefined, t, p);
  }
  // nothing else: every file in the image is one the base or a layer put there
  const baseFiles = new Set(walkFiles(ex.rootfs).map((p) => `/${p}`));
  for (const p of files.keys()) assert.ok(expectedFiles.has(p) || baseFiles.has(p), `unexpected file ${p}`);

  // a peer reads it
  if (which("skopeo")) {
    const inspect = JSON.parse(execFileSync("skopeo", ["inspect", `oci:${out}`], { encoding: "utf8" })) as { Digest: string; Layers: string[] };
    assert.equal(inspect.Digest, j.manifest);
    assert.equal(inspect.Layers.length, j.layers);
  }
  if (which("umoci")) execFileSync("umoci", ["ls", "--layout", out]);
});

/** Every regular file under `root`, relative, without following symlinks. */
function walkFiles(root: string, rel = ""): string[] {
  return readdirSync(join(root, rel), { withFileTypes: true }).flatMap((d) => {
    const p = rel === "" ? d.name : `${rel}/${d.name}`;
    return d.isDirectory() ? walkFiles(root, p) : d.isFile() ? [p] : [];
  });
}

function which(cmd: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;
}

/** Exports in a child process under the given umask and environment; returns the manifest digest and every file's bytes digest. */
function exportInChild(out: string, umask: string, extraEnv: Record<string, string>, cmd: string): { manifest: string; files: Record<string, string> } {
  const code = `const m = await import(${JSON.stringify(join(PROJECT_ROOT, "src/cli/main.ts"))}); process.exitCode = await m.main(process.argv.slice(1));`;
  const r = spawnSync(
    "sh",
    [
      "-c",
      `umask ${umask}; exec "$0" "$@"`,
      process.execPath,
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      code,
      "--",
      ...exportArgs(LOCK, out, ["--cmd", cmd]),
    ],
    { encoding: "utf8", env: { ...env, ...extraEnv }, cwd: PROJECT_ROOT },
  );
  assert.equal(r.status, 0, r.stderr + r.stdout);
  const files: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const d of readdirSync(join(out, rel), { withFileTypes: true })) {
      const p = rel === "" ? d.name : `${rel}/${d.name}`;
      if (d.isDirectory()) walk(p);
      else files[p] = `${sha256(readFileSync(join(out, p)))} ${(statSync(join(out, p)).mode & 0o777).toString(8)}`;
    }
  };
  walk("");
  return { manifest: (JSON.parse(r.stdout) as { manifest: string }).manifest, files };
}

test("the same lockfile exports the same bytes under another umask, time zone and locale; another command is another digest", () => {
  const dir = tempDir("cairn-export-det-");
  const a = exportInChild(join(dir, "a"), "022", { LC_ALL: "C", TZ: "UTC" }, "/usr/bin/sh");
  const b = exportInChild(join(dir, "b"), "077", { LC_ALL: "tr_TR.UTF-8", LANG: "tr_TR.UTF-8", TZ: "Pacific/Chatham" }, "/usr/bin/sh");
  assert.equal(a.manifest, b.manifest);
  assert.deepEqual(a.files, b.files, "every file of the layout, bytes and mode");
  assert.ok(
    Object.values(a.files).every((f) => f.endsWith(" 600")),
    "owner-only files: the config holds env values",
  );
  // control: the comparison can fail
  const c = exportInChild(join(dir, "c"), "022", { LC_ALL: "C", TZ: "UTC" }, "/usr/bin/gcc");
  assert.notEqual(c.manifest, a.manifest);
});

test("refusals: unverified, tampered, mutable layer, no registry, host base, root user, existing output; each leaves nothing behind", async () => {
  const dir = tempDir("cairn-export-refuse-");
  const code = async (args: string[]): Promise<string> => {
    const r = await runCli(args, env);
    if (r.code === 0) return "ok";
    return (JSON.parse(r.stdout) as { error: { code: string; path: string } }).error.code;
  };
  // control
  assert.equal(await code(exportArgs(LOCK, join(dir, "ok"))), "ok");
  // another key
  const other = join(dir, "other");
  execFileSync(
    process.execPath,
    [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      `const m = await import(${JSON.stringify(join(PROJECT_ROOT, "src/core/index.ts"))}); m.writeKeyPair(${JSON.stringify(other)}, m.generateSigningKey(), true);`,
    ],
    { cwd: PROJECT_ROOT },
  );
  assert.equal(
    await code([
      "lock",
      "export",
      LOCK,
      "--pub",
      `${other}.pub`,
      "--registry",
      ex.registry,
      "--base",
      `rootfs:${ex.rootfs}`,
      "--oci",
      join(dir, "k"),
      "--json",
    ]),
    "SIGNATURE_INVALID",
  );
  // an edited lockfile with its old signature
  const edited = join(dir, "edited.lock");
  writeFileSync(edited, readFileSync(LOCK, "utf8").replace("LC_ALL: C.UTF-8", "LC_ALL: C"));
  writeFileSync(`${edited}.dsse.json`, readFileSync(`${LOCK}.dsse.json`));
  assert.notEqual(await code(exportArgs(edited, join(dir, "e"))), "ok");
  // a mutable layer
  const mprofile = join(dir, "mutable.yaml");
  writeFileSync(mprofile, `${readFileSync(PROFILE, "utf8")}mutable_layer: {name: work, version: "1"}\n`);
  const mlock = join(dir, "mutable.lock");
  // a dirty lock cannot be signed (LOCK_DIRTY, issue 13), so it is written unsigned; export names the real reason,
  // the mutable layer, before the signature check would report the missing signature
  const margs = resolveArgs(ex, mprofile, mlock);
  const signAt = margs.indexOf("--sign");
  margs.splice(signAt, 2);
  const mr = await runCli(margs, env);
  assert.equal(mr.code, 0, mr.stderr);
  for (const extra of [[], ["--allow-unsigned-offline"]]) {
    const m = await runCli(exportArgs(mlock, join(dir, "m"), extra), env);
    assert.equal(m.code, 1);
    const merr = (JSON.parse(m.stdout) as { error: { code: string; path: string } }).error;
    assert.deepEqual([merr.code, merr.path], ["LOCK_DIRTY", "/mutable_layer"], m.stdout);
    assert.equal(existsSync(join(dir, "m")), false);
  }
  // control: the same lockfile unsigned but clean is refused for its missing signature, not as dirty
  const cprofile = join(dir, "clean.yaml");
  writeFileSync(cprofile, readFileSync(PROFILE, "utf8"));
  const clock = join(dir, "clean.lock");
  const cargs = resolveArgs(ex, cprofile, clock);
  cargs.splice(cargs.indexOf("--sign"), 2);
  assert.equal((await runCli(cargs, env)).code, 0);
  assert.equal(await code(exportArgs(clock, join(dir, "m"))), "SIGNATURE_MISSING");
  // no registry, the host as base, root
  assert.equal(await code(["lock", "export", LOCK, "--pub", PUB, "--base", `rootfs:${ex.rootfs}`, "--oci", join(dir, "n"), "--json"]), "EXPORT_REFUSED");
  assert.equal(
    await code(["lock", "export", LOCK, "--pub", PUB, "--registry", ex.registry, "--base", "host", "--oci", join(dir, "h"), "--json"]),
    "EXPORT_REFUSED",
  );
  assert.equal(await code(exportArgs(LOCK, join(dir, "r"), ["--user", "0:0"])), "EXPORT_REFUSED");
  // another base: the re-probed digest differs
  const otherRoot = join(dir, "rootfs2");
  mkdirSync(otherRoot);
  const { writeToyRootfs } = await import("../../examples/strata/build-registry.ts");
  writeToyRootfs(otherRoot, { glibc: "2.31" });
  assert.equal(
    await code(["lock", "export", LOCK, "--pub", PUB, "--registry", ex.registry, "--base", `rootfs:${otherRoot}`, "--oci", join(dir, "b"), "--json"]),
    "BASE_MISMATCH",
  );
  // an existing output is never merged into
  assert.equal(await code(exportArgs(LOCK, join(dir, "ok"))), "USAGE");
  for (const n of ["k", "e", "m", "n", "h", "r", "b"]) assert.equal(existsSync(join(dir, n)), false, n);
  assert.deepEqual(
    readdirSync(dir).filter((n) => n.endsWith(".tmp")),
    [],
    "no staging directory is left",
  );
});

test("an oci: base exports its own layers byte for byte (gzip and plain tar), then the lockfile's layers", async () => {
  const { gunzipSync } = await import("node:zlib");
  const { buildLayerBlob } = await import("../../src/strata/index.ts");
  const { readDirectory } = await import("../../src/tree/index.ts");
  const { writeOciLayout } = await import("../workload/fixtures/oci-writer.ts");
  const tar = gunzipSync(buildLayerBlob(readDirectory(ex.rootfs)).blob);
  const extra = gunzipSync(
    buildLayerBlob([
      { type: "dir", path: "srv", mode: 0o755 },
      { type: "file", path: "srv/motd", mode: 0o644, data: Buffer.from("hi\n") },
    ]).blob,
  );
  const dir = join(tempDir("cairn-export-oci-"), "base");
  const img = writeOciLayout(dir, { layers: [{ tar }, { tar: extra, gzip: false }], config: { Cmd: ["/bin/sh"], User: "1000" } });
  const base = `oci:${dir}@${img.manifestDigest}`;
  const lock = join(tempDir("cairn-export-oci-lock-"), "oci.lock");
  const r = await runCli([...resolveArgs(ex, PROFILE, lock).map((a) => (a === `rootfs:${ex.rootfs}` ? base : a))], env);
  assert.equal(r.code, 0, r.stderr);
  const out = join(tempDir("cairn-export-oci-out-"), "img");
  const e = await runCli(["lock", "export", lock, "--pub", PUB, "--registry", ex.registry, "--base", base, "--oci", out, "--json"], env);
  assert.equal(e.code, 0, e.stderr + e.stdout);
  const manifest = (JSON.parse(e.stdout) as { manifest: string }).manifest;
  const src = await readOciSource({ layoutDir: out, manifestDigest: manifest, stagingDir: join(tempDir("cairn-export-oci-read-"), "s") });
  const l = readLockfile(lock).lock;
  assert.deepEqual(
    src.layers.map((x) => [x.digest, x.mediaType]),
    [
      ...img.layers.map((x) => [x.digest, x.mediaType]),
      ...[...l.layers].sort((a, b) => a.mount_order! - b.mount_order!).map((x) => [x.sha256, "application/vnd.oci.image.layer.v1.tar+gzip"]),
    ],
  );
  assert.equal(img.layers[1]!.mediaType, "application/vnd.oci.image.layer.v1.tar", "the control layer is uncompressed");
  // control: the rootfs directory is not this lockfile's base
  const wrong = await runCli(
    ["lock", "export", lock, "--pub", PUB, "--registry", ex.registry, "--base", `rootfs:${ex.rootfs}`, "--oci", `${out}-2`, "--json"],
    env,
  );
  assert.equal((JSON.parse(wrong.stdout) as { error: { code: string } }).error.code, "BASE_MISMATCH");
});

test("progress on a terminal: resolve draws its stages and the layer blobs it checks, export the layers it verifies and stages; none with --quiet", async () => {
  const dir = tempDir("cairn-export-progress-");
  const lockPath = join(dir, "env.lock");
  const resolved = await runCliOnTerminal(resolveArgs(ex, PROFILE, lockPath), env);
  assert.equal(resolved.code, 0, resolved.stderr);
  const n = readLockfile(lockPath).lock.layers.length;
  assert.ok(n >= 1, "control: the lockfile has layers");
  const phases = (frames: string[]) => [...new Set(frames.map((f) => f.replace(/ [[\d].*$/, "")))];
  assert.deepEqual(phases(resolved.frames), ["resolve", "check layer blobs"]);
  assert.match(resolved.frames.filter((f) => f.startsWith("resolve ")).at(-1)!, /100% 7 steps\/7 steps$/);
  assert.match(resolved.frames.at(-1)!, new RegExp(`100% ${n} layers/${n} layers$`));
  const exported = await runCliOnTerminal(exportArgs(lockPath, join(dir, "img")), env);
  assert.equal(exported.code, 0, exported.stderr);
  assert.deepEqual(phases(exported.frames), ["verify layers", "stage layers"]);
  assert.match(exported.frames.at(-1)!, new RegExp(`100% ${n} layers/${n} layers$`));
  assert.equal(exported.frames.length, 2 * (n + 1), "one frame a layer and a first one, per phase");
  JSON.parse(exported.stdout); // stdout stays one document
  const quiet = await runCliOnTerminal([...exportArgs(lockPath, join(dir, "img2")), "--quiet"], env);
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.deepEqual(quiet.frames, []);
});
