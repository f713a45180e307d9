// `cairn layer capture` (issue 32, item 6): an existing install becomes a
// signed layer whose manifest records capture_source, original_prefix and
// normalized. A conda environment built here (capture-fixtures.ts) is
// captured: its prefix read from conda-meta, text files naming it rewritten to
// the layer's mount path, the gcc-built ELF naming it left byte for byte and
// listed; the same bytes give the same layer. Hostile trees are refused with
// typed errors, each next to a passing control, and a refusal publishes
// nothing. The docs example runs as written.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256 } from "../../src/core/index.ts";
import { captureLayer, type LayerSpec } from "../../src/strata/index.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { condaEnv } from "./capture-fixtures.ts";
import { tempDir } from "./fixtures.ts";

const SPEC: LayerSpec = {
  name: "pyenv",
  version: "1.0",
  arch: "noarch",
  abi: "none",
  install_layout: "prefix",
  user_selectable: true,
  provides: [],
  requires: [],
  builder: "cairn test",
};

interface Captured {
  code: number;
  out: Record<string, unknown> & {
    id: string;
    sha256: string;
    capture: { source: string; original_prefix: string; normalized: boolean; rewritten: string[]; left: string[] };
  };
  registry: string;
  stderr: string;
}

async function capture(dir: string, extra: string[], registry = join(tempDir("cairn-capture-reg-"), "reg")): Promise<Captured> {
  const key = await ensureKey();
  const r = await runCli([
    "layer",
    "capture",
    dir,
    "--name",
    "pyenv",
    "--version",
    "1.0",
    "--registry",
    registry,
    "--init-registry",
    "--key",
    key,
    "--json",
    ...extra,
  ]);
  return { code: r.code, out: JSON.parse(r.stdout || "{}"), registry, stderr: r.stderr };
}

let KEY: string | undefined;
async function ensureKey(): Promise<string> {
  if (KEY === undefined) {
    const d = tempDir("cairn-capture-key-");
    const r = await runCli(["keygen", "--out", join(d, "k")]);
    assert.equal(r.code, 0, r.stderr);
    KEY = join(d, "k.key");
  }
  return KEY;
}

/** The blob's files, unpacked by the system tar into a fresh directory. */
function unpack(registry: string, digest: string): string {
  const out = tempDir("cairn-capture-unpacked-");
  execFileSync("tar", ["-xzf", join(registry, "blobs", "sha256", digest.slice(7)), "-C", out]);
  return out;
}

test("a conda environment is captured: prefix from conda-meta, text files rewritten to /opt/NAME/VERSION, the ELF left and listed, the seed document records it", async () => {
  const env = condaEnv();
  const c = await capture(env.dir, ["--source", "conda"]);
  assert.equal(c.code, 0, c.stderr);
  const m = "/opt/pyenv/1.0";
  assert.deepEqual(c.out.capture.source, "conda");
  assert.equal(c.out.capture.original_prefix, env.prefix);
  assert.equal(c.out.capture.normalized, true);
  assert.deepEqual(c.out.capture.rewritten, [`${m}/bin/pip`, `${m}/conda-meta/history`, `${m}/lib/libpython3.12.so`, `${m}/lib/pkgconfig/python-3.12.pc`]);
  assert.deepEqual(c.out.capture.left, [`${m}/bin/hello`]);
  // The bytes: text rewritten, the near-miss names kept, the ELF untouched, the absolute link moved with the tree.
  const root = unpack(c.registry, c.out.sha256);
  const at = (p: string) => join(root, m, p);
  assert.match(readFileSync(at("bin/pip"), "utf8"), new RegExp(`^#!${m}/bin/python3\\.12\\n`));
  assert.equal(readFileSync(at("lib/pkgconfig/python-3.12.pc"), "utf8").split("\n")[0], `prefix=${m}`);
  assert.equal(readFileSync(at("share/doc/NOTES"), "utf8"), readFileSync(join(env.dir, "share/doc/NOTES"), "utf8"));
  assert.equal(sha256(readFileSync(at("bin/hello"))), sha256(readFileSync(join(env.dir, "bin/hello"))));
  assert.ok(readFileSync(at("bin/hello")).includes(Buffer.from(env.prefix)), "the ELF still names the original prefix (left, not corrupted)");
  assert.equal(execFileSync("readlink", [at("lib/libpython3.12.so")], { encoding: "utf8" }).trim(), `${m}/lib/libpython3.12.so.1.0`);
  assert.equal(execFileSync("readlink", [at("bin/python3")], { encoding: "utf8" }).trim(), "python3.12");
  // The registry's seed document (what Strata reads) records the capture.
  const doc = JSON.parse(readFileSync(join(c.registry, "layers", `${c.out.id}.json`), "utf8")) as Record<string, unknown>;
  assert.equal(doc.capture_source, "conda");
  assert.equal(doc.original_prefix, env.prefix);
  assert.equal(doc.normalized, true);
  // The text report lists what was rewritten and what was left.
  const key = await ensureKey();
  const t = await runCli(["layer", "capture", env.dir, "--source", "conda", "--name", "pyenv", "--version", "1.1", "--registry", c.registry, "--key", key]);
  assert.equal(t.code, 0, t.stderr);
  assert.match(t.stdout, /rewritten \/opt\/pyenv\/1\.1\/bin\/pip/);
  assert.match(t.stdout, /left {6}\/opt\/pyenv\/1\.1\/bin\/hello/);
});

