// Lock export and frozen packages (issue 13 item 2): a frozen lockfile
// exports one more layer that places exactly the pinned archives, read from
// the index the lockfile recorded (or a mirror) and checked by size and
// sha256, with SHA256SUMS, a manifest, pip's hash-checking requirements file
// and an installer to run inside the image. GNU tar extracts the layer; the
// installer, cairn's own generated script, installs the test-made wheels into
// a scratch target with the host's pip (the archives are fixtures made here,
// not input). Refusals each next to a passing control.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { canonicalBytes, writeKeyPair } from "../../src/core/index.ts";
import { runCli } from "../helpers/cli.ts";
import { freezeLock, pinnedSets, viewLock, writeLockfile } from "../../src/strata/index.ts";
import type { PackagePin } from "../../src/strata/freeze/pins.ts";
import { EXPORT_PACKAGES_ROOT, installOrder } from "../../src/strata/export-packages.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { exportFixture, LOCK_KEY, pinnedFixture, type PinnedFixture } from "./export-fixtures.ts";
import { NOW, tempDir } from "./fixtures.ts";
import { sha256sum, writePipIndex } from "./freeze-fixtures.ts";

const pipMissing =
  spawnSync("python3", ["-m", "pip", "--version"]).status === 0 ? undefined : "python3 with pip (Debian package python3-pip, scripts/setup-host.sh)";

const dir = tempDir("cairn-export-pkg-");
const pypi = join(dir, "pypi");
writePipIndex(pypi, {
  gamma: { wheels: [{ version: "1.0", requires: ["delta<2"] }] },
  delta: { wheels: [{ version: "1.0" }, { version: "2.0" }] },
});

/** The fixture with a pip set [gamma], frozen against the local index, signed. */
async function frozenFixture(): Promise<PinnedFixture> {
  const f = await pinnedFixture({ extra: "packages:\n  - manager: pip\n    packages: [{name: gamma}]\n" });
  const frozen = (await freezeLock(f.lock, { indexes: { pip: pypi }, python: "3.12", cwd: dir })).lock;
  writeLockfile(f.lockPath, frozen, LOCK_KEY);
  return { ...f, lock: frozen };
}

/** Extracts the export's packages layer (an uncompressed tar blob of the layout) with GNU tar; returns the directory and its member list. */
function extractPackages(layout: string, digest: string): { root: string; members: string[] } {
  const blob = join(layout, "blobs", "sha256", digest.slice("sha256:".length));
  const root = join(tempDir("cairn-export-pkg-x-"), "root");
  mkdirSync(root);
  execFileSync("tar", ["-xf", blob, "-C", root]);
  return { root, members: execFileSync("tar", ["-tf", blob], { encoding: "utf8" }).trim().split("\n") };
}

