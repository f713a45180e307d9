/**
 * `cairn freeze` end to end against indexes generated here: a PEP 503 index of
 * zip-made wheels and tar-made sdists (dependencies, extras, markers, a
 * yanked release, a pre-release, a conflicting pair, a version only as sdist,
 * wheels for another Python), a conda channel and a CRAN repository. Every
 * pinned digest is checked against `sha256sum` of the file on disk.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync } from "node:fs";
import { join } from "node:path";
import { environmentId, freezeLock, lockfileCaveats, lockfileToYaml, parseLockfileText, type FreezeOptions, type Lockfile } from "../../src/strata/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { tempDir } from "./fixtures.ts";
import { lockWith, sha256sum, writeCondaChannel, writeCranRepo, writePipIndex } from "./freeze-fixtures.ts";

const MANYLINUX_312 = "cp312-cp312-manylinux_2_17_x86_64";

const pipIndex = tempDir("cairn-pypi-");
writePipIndex(pipIndex, {
  alpha: {
    wheels: [
      { version: "1.0", requires: ["beta>=2"] },
      { version: "1.1", requires: ["beta>=2", 'gamma; python_version < "3.8"', 'delta>=1; extra == "fast"'], extras: ["fast"] },
      { version: "1.2", requires: ["beta>=2"], yanked: true },
      { version: "2.0rc1", requires: ["beta>=2"] },
    ],
  },
  beta: {
    wheels: [
      { version: "2.0", tag: MANYLINUX_312 },
      { version: "2.1", tag: "cp313-cp313-manylinux_2_17_x86_64" },
    ],
    sdists: [{ version: "2.0" }],
  },
  gamma: { wheels: [{ version: "1.0" }] },
  delta: { wheels: [{ version: "1.0" }, { version: "1.4" }] },
  sdistonly: { wheels: [{ version: "1.0" }], sdists: [{ version: "1.5", metadata: ["delta<1.4"] }] },
  opaque: { sdists: [{ version: "0.3" }] },
  left: { wheels: [{ version: "1.0", requires: ["shared>=2"] }] },
  right: { wheels: [{ version: "1.0", requires: ["shared<2"] }] },
  shared: { wheels: [{ version: "1.0" }, { version: "2.0" }] },
  native: { wheels: [{ version: "1.0", tag: "cp311-cp311-manylinux_2_17_x86_64" }] },
  usesextra: { wheels: [{ version: "1.0", requires: ["alpha[fast]==1.1"] }] },
  modern: { wheels: [{ version: "0.9" }, { version: "1.0", requiresPython: ">=3.13" }] },
});

function pipLock(requests: string): Lockfile {
  return lockWith(`  - manager: pip\n    packages: [${requests}]\n`);
}

async function freezePip(requests: string, extra: Partial<FreezeOptions> = {}): Promise<Lockfile> {
  return (await freezeLock(pipLock(requests), { indexes: { pip: pipIndex }, python: "3.12", cwd: "/", ...extra })).lock;
}

function pins(lock: Lockfile, i = 0): Record<string, string> {
  return Object.fromEntries((lock.packages[i]!.frozen?.pins ?? []).map((p) => [p.name, `${p.version} ${p.kind}`]));
}

test("pip: a request and its dependencies are pinned to the best archive for the target, by the file's sha256", async () => {
  const lock = await freezePip("{name: alpha}");
  // alpha 1.1: 1.2 is yanked, 2.0rc1 a pre-release; beta 2.0 as the cp312 manylinux wheel (2.1 is cp313 only, the sdist ranks below a wheel);
  // gamma's marker is false on 3.12 and delta is only for the extra
  assert.deepEqual(pins(lock), { alpha: "1.1 wheel", beta: "2.0 wheel" });
  const frozen = lock.packages[0]!.frozen!;
  assert.deepEqual(Object.fromEntries(frozen.target), { python: "3.12", platform: "manylinux_2_36_x86_64" });
  for (const p of frozen.pins) assert.equal(p.sha256, sha256sum(join(pipIndex, p.name, p.filename)), p.filename);
  assert.equal(frozen.pins.find((p) => p.name === "beta")!.filename, `beta-2.0-${MANYLINUX_312}.whl`);
  assert.deepEqual(frozen.pins.find((p) => p.name === "beta")!.requested_by, ["alpha 1.1: beta>=2"]);
});

test("pip: an extra's requirements are pinned, the package itself once", async () => {
  // a profile's package name carries no [extra], so the extra comes in through a dependency
  const lock = await freezePip("{name: usesextra}");
  assert.deepEqual(pins(lock), { alpha: "1.1 wheel", beta: "2.0 wheel", delta: "1.4 wheel", usesextra: "1.0 wheel" });
  assert.deepEqual(lock.packages[0]!.frozen!.pins.find((p) => p.name === "delta")!.requested_by, ['alpha[fast] 1.1: delta>=1; extra == "fast"']);
  assert.equal(pins(await freezePip("{name: alpha}")).delta, undefined, "control: without the extra, delta is not pinned");
});

test("pip: a yanked release is chosen only when pinned exactly; a pre-release only when asked (PEP 592, PEP 440)", async () => {
  assert.equal(pins(await freezePip('{name: alpha, version: "1.2"}')).alpha, "1.2 wheel");
  await assertCodeAsync(() => freezePip('{name: alpha, version: ">=1.2"}'), "RESOLVE_FAILED"); // 1.2 yanked, 2.0rc1 a pre-release
  assert.equal(pins(await freezePip('{name: alpha, version: ">=2.0rc1"}')).alpha, "2.0rc1 wheel");
  assert.equal(pins(await freezePip("{name: alpha}", { prereleases: true })).alpha, "2.0rc1 wheel");
  assert.equal(pins(await freezePip("{name: alpha}")).alpha, "1.1 wheel", "control: the default skips both");
});

test("pip: a version available only as sdist is pinned as the sdist; without static metadata its dependencies are labelled unknown", async () => {
  const lock = await freezePip("{name: sdistonly}, {name: opaque}");
  assert.deepEqual(pins(lock), { delta: "1.0 wheel", opaque: "0.3 sdist", sdistonly: "1.5 sdist" });
  const opaque = lock.packages[0]!.frozen!.pins.find((p) => p.name === "opaque")!;
  assert.equal(opaque.dependencies, "unknown");
  assert.equal(opaque.sha256, sha256sum(join(pipIndex, "opaque", "opaque-0.3.tar.gz")));
  const caveats = lockfileCaveats(lock);
  assert.ok(caveats.some((c) => c.includes("not known without building") && c.includes("opaque 0.3")));
  assert.ok(caveats.some((c) => c.startsWith("source archives are pinned") && c.includes("sdistonly 1.5")));
  assert.ok(!caveats.some((c) => c.includes("not pinned by digest")), "the set is pinned");
});

test("pip: a conflicting pair is refused naming both requirements and who asked; each alone freezes", async () => {
  const e = await assertCodeAsync(() => freezePip("{name: left}, {name: right}"), "RESOLVE_CONFLICT");
  assert.match(e.message, /left 1\.0 requires shared>=2/);
  assert.match(e.message, /right 1\.0 requires shared<2/);
  assert.equal(pins(await freezePip("{name: left}")).shared, "2.0 wheel");
  assert.equal(pins(await freezePip("{name: right}")).shared, "1.0 wheel");
});

test("pip: wheel tags and Requires-Python are those of the lock's Python, not the host's", async () => {
  const e = await assertCodeAsync(() => freezePip("{name: native}"), "RESOLVE_FAILED");
  assert.match(e.message, /none installable on cp312/);
  assert.equal(pins(await freezePip("{name: native}", { python: "3.11" })).native, "1.0 wheel");
  assert.equal(pins(await freezePip("{name: modern}")).modern, "0.9 wheel");
  assert.equal(pins(await freezePip("{name: modern}", { python: "3.13" })).modern, "1.0 wheel");
  // the Python comes from the lockfile when no flag says otherwise
  const fromBase = lockWith("  - manager: pip\n    packages: [{name: native}]\n", [{ name: "python", version: "3.11.9" }]);
  assert.equal(pins((await freezeLock(fromBase, { indexes: { pip: pipIndex }, cwd: "/" })).lock).native, "1.0 wheel");
  await assertCodeAsync(() => freezeLock(pipLock("{name: native}"), { indexes: { pip: pipIndex }, cwd: "/" }), "RESOLVE_FAILED"); // no Python anywhere
});

test("pins enter the EnvironmentID; the index location does not; a lock without pins keeps its ID", async () => {
  const unpinned = pipLock("{name: alpha}");
  const frozen = await freezePip("{name: alpha}");
  assert.notEqual(environmentId(frozen), environmentId(unpinned));
  const mirror = tempDir("cairn-mirror-");
  cpSync(pipIndex, mirror, { recursive: true });
  const again = (await freezeLock(unpinned, { indexes: { pip: mirror }, python: "3.12", cwd: "/" })).lock;
  assert.notEqual(again.packages[0]!.frozen!.index, frozen.packages[0]!.frozen!.index);
  assert.equal(environmentId(again), environmentId(frozen), "the same archives from a mirror are the same environment");
  const tampered = parseLockfileText(lockfileToYaml(frozen).replace(frozen.spec.packages[0]!.packages![0]!.sha256, "e".repeat(64)));
  assert.notEqual(environmentId(tampered), environmentId(frozen), "another archive is another environment");
  // round trip: the frozen lockfile reads back equal
  assert.equal(lockfileToYaml(parseLockfileText(lockfileToYaml(frozen))), lockfileToYaml(frozen));
  assert.ok(lockfileCaveats(unpinned).some((c) => c.startsWith("package requests are recorded, not pinned by digest")));
});

test("conda: a channel's subdir and noarch repodata, build numbers, and python checked against the target", async () => {
  const channel = tempDir("cairn-conda-");
  writeCondaChannel(channel, [
    { name: "numpy", version: "1.26.4", depends: ["python >=3.12,<3.13.0a0", "libopenblas >=0.3.20", "__glibc >=2.17"] },
    { name: "numpy", version: "1.26.4", build: "py311h0_0", depends: ["python >=3.11,<3.12.0a0", "libopenblas >=0.3.20"] },
    { name: "numpy", version: "1.25.0", depends: ["python >=3.11"] },
    { name: "numpy", version: "2.0.0", depends: ["python >=3.13"] },
    { name: "libopenblas", version: "0.3.27", build_number: 0 },
    { name: "libopenblas", version: "0.3.27", build_number: 1, depends: ["tzdata"] },
    { name: "libopenblas", version: "0.3.9" },
    { name: "tzdata", version: "2024a", subdir: "noarch" },
  ]);
  const lock = lockWith('  - manager: conda\n    env: analysis\n    packages: [{name: numpy, version: "<2"}]\n');
  const frozen = (await freezeLock(lock, { indexes: { conda: channel }, python: "3.12", cwd: "/" })).lock;
  const f = frozen.packages[0]!.frozen!;
  assert.deepEqual(
    f.pins.map((p) => p.filename),
    ["libopenblas-0.3.27-h0_1.conda", "numpy-1.26.4-h0_0.conda", "tzdata-2024a-h0_0.conda"],
  );
  for (const p of f.pins) assert.equal(p.sha256, sha256sum(join(channel, p.filename.startsWith("tzdata") ? "noarch" : "linux-64", p.filename)));
  assert.deepEqual(Object.fromEntries(f.target), { python: "3.12", subdir: "linux-64" });
  const e = await assertCodeAsync(
    () =>
      freezeLock(lockWith('  - manager: conda\n    packages: [{name: numpy, version: "2.0.0"}]\n'), { indexes: { conda: channel }, python: "3.12", cwd: "/" }),
    "RESOLVE_FAILED",
  );
  assert.match(e.message, /not installable on the target: 2\.0\.0/);
  // python 3.11: the first 1.26.4 build is for python 3.12, so it is skipped as a build for another target and the py311 build is pinned
  const py311 = (await freezeLock(lock, { indexes: { conda: channel }, python: "3.11", cwd: "/" })).lock.packages[0]!.frozen!;
  assert.equal(py311.pins.find((p) => p.name === "numpy")!.filename, "numpy-1.26.4-py311h0_0.conda");
  const none = await assertCodeAsync(() => freezeLock(lock, { indexes: { conda: channel }, python: "3.10", cwd: "/" }), "RESOLVE_FAILED");
  assert.match(none.message, /4 record\(s\) in the channel, none installable on the target \(python 3\.10/);
  const older = lockWith('  - manager: conda\n    packages: [{name: numpy, version: "1.25.0"}]\n');
  assert.equal((await freezeLock(older, { indexes: { conda: channel }, python: "3.11", cwd: "/" })).lock.packages[0]!.frozen!.pins[0]!.version, "1.25.0");
});

test("cran: PACKAGES Depends/Imports are pinned, R and its base packages are the target's, MD5sum is checked", async () => {
  const repo = tempDir("cairn-cran-");
  writeCranRepo(repo, [
    { name: "ggplot2", version: "3.5.0", depends: "R (>= 3.5)", imports: "rlang (>= 1.1.0), scales, grid, utils" },
    { name: "rlang", version: "1.1.3", depends: "R (>= 3.5.0)", imports: "utils" },
    { name: "scales", version: "1.3.0", imports: "rlang (>= 1.0.0)" },
  ]);
  const lock = lockWith("  - manager: cran\n    packages: [{name: ggplot2}]\n");
  const frozen = (await freezeLock(lock, { indexes: { cran: repo }, r: "4.3.2", cwd: "/" })).lock;
  assert.deepEqual(pins(frozen), { ggplot2: "3.5.0 cran", rlang: "1.1.3 cran", scales: "1.3.0 cran" });
  for (const p of frozen.packages[0]!.frozen!.pins) assert.equal(p.sha256, sha256sum(join(repo, "src", "contrib", p.filename)));
  const e = await assertCodeAsync(() => freezeLock(lock, { indexes: { cran: repo }, r: "3.4", cwd: "/" }), "RESOLVE_CONFLICT");
  assert.match(e.message, /the target provides R 3\.4/);
  await assertCodeAsync(
    () => freezeLock(lockWith('  - manager: cran\n    packages: [{name: rlang, version: ">= 2.0"}]\n'), { indexes: { cran: repo }, r: "4.3", cwd: "/" }),
    "RESOLVE_FAILED",
  );
});

test("a set whose manager has no index stays unpinned and the lock says so; an index for an absent manager is refused", async () => {
  const lock = lockWith("  - manager: pip\n    packages: [{name: gamma}]\n  - manager: conda\n    packages: [{name: numpy}]\n");
  const r = await freezeLock(lock, { indexes: { pip: pipIndex }, python: "3.12", cwd: "/" });
  assert.deepEqual(r.unpinned, ["conda"]);
  assert.equal(r.lock.packages[1]!.frozen, undefined);
  assert.ok(lockfileCaveats(r.lock).some((c) => c.includes("unpinned: conda")));
  await assertCodeAsync(() => freezeLock(lock, { indexes: { cran: pipIndex }, cwd: "/" }), "USAGE");
  await assertCodeAsync(() => freezeLock(lock, { indexes: {}, cwd: "/" }), "USAGE");
});