test("conda: the prefix is the one conda-meta/history names (a copied env), and a prefix conda-meta contradicts is refused", async () => {
  const env = condaEnv();
  const copy = join(tempDir("cairn-conda-copy-"), "sci");
  cpSync(env.dir, copy, { recursive: true, verbatimSymlinks: true });
  const c = await capture(copy, ["--source", "conda"]);
  assert.equal(c.code, 0, c.stderr);
  assert.equal(c.out.capture.original_prefix, env.prefix, "read from conda-meta/history, not the copy's path");
  // The same copy made with -n (history names no prefix): the prefix would be the copy's path, which the files conda wrote do not name.
  const named = condaEnv({ cmd: () => "/opt/conda/bin/conda create -n sci python=3.12" });
  const copy2 = join(tempDir("cairn-conda-copy-"), "sci");
  cpSync(named.dir, copy2, { recursive: true, verbatimSymlinks: true });
  const bad = await capture(copy2, ["--source", "conda"]);
  assert.equal(bad.code, 1);
  assert.equal((bad.out as unknown as { error: { code: string; path: string } }).error.code, "CAPTURE_REFUSED");
  assert.equal((bad.out as unknown as { error: { path: string } }).error.path, join(copy2, "bin/pip"));
  assert.equal(readdirSync(join(bad.registry, "layers")).length, 0, "nothing published on refusal");
  assert.equal(readdirSync(join(bad.registry, "blobs", "sha256")).length, 0, "no blob published on refusal");
  // Control: --prefix names where it was installed.
  const ok = await capture(copy2, ["--source", "conda", "--prefix", named.prefix]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.out.capture.original_prefix, named.prefix);
});

test("same bytes in, same layer: mtimes and modes beyond the execute bits do not change the digest; one byte of content does", async () => {
  const env = condaEnv({ elf: false });
  const a = await capture(env.dir, ["--source", "conda"]);
  assert.equal(a.code, 0, a.stderr);
  utimesSync(join(env.dir, "bin", "pip"), 1_000_000, 1_000_000);
  chmodSync(join(env.dir, "lib", "pkgconfig", "python-3.12.pc"), 0o664);
  const b = await capture(env.dir, ["--source", "conda"]);
  assert.equal(b.out.sha256, a.out.sha256);
  assert.equal(b.out.manifest_sha256, a.out.manifest_sha256);
  // Control: one byte of content changes the layer.
  writeFileSync(join(env.dir, "share", "doc", "NOTES"), "changed\n");
  const c = await capture(env.dir, ["--source", "conda"]);
  assert.notEqual(c.out.sha256, a.out.sha256);
});

