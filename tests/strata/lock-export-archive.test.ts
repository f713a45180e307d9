/**
 * `lock export --format oci-archive --out FILE` (issue 32, item 6): the
 * exported layout as one deterministic tar (members sorted by name bytes,
 * 0:0, mtime 0, no user names), written atomically, that skopeo reads
 * (`inspect oci-archive:FILE[:NAME]`, `copy oci-archive:FILE oci:DIR`) and
 * cairn's own oci-archive reader imports to the same manifest digest.
 * Refusals leave nothing at FILE and no temporary sibling.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { exampleRegistry, resolveArgs, tempDir } from "./fixtures.ts";
import { sha256 } from "../../src/core/index.ts";
import { writeOciArchive, OCI_LAYER_TAR } from "../../src/oci/index.ts";

const ex = exampleRegistry();
const PROFILE = join(PROJECT_ROOT, "examples/strata/profile.yaml");
const env = { ...process.env, CAIRN_NOW: "2026-03-01T12:00:00.000Z" };
const LOCK = join(ex.root, "env.lock");
const PUB = join(ex.root, "lock.pub");
const VERIFY = ["--pub", PUB, "--registry", ex.registry, "--base", `rootfs:${ex.rootfs}`];

function has(cmd: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;
}

function errorOf(stdout: string): { code: string; path: string } {
  const { code, path } = (JSON.parse(stdout) as { error: { code: string; path: string } }).error;
  return { code, path };
}

const resolved = await runCli(resolveArgs(ex, PROFILE, LOCK), env);
assert.equal(resolved.code, 0, resolved.stderr);

test("--format oci-archive writes one deterministic tar of the layout; skopeo and cairn's own reader read it as the layout's image", async () => {
  const dir = tempDir("cairn-export-archive-");
  const file = join(dir, "image.tar");
  const r = await runCli(["lock", "export", LOCK, ...VERIFY, "--format", "oci-archive", "--out", file, "--tag", "v1", "--json"], env);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const j = JSON.parse(r.stdout) as { manifest: string; archive: { file: string; sha256: string; size: number } };
  assert.equal(j.archive.file, file);
  assert.equal(j.archive.sha256, sha256(readFileSync(file)));
  assert.equal(j.archive.size, statSync(file).size);
  assert.equal(statSync(file).mode & 0o777, 0o600, "private, as the layout is (the config holds env values)");

  // the same image as the layout form: same manifest digest; the archive holds exactly the layout's files, same bytes
  const layout = join(dir, "layout");
  const l = await runCli(["lock", "export", LOCK, ...VERIFY, "--oci", layout, "--tag", "v1", "--json"], env);
  assert.equal(l.code, 0, l.stderr);
  assert.equal((JSON.parse(l.stdout) as { manifest: string }).manifest, j.manifest);
  const listing = execFileSync("tar", ["--list", "--verbose", "--numeric-owner", "--full-time", "-f", file], {
    encoding: "utf8",
    env: { ...process.env, TZ: "UTC" },
  })
    .trim()
    .split("\n");
  const names = listing.map((line) => line.split(/\s+/).slice(5).join(" "));
  const blobs = readdirSync(join(layout, "blobs", "sha256")).sort();
  assert.deepEqual(names, ["blobs/", "blobs/sha256/", ...blobs.map((b) => `blobs/sha256/${b}`), "index.json", "oci-layout"], "sorted by name bytes");
  for (const line of listing) assert.match(line, /^\S+ 0\/0 +\d+ 1970-01-01 00:00:00 /, `0:0, mtime 0: ${line}`);
  const extracted = join(dir, "extracted");
  execFileSync("mkdir", [extracted]);
  execFileSync("tar", ["-xf", file, "-C", extracted]);
  for (const n of ["index.json", "oci-layout", ...blobs.map((b) => `blobs/sha256/${b}`)])
    assert.equal(sha256(readFileSync(join(extracted, n))), sha256(readFileSync(join(layout, n))), n);

  // deterministic: a second export is the same bytes; control: another --cmd is another archive
  const again = join(dir, "again.tar");
  assert.equal((await runCli(["lock", "export", LOCK, ...VERIFY, "--format", "oci-archive", "--out", again, "--tag", "v1"], env)).code, 0);
  assert.equal(sha256(readFileSync(again)), j.archive.sha256);
  const other = join(dir, "other.tar");
  assert.equal((await runCli(["lock", "export", LOCK, ...VERIFY, "--format", "oci-archive", "--out", other, "--cmd", "/usr/bin/sh"], env)).code, 0);
  assert.notEqual(sha256(readFileSync(other)), j.archive.sha256);

  // cairn's own oci-archive reader (pull oci-archive:FILE) imports it to the same manifest digest
  const pulled = await runCli(["pull", `oci-archive:${file}`, "--oci", join(dir, "pulled"), "--json"], { ...env, CAIRN_HOME: join(dir, "home") });
  assert.equal(pulled.code, 0, pulled.stderr + pulled.stdout);
  assert.match(pulled.stdout, new RegExp(j.manifest));

  if (has("skopeo")) {
    for (const ref of [`oci-archive:${file}`, `oci-archive:${file}:v1`]) {
      const inspect = JSON.parse(execFileSync("skopeo", ["inspect", ref], { encoding: "utf8" })) as { Digest: string };
      assert.equal(inspect.Digest, j.manifest, ref);
    }
    // control: a name the archive does not carry
    assert.notEqual(spawnSync("skopeo", ["inspect", `oci-archive:${file}:v2`]).status, 0);
    const copied = join(dir, "copied");
    execFileSync("skopeo", ["copy", "--preserve-digests", `oci-archive:${file}`, `oci:${copied}:v1`], { stdio: "pipe" });
    const index = JSON.parse(readFileSync(join(copied, "index.json"), "utf8")) as { manifests: { digest: string }[] };
    assert.equal(index.manifests[0]!.digest, j.manifest);
  }
});

test("refusals leave nothing at FILE and no temporary sibling; an existing FILE is never replaced", async () => {
  const dir = tempDir("cairn-export-archive-refuse-");
  const code = async (args: string[]): Promise<{ code: string; path: string } | "ok"> => {
    const r = await runCli([...args, "--json"], env);
    return r.code === 0 ? "ok" : errorOf(r.stdout);
  };
  const file = join(dir, "image.tar");
  // control
  assert.equal(await code(["lock", "export", LOCK, ...VERIFY, "--format", "oci-archive", "--out", file]), "ok");
  // an existing file is kept as it was
  const existing = join(dir, "existing.tar");
  writeFileSync(existing, "mine\n");
  assert.deepEqual(await code(["lock", "export", LOCK, ...VERIFY, "--format", "oci-archive", "--out", existing]), { code: "USAGE", path: existing });
  assert.equal(readFileSync(existing, "utf8"), "mine\n");
  // a verification failure (another key) writes nothing
  const failed = join(dir, "failed.tar");
  const other = await code([
    "lock",
    "export",
    LOCK,
    "--pub",
    join(ex.root, "registry.pub"),
    "--registry",
    ex.registry,
    "--base",
    `rootfs:${ex.rootfs}`,
    "--format",
    "oci-archive",
    "--out",
    failed,
  ]);
  assert.equal(other !== "ok" && other.code, "SIGNATURE_INVALID");
  assert.equal(existsSync(failed), false);
  // flag combinations: an unknown format, --oci with oci-archive, neither or both of --oci/--out
  assert.deepEqual(await code(["lock", "export", LOCK, ...VERIFY, "--format", "tar", "--out", join(dir, "x")]), { code: "USAGE", path: "--format" });
  assert.deepEqual(await code(["lock", "export", LOCK, ...VERIFY, "--format", "oci-archive", "--oci", join(dir, "x")]), { code: "USAGE", path: "--oci" });
  assert.deepEqual(await code(["lock", "export", LOCK, ...VERIFY]), { code: "USAGE", path: "--out" });
  assert.deepEqual(await code(["lock", "export", LOCK, ...VERIFY, "--oci", join(dir, "x"), "--out", join(dir, "y")]), { code: "USAGE", path: "--out" });
  // control: --out with the default format is a layout directory
  assert.equal(await code(["lock", "export", LOCK, ...VERIFY, "--out", join(dir, "layout")]), "ok");
  assert.ok(existsSync(join(dir, "layout", "index.json")));
  assert.deepEqual(readdirSync(dir).sort(), ["existing.tar", "image.tar", "layout"], "no temporary sibling, no partial output");
});

test("library: a layer whose bytes are not its descriptor's leaves no archive and no temporary sibling (control: the right bytes archive)", () => {
  const dir = tempDir("cairn-archive-lib-");
  const tar = Buffer.alloc(1024);
  const layer = { mediaType: OCI_LAYER_TAR, digest: sha256(tar), size: tar.length, diffId: sha256(tar), blob: { bytes: tar } } as const;
  const image = { config: {}, layers: [layer], annotations: {}, access: "public" } as const;
  const good = writeOciArchive(join(dir, "good.tar"), image);
  assert.equal(good.archive.sha256, sha256(readFileSync(join(dir, "good.tar"))));
  assert.throws(
    () => writeOciArchive(join(dir, "bad.tar"), { ...image, layers: [{ ...layer, blob: { bytes: Buffer.alloc(1024, 1) } }] }),
    (e: { code?: string }) => e.code === "DIGEST_MISMATCH",
  );
  assert.deepEqual(readdirSync(dir), ["good.tar"]);
});

test("hidden siblings a killed export would leave (planted, with a pid no process has) are removed by the next export of the same name; a live writer's and another name's are kept", async () => {
  const dir = tempDir("cairn-export-abandoned-");
  const dead = spawnSync("true").pid!; // exited: no process has this pid now
  const planted = (name: string, pid: number): string => {
    const p = join(dir, `.${name}.${pid}.0123456789ab.tmp`);
    mkdirSync(join(p, "layout", "blobs"), { recursive: true });
    writeFileSync(join(p, "archive.tar"), Buffer.alloc(4096));
    return p;
  };
  const deadArchive = planted("image.tar", dead);
  const liveArchive = planted("image.tar", process.pid);
  const deadLayout = planted("layout", dead);
  const liveLayout = planted("layout", process.pid);
  const otherName = planted("other.tar", dead);
  assert.equal((await runCli(["lock", "export", LOCK, ...VERIFY, "--format", "oci-archive", "--out", join(dir, "image.tar")], env)).code, 0);
  assert.equal((await runCli(["lock", "export", LOCK, ...VERIFY, "--oci", join(dir, "layout")], env)).code, 0);
  assert.equal(existsSync(deadArchive), false, "a dead writer's archive sibling is removed");
  assert.equal(existsSync(deadLayout), false, "a dead writer's layout sibling is removed");
  assert.ok(existsSync(liveArchive) && existsSync(liveLayout), "a live writer's siblings are kept");
  assert.ok(existsSync(otherName), "another name's sibling is not this export's to remove");
  // what a running export leaves beside FILE is one hidden directory, removed when it ends
  assert.deepEqual(
    readdirSync(dir)
      .filter((n) => n.startsWith("."))
      .sort(),
    [liveArchive, liveLayout, otherName].map((p) => p.slice(dir.length + 1)).sort(),
  );
});
