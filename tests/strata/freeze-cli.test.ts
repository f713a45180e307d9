/**
 * `cairn freeze` as a command: the lockfile written (signed or not), what
 * `--json` reports, exit codes of refusals, and `lock diff` / `lock id` on
 * the frozen lockfile.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { buildExampleRegistry } from "../../examples/strata/build-registry.ts";
import { writeDemoIndexes } from "../../examples/strata/package-indexes.ts";
import { join } from "node:path";
import { environmentId, readLockfile, strataEnvironmentId, writeLockfile } from "../../src/strata/index.ts";
import { runCli, runCliOnTerminal } from "../helpers/cli.ts";
import { tempDir } from "./fixtures.ts";
import { lockWith, sha256sum, writeCondaChannel, writePipIndex } from "./freeze-fixtures.ts";

const dir = tempDir("cairn-freeze-cli-");
const pypi = join(dir, "pypi");
writePipIndex(pypi, {
  gamma: { wheels: [{ version: "1.0", requires: ["delta<2"] }] },
  delta: { wheels: [{ version: "1.0" }, { version: "2.0" }] },
  left: { wheels: [{ version: "1.0", requires: ["delta>=2"] }] },
});
const conda = join(dir, "conda");
writeCondaChannel(conda, [{ name: "tzdata", version: "2024a" }]);

function writeLock(name: string, packages: string): string {
  const path = join(dir, name);
  writeLockfile(path, lockWith(packages, [{ name: "python", version: "3.12.4" }]));
  return path;
}

test("cairn freeze pins the pip set from a directory index, leaves the conda set unpinned and says so; lock diff shows the pins", async () => {
  const lock = writeLock("two.lock", "  - manager: pip\n    packages: [{name: gamma}]\n  - manager: conda\n    packages: [{name: tzdata}]\n");
  const out = join(dir, "two.frozen.lock");
  const r = await runCli(["freeze", lock, "--index", pypi, "--out", out, "--json"]);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const json = JSON.parse(r.stdout);
  assert.deepEqual(json.unpinned, ["conda"]);
  assert.deepEqual(
    json.packages[0].pins.map((p: { name: string; sha256: string }) => [p.name, p.sha256]),
    [
      ["delta", sha256sum(join(pypi, "delta", "delta-1.0-py3-none-any.whl"))],
      ["gamma", sha256sum(join(pypi, "gamma", "gamma-1.0-py3-none-any.whl"))],
    ],
  );
  assert.equal(json.packages[1].pinned, false);
  assert.ok(json.caveats.some((c: string) => c.includes("unpinned: conda")));
  const frozen = readLockfile(out).lock;
  assert.equal(json.environment_id, environmentId(frozen));
  const diff = await runCli(["lock", "diff", lock, out, "--json"]);
  assert.equal(diff.code, 1, "they differ");
  assert.deepEqual(
    JSON.parse(diff.stdout).changes.map((c: { path: string; change: string }) => `${c.path} ${c.change}`),
    ["/packages/pip/packages/delta added", "/packages/pip/packages/gamma changed"],
  );
  assert.deepEqual(
    JSON.parse(diff.stdout).packages.map((c: { name: string; change: string; to: string }) => `${c.name} ${c.change} ${c.to}`),
    ["delta added 1.0", "gamma pinned 1.0"],
    "one change per package: the request pinned, its dependency added",
  );
  // both indexes: everything pinned, nothing unpinned
  const all = await runCli(["freeze", out, "--conda-channel", conda, "--json"]);
  assert.equal(all.code, 0, all.stderr + all.stdout);
  assert.deepEqual(JSON.parse(all.stdout).unpinned, []);
  assert.ok(!JSON.parse(all.stdout).caveats.some((c: string) => c.includes("not pinned by digest")));
});

test("cairn freeze --sign writes a verifiable envelope; without --sign an old envelope at the path is removed", async () => {
  const keys = join(dir, "k");
  assert.equal((await runCli(["keygen", "--out", keys])).code, 0);
  const lock = writeLock("signed.lock", "  - manager: pip\n    packages: [{name: gamma}]\n");
  assert.equal((await runCli(["freeze", lock, "--index", pypi, "--sign", `${keys}.key`])).code, 0);
  assert.ok(existsSync(`${lock}.dsse.json`));
  assert.equal((await runCli(["lock", "id", lock, "--pub", `${keys}.pub`])).code, 0);
  assert.equal((await runCli(["freeze", lock, "--index", pypi])).code, 0);
  assert.ok(!existsSync(`${lock}.dsse.json`), "an unsigned rewrite leaves no stale signature");
});

test("refusals exit 1 with their code; a missing index is a usage error (exit 2)", async () => {
  const lock = writeLock("conflict.lock", "  - manager: pip\n    packages: [{name: gamma}, {name: left}]\n");
  const before = readFileSync(lock);
  const r = await runCli(["freeze", lock, "--index", pypi, "--json"]);
  assert.equal(r.code, 1);
  assert.equal(JSON.parse(r.stdout).error.code, "RESOLVE_CONFLICT");
  assert.deepEqual(readFileSync(lock), before, "a refused freeze writes nothing");
  const u = await runCli(["freeze", lock, "--json"]);
  assert.equal(u.code, 2);
  assert.equal(JSON.parse(u.stdout).error.code, "USAGE");
  const t = await runCli(["freeze", lock, "--index", "http://pypi.example/simple/", "--json"]);
  assert.equal(t.code, 1);
  assert.equal(JSON.parse(t.stdout).error.code, "TRUST_REFUSED");
  const ok = writeLock("ok.lock", "  - manager: pip\n    packages: [{name: gamma}]\n");
  assert.equal((await runCli(["freeze", ok, "--index", pypi])).code, 0, "control");
});

test("done-when: a profile with pip and conda requests resolves against the toy registry, freezes against generated indexes in one call, and its signed lock pins every archive by sha256 and verifies", async () => {
  const root = tempDir("cairn-freeze-done-");
  const ex = buildExampleRegistry(join(root, "strata"));
  writeDemoIndexes(join(root, "indexes"));
  const profile = join(root, "profile.yaml");
  writeFileSync(
    profile,
    `name: frozen-demo\nbase: {os: debian12, arch: x86_64}\nsoftware: [python@3.12]\npackages:\n  - manager: pip\n    packages: [{name: pandas, version: "2.2.2"}]\n  - manager: conda\n    env: analysis\n    packages: [{name: scipy}]\n`,
  );
  const lock = join(root, "env.lock");
  const key = join(root, "strata", "lock.key");
  const res = await runCli([
    "resolve",
    profile,
    "--registry",
    ex.registry,
    "--trust",
    `keyfile://${join(root, "strata", "registry.pub")}`,
    "--base",
    `rootfs:${ex.rootfs}`,
    "--out",
    lock,
  ]);
  assert.equal(res.code, 0, res.stderr + res.stdout);
  const fr = await runCli([
    "freeze",
    lock,
    "--index",
    join(root, "indexes", "pypi"),
    "--conda-channel",
    join(root, "indexes", "conda"),
    "--sign",
    key,
    "--json",
  ]);
  assert.equal(fr.code, 0, fr.stderr + fr.stdout);
  const out = JSON.parse(fr.stdout);
  assert.deepEqual(out.unpinned, []);
  const frozen = readLockfile(lock).lock;
  const where = (set: number, file: string, name: string): string =>
    set === 0 ? join(root, "indexes", "pypi", name, file) : join(root, "indexes", "conda", "linux-64", file);
  frozen.packages.forEach((s, i) => {
    assert.ok(s.frozen !== undefined && s.frozen.pins.length > 0, `set ${i} pinned`);
    for (const p of s.frozen.pins) assert.equal(p.sha256, sha256sum(where(i, p.filename, p.name)), p.filename);
  });
  assert.deepEqual(
    frozen.packages.map((s) => s.frozen!.pins.map((p) => `${p.name} ${p.version}`)),
    [
      ["pandas 2.2.2", "python-dateutil 2.9.0.post0", "pytz 2024.1", "six 1.16.0", "tzdata 2024.1"],
      ["libopenblas 0.3.27", "scipy 1.13.1"],
    ],
    "pytz 2024.2 is yanked and pandas 3.0.0rc0 a pre-release: neither is chosen",
  );
  assert.equal(Object.fromEntries(frozen.packages[0]!.frozen!.target).python, "3.12.4", "the Python of the resolved python layer");
  const verify = await runCli(["lock", "verify", lock, "--pub", join(root, "strata", "lock.pub"), "--registry", ex.registry, "--json"]);
  assert.equal(verify.code, 0, verify.stderr + verify.stdout);
  assert.equal(JSON.parse(verify.stdout).environment_id, environmentId(frozen));
  assert.equal(JSON.parse(verify.stdout).strata_environment_id, strataEnvironmentId(frozen.spec), "verify reports Strata's EnvironmentID too");
});

test("cairn freeze on a terminal draws phase freeze pip in packages pinned, up to the whole; nothing in a pipe", async () => {
  const lock = writeLock("progress.lock", "  - manager: pip\n    packages: [{name: gamma}]\n");
  const r = await runCliOnTerminal(["freeze", lock, "--index", pypi, "--out", join(dir, "progress.frozen.lock"), "--json"]);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.deepEqual(r.frames, [
    "freeze pip [------------------------] 0% 0 packages/2 packages",
    "freeze pip [############------------] 50% 1 packages/2 packages",
    "freeze pip [########################] 100% 2 packages/2 packages",
  ]);
  const piped = await runCli(["freeze", lock, "--index", pypi, "--out", join(dir, "progress.frozen2.lock"), "--json"]);
  assert.equal(piped.code, 0);
  assert.equal(piped.stderr, "", "control: the same command in a pipe prints nothing on stderr");
});