test("a frozen lockfile exports the pinned archives, SHA256SUMS, manifest, requirements with hashes and an installer as one more layer", async () => {
  const f = await frozenFixture();
  const out = join(tempDir("cairn-export-pkg-out-"), "img");
  const r = await exportFixture(f, out);
  assert.deepEqual(
    r.added.map((a) => a.kind),
    ["packages"],
  );
  assert.equal(r.layout.layers, 1 + f.lock.layers.length + 1);
  const pkg = r.added[0]!;
  const { root, members } = extractPackages(out, pkg.digest);
  const d = `${EXPORT_PACKAGES_ROOT}/pip-0`;
  assert.deepEqual(members, [
    "opt/",
    "opt/cairn/",
    "opt/cairn/packages/",
    "opt/cairn/packages/install.sh",
    "opt/cairn/packages/pip-0/",
    "opt/cairn/packages/pip-0/SHA256SUMS",
    "opt/cairn/packages/pip-0/archives/",
    "opt/cairn/packages/pip-0/archives/delta-1.0-py3-none-any.whl",
    "opt/cairn/packages/pip-0/archives/gamma-1.0-py3-none-any.whl",
    "opt/cairn/packages/pip-0/install.sh",
    "opt/cairn/packages/pip-0/manifest.json",
    "opt/cairn/packages/pip-0/requirements.txt",
  ]);
  // The archives are the index's bytes (sha256sum, an oracle independent of cairn), and what the lockfile pins.
  const pins = f.lock.packages[0]!.frozen!.pins;
  for (const name of ["delta", "gamma"]) {
    const file = `${name}-1.0-py3-none-any.whl`;
    assert.equal(sha256sum(join(root, d, "archives", file)), sha256sum(join(pypi, name, file)));
    assert.equal(sha256sum(join(root, d, "archives", file)), pins.find((p) => p.filename === file)!.sha256);
  }
  const hex = (n: string): string => sha256sum(join(pypi, n, `${n}-1.0-py3-none-any.whl`)).slice("sha256:".length);
  assert.equal(readFileSync(join(root, d, "requirements.txt"), "utf8"), `delta==1.0 --hash=sha256:${hex("delta")}\ngamma==1.0 --hash=sha256:${hex("gamma")}\n`);
  execFileSync("sha256sum", ["--check", "--strict", "--quiet", "SHA256SUMS"], { cwd: join(root, d) });
  const manifest = JSON.parse(readFileSync(join(root, d, "manifest.json"), "utf8")) as { format: string; manager: string; archives: { sha256: string }[] };
  assert.deepEqual([manifest.format, manifest.manager, manifest.archives.map((a) => a.sha256)], ["cairn.packages/1", "pip", pins.map((p) => p.sha256)]);
  assert.ok(readFileSync(join(root, d, "manifest.json")).equals(canonicalBytes(manifest)), "the manifest is JCS");
  assert.ok(r.caveats.some((c) => c.includes("not installed: run /opt/cairn/packages/install.sh inside the image")));

  // The same lockfile, archives read from a mirror: the same image (the layer follows from the pins, not from where they were read).
  const mirror = join(tempDir("cairn-export-pkg-mirror-"), "pypi");
  cpSync(pypi, mirror, { recursive: true });
  const m = await exportFixture(f, join(tempDir("cairn-export-pkg-out-"), "img"), { packageIndexes: { pip: mirror } });
  assert.equal(m.layout.manifest.digest, r.layout.manifest.digest);
});

test("the installer checks every archive and installs exactly the pinned wheels with no index; a changed archive stops it", {
  skip: needs(pipMissing),
}, async () => {
  const f = await frozenFixture();
  const out = join(tempDir("cairn-export-pkg-out-"), "img");
  const r = await exportFixture(f, out);
  const { root } = extractPackages(out, r.added[0]!.digest);
  const install = (target: string): number | null => {
    const env = {
      PATH: "/usr/bin:/bin",
      HOME: tempDir("cairn-export-pkg-home-"),
      PIP_TARGET: target,
      PIP_NO_CACHE_DIR: "1",
      PIP_DISABLE_PIP_VERSION_CHECK: "1",
    };
    const python = execFileSync("sh", ["-c", "command -v python3"], { encoding: "utf8" }).trim();
    const p = spawnSync("sh", [join(root, EXPORT_PACKAGES_ROOT, "install.sh")], { env: { ...env, PYTHON: python }, stdio: ["ignore", "pipe", "pipe"] });
    return p.status;
  };
  const target = join(tempDir("cairn-export-pkg-site-"), "site");
  assert.equal(install(target), 0);
  const imported = execFileSync("python3", ["-c", "import gamma, delta; print(gamma.VERSION, delta.VERSION)"], {
    env: { ...process.env, PYTHONPATH: target },
    encoding: "utf8",
  });
  assert.equal(imported.trim(), "1.0 1.0");
  // Control: one changed byte in an archive, and the installer refuses before pip runs.
  appendFileSync(join(root, EXPORT_PACKAGES_ROOT, "pip-0", "archives", "delta-1.0-py3-none-any.whl"), "x");
  const tampered = join(tempDir("cairn-export-pkg-site-"), "site");
  assert.notEqual(install(tampered), 0);
  assert.equal(existsSync(join(tampered, "delta")), false);
});