test("filesystem: --prefix defaults to the directory's path; rootfs layout keeps the install root and rewrites nothing", async () => {
  const env = condaEnv({ elf: false });
  const p = await capture(env.dir, ["--source", "filesystem"]);
  assert.equal(p.code, 0, p.stderr);
  assert.equal(p.out.capture.source, "filesystem");
  assert.equal(p.out.capture.original_prefix, env.prefix);
  assert.equal(p.out.capture.normalized, true);
  const r = await capture(env.dir, ["--source", "filesystem", "--install-layout", "rootfs"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.out.capture.normalized, false);
  assert.deepEqual(r.out.capture.rewritten, []);
  const root = unpack(r.registry, r.out.sha256);
  assert.equal(readFileSync(join(root, env.prefix, "bin/pip"), "utf8"), readFileSync(join(env.dir, "bin/pip"), "utf8"));
  const doc = JSON.parse(readFileSync(join(r.registry, "layers", `${r.out.id}.json`), "utf8")) as Record<string, unknown>;
  assert.equal(doc.capture_source, "filesystem");
  assert.equal(doc.normalized, undefined, "normalized false is omitted as Go's omitempty does");
});

test("--require-relocatable refuses binaries still naming the install root; without it they are left and listed", async () => {
  const env = condaEnv();
  const bad = await capture(env.dir, ["--source", "conda", "--require-relocatable"]);
  assert.equal(bad.code, 1);
  assert.equal((bad.out as unknown as { error: { code: string; path: string } }).error.code, "CAPTURE_REFUSED");
  assert.equal((bad.out as unknown as { error: { path: string } }).error.path, "/opt/pyenv/1.0/bin/hello");
  assert.equal(readdirSync(join(bad.registry, "layers")).length, 0);
  const noElf = condaEnv({ elf: false });
  const ok = await capture(noElf.dir, ["--source", "conda", "--require-relocatable"]);
  assert.equal(ok.code, 0, ok.stderr);
});

/** A small tree to break in one way at a time. */
function tree(): string {
  const d = join(tempDir("cairn-capture-tree-"), "app");
  mkdirSync(join(d, "bin"), { recursive: true });
  writeFileSync(join(d, "bin", "tool"), "#!/bin/sh\necho tool\n", { mode: 0o755 });
  return d;
}

const fs = { source: "filesystem" } as const;
const out = () => join(tempDir("cairn-capture-out-"), "layer.tar.gz");

test("hostile trees: links out of the tree, special files, setuid, paths over the gate's limits, a relative prefix, conda without conda-meta; each with a control", async () => {
  // Control: the plain tree captures.
  await captureLayer(tree(), SPEC, fs, out());

  const abs = tree();
  symlinkSync("/etc/passwd", join(abs, "bin", "passwd"));
  await assertCodeAsync(() => captureLayer(abs, SPEC, fs, out()), "PATH_UNSAFE", join(abs, "bin", "passwd"));
  const inside = tree();
  symlinkSync(join(inside, "bin", "tool"), join(inside, "bin", "tool2")); // absolute, into the tree: allowed (and moved)
  const ins = await captureLayer(inside, SPEC, fs, out());
  assert.equal(ins.manifest.symlinks.get("/opt/pyenv/1.0/bin/tool2"), "/opt/pyenv/1.0/bin/tool");

  const climb = tree();
  symlinkSync("../../etc", join(climb, "bin", "up"));
  await assertCodeAsync(() => captureLayer(climb, SPEC, fs, out()), "PATH_UNSAFE", join(climb, "bin", "up"));
  const rel = tree();
  symlinkSync("../bin/tool", join(rel, "bin", "again")); // relative, stays inside: control
  await captureLayer(rel, SPEC, fs, out());

  const fifo = tree();
  execFileSync("mkfifo", [join(fifo, "bin", "pipe")]);
  await assertCodeAsync(() => captureLayer(fifo, SPEC, fs, out()), "SOURCE_NOT_REGULAR", join(fifo, "bin", "pipe"));

  const suid = tree();
  chmodSync(join(suid, "bin", "tool"), 0o4755);
  await assertCodeAsync(() => captureLayer(suid, SPEC, fs, out()), "CAPTURE_REFUSED", join(suid, "bin", "tool"));
  chmodSync(join(suid, "bin", "tool"), 0o2755);
  await assertCodeAsync(() => captureLayer(suid, SPEC, fs, out()), "CAPTURE_REFUSED", join(suid, "bin", "tool"));
  chmodSync(join(suid, "bin", "tool"), 0o755);
  await captureLayer(suid, SPEC, fs, out());

  const deep = tree();
  const parts = Array.from({ length: 70 }, () => "d");
  mkdirSync(join(deep, ...parts), { recursive: true });
  const e = await assertCodeAsync(() => captureLayer(deep, SPEC, fs, out()), "LIMIT_EXCEEDED");
  assert.match(e.message, /capture\.max_depth/);
  const shallow = tree();
  mkdirSync(join(shallow, ...parts.slice(0, 50)), { recursive: true });
  await captureLayer(shallow, SPEC, fs, out());

  await assertCodeAsync(() => captureLayer(tree(), SPEC, { ...fs, unsafePrefix: "opt/app" }, out()), "USAGE", "--prefix");
  await assertCodeAsync(() => captureLayer(tree(), SPEC, { ...fs, unsafePrefix: "/opt/../etc" }, out()), "USAGE", "--prefix");
  await captureLayer(tree(), SPEC, { ...fs, unsafePrefix: "/opt/app" }, out());

  const plain = tree();
  await assertCodeAsync(() => captureLayer(plain, SPEC, { source: "conda" }, out()), "CAPTURE_REFUSED", join(plain, "conda-meta"));
  mkdirSync(join(plain, "conda-meta"));
  writeFileSync(join(plain, "conda-meta", "x-1-0.json"), JSON.stringify({ name: "x", version: "1", files: ["../../etc/passwd"] }));
  await assertCodeAsync(() => captureLayer(plain, SPEC, { source: "conda" }, out()), "CAPTURE_REFUSED");
  writeFileSync(join(plain, "conda-meta", "x-1-0.json"), JSON.stringify({ name: "x", version: "1", files: ["bin/tool"] }));
  const ok = await captureLayer(plain, SPEC, { source: "conda" }, out());
  assert.equal(ok.report.packages?.[0], "x@1");
});

test("hard links are captured as the bytes they share: two files, one digest", async () => {
  const d = tree();
  linkSync(join(d, "bin", "tool"), join(d, "bin", "tool-link"));
  const c = await captureLayer(d, SPEC, fs, out());
  const a = c.manifest.content_manifest.get("/opt/pyenv/1.0/bin/tool");
  assert.ok(a !== undefined);
  assert.equal(c.manifest.content_manifest.get("/opt/pyenv/1.0/bin/tool-link"), a);
});

test("a refused capture publishes nothing (CLI); an unknown --source is a usage error", async () => {
  const d = tree();
  symlinkSync("/etc/shadow", join(d, "bin", "shadow"));
  const c = await capture(d, ["--source", "filesystem"]);
  assert.equal(c.code, 1);
  assert.equal((c.out as unknown as { error: { code: string } }).error.code, "PATH_UNSAFE");
  assert.deepEqual(readdirSync(join(c.registry, "layers")), []);
  assert.deepEqual(readdirSync(join(c.registry, "blobs", "sha256")), []);
  const bad = await runCli(["layer", "capture", d, "--source", "nope", "--name", "x", "--version", "1", "--registry", c.registry, "--key", await ensureKey()]);
  assert.equal(bad.code, 2);
});

/** The sh block of docs/strata.md's "Capturing an existing install" section. */
function docExample(): string {
  const doc = readFileSync(join(PROJECT_ROOT, "docs/strata.md"), "utf8");
  const start = doc.indexOf("\n### Capturing an existing install");
  assert.ok(start > 0, "docs/strata.md has the section");
  const block = /```sh\n([\s\S]*?)```/.exec(doc.slice(start));
  assert.ok(block, "the section has an sh example");
  return block[1]!;
}

test("docs/strata.md: the capture example runs as written", () => {
  const home = tempDir("cairn-capture-doc-");
  assert.ok(existsSync(join(PROJECT_ROOT, "dist")), "npm run build first (the example runs bin/cairn.js)");
  const r = spawnSync("bash", ["-euo", "pipefail", "-c", docExample()], {
    cwd: PROJECT_ROOT,
    encoding: "utf8",
    env: { ...process.env, CAIRN_HOME: home, TMPDIR: home },
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /normalized true/);
  // Control: the runner fails on a failing line.
  assert.notEqual(spawnSync("bash", ["-euo", "pipefail", "-c", "false\necho no"]).status, 0);
});

test("second pass: a prefix conda-meta/history names that no file conda wrote confirms is refused, not used to rewrite (control: --prefix)", async () => {
  // A history claiming `-p /etc`, on an env with no file conda marked: /etc would be rewritten to /opt/NAME/VERSION in every text file.
  const env = condaEnv({ cmd: () => "/opt/conda/bin/conda create -p /etc python", elf: false, record: { paths_data: { paths_version: 1, paths: [] } } });
  writeFileSync(join(env.dir, "bin", "conf"), "#!/bin/sh\ncat /etc/hosts\n", { mode: 0o755 });
  await assertCodeAsync(() => captureLayer(env.dir, SPEC, { source: "conda" }, out()), "CAPTURE_REFUSED", join(env.dir, "conda-meta", "history"));
  const ok = await captureLayer(env.dir, SPEC, { source: "conda", unsafePrefix: env.prefix }, out());
  assert.equal(ok.report.original_prefix, env.prefix);
  assert.ok(!ok.report.rewritten.includes("/opt/pyenv/1.0/bin/conf"));
});

test("second pass: a file name with a newline cannot forge a line of the text report (it is printed quoted; control: a plain name is printed as is)", async () => {
  const d = tree();
  writeFileSync(join(d, "bin", "x\n  left      forged"), `#!${d}/bin/tool\n`);
  writeFileSync(join(d, "bin", "plain"), `#!${d}/bin/tool\n`);
  const key = await ensureKey();
  const r = await runCli([
    "layer",
    "capture",
    d,
    "--source",
    "filesystem",
    "--name",
    "pyenv",
    "--version",
    "1.0",
    "--registry",
    join(tempDir("cairn-capture-reg-"), "reg"),
    "--init-registry",
    "--key",
    key,
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(!r.stdout.split("\n").some((l) => l.startsWith("  left")), r.stdout);
  assert.ok(r.stdout.includes('rewritten "/opt/pyenv/1.0/bin/x\\n  left      forged"'), r.stdout);
  assert.ok(r.stdout.includes("rewritten /opt/pyenv/1.0/bin/plain\n"), r.stdout);
});