test("an archive missing from the index, or not the pinned bytes, is refused and nothing is written; control: the mirror as frozen", async () => {
  const f = await frozenFixture();
  const wheel = join("delta", "delta-1.0-py3-none-any.whl");
  const cases: [string, (m: string) => void, string][] = [
    ["missing", (m) => rmSync(join(m, wheel)), "STORE_MISSING"],
    ["longer", (m) => appendFileSync(join(m, wheel), "x"), "SIZE_MISMATCH"],
    [
      "same size, other bytes",
      (m) => {
        const b = readFileSync(join(m, wheel));
        b[b.length - 1] = b[b.length - 1]! ^ 0xff;
        writeFileSync(join(m, wheel), b);
      },
      "DIGEST_MISMATCH",
    ],
  ];
  for (const [what, edit, code] of cases) {
    const mirror = join(tempDir("cairn-export-pkg-mirror-"), "pypi");
    cpSync(pypi, mirror, { recursive: true });
    edit(mirror);
    const out = join(tempDir("cairn-export-pkg-out-"), "img");
    const e = await assertCodeAsync(() => exportFixture(f, out, { packageIndexes: { pip: mirror } }), code as never);
    assert.match(e.path ?? "", /^\/packages\/0\/frozen\/pins\/0/, what);
    assert.equal(existsSync(out), false, what);
  }
  const good = join(tempDir("cairn-export-pkg-mirror-"), "pypi");
  cpSync(pypi, good, { recursive: true });
  assert.equal((await exportFixture(f, join(tempDir("cairn-export-pkg-out-"), "img"), { packageIndexes: { pip: good } })).added.length, 1);
});

test("the install order puts dependencies first, ties by name", () => {
  const pin = (name: string, by: string[]): PackagePin =>
    ({ name, version: "1", kind: "cran", filename: `${name}_1.tar.gz`, sha256: `sha256:${"0".repeat(64)}`, size: 1, url: "x", requested_by: by }) as never;
  const order = installOrder([pin("app", ["request: app"]), pin("zlib", ["mid 1: zlib"]), pin("mid", ["app 1: mid"]), pin("alone", ["request: alone"])]);
  assert.deepEqual(
    order.map((p) => p.name),
    ["alone", "zlib", "mid", "app"],
  );
});

test("CLI: lock export --index MIRROR --json reports the added packages layer; a mirror missing an archive exits 1 (STORE_MISSING)", async () => {
  const f = await frozenFixture();
  const keys = writeKeyPair(join(f.root, "lock"), LOCK_KEY);
  const base = ["lock", "export", f.lockPath, "--pub", keys.pubPath, "--registry", f.registry.root, "--base", `rootfs:${f.rootfs}`];
  const mirror = join(tempDir("cairn-export-pkg-mirror-"), "pypi");
  cpSync(pypi, mirror, { recursive: true });
  const out = join(tempDir("cairn-export-pkg-out-"), "img");
  const r = await runCli([...base, "--oci", out, "--index", mirror, "--json"], { ...process.env, CAIRN_NOW: NOW.toISOString() });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const j = JSON.parse(r.stdout) as { added: { kind: string; digest: string }[]; layers: number };
  assert.deepEqual(
    j.added.map((a) => a.kind),
    ["packages"],
  );
  assert.equal(j.layers, 1 + f.lock.layers.length + 1);
  rmSync(join(mirror, "gamma"), { recursive: true });
  const bad = await runCli([...base, "--oci", `${out}-2`, "--index", mirror, "--json"], { ...process.env, CAIRN_NOW: NOW.toISOString() });
  assert.equal(bad.code, 1);
  assert.equal((JSON.parse(bad.stdout) as { error: { code: string } }).error.code, "STORE_MISSING");
});

test("a pinned version that is not one plain word is refused (LOCK_INVALID at its pointer) before anything is written; control: as frozen", async () => {
  const f = await frozenFixture();
  const set = f.lock.packages[0]!;
  const pins = set.frozen!.pins.map((p, j) => (j === 1 ? { ...p, version: "1.0 --index-url=https://example.invalid/" } : p));
  const sets = [{ ...set, frozen: { ...set.frozen!, pins } }];
  const hostile = viewLock({ ...f.lock.spec, packages: pinnedSets(sets) }, { ...f.lock.records, packages: sets });
  writeLockfile(f.lockPath, hostile, LOCK_KEY);
  const out = join(tempDir("cairn-export-pkg-out-"), "img");
  const e = await assertCodeAsync(() => exportFixture(f, out), "LOCK_INVALID");
  assert.equal(e.path, "/packages/0/frozen/pins/1/version");
  assert.equal(existsSync(out), false);
  writeLockfile(f.lockPath, f.lock, LOCK_KEY);
  assert.equal((await exportFixture(f, out)).added.length, 1);
});
