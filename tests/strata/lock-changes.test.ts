/**
 * The lock change model (src/strata/lockfile-changes.ts) and `lock diff`'s
 * field-level changes built on it, on lockfiles written by hand in Strata's
 * format: one change per layer, formation, default and package, never a
 * package set flattened into one string.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseDigest, type Sha256Digest } from "../../src/core/index.ts";
import { diffLocks, parseLockfileText, viewLock, type LockPackageSet } from "../../src/strata/index.ts";
import { BEFORE, type HandLock, handLockText } from "./hand-locks.ts";

const parse = (h: HandLock) => parseLockfileText(handLockText(h), "hand.lock");

/** BEFORE with python upgraded, tool-a gone, tool-b new, samtools rebuilt, the formation moved on, numpy upgraded, six gone, pandas new, pytz another archive. */
const AFTER: HandLock = {
  ...BEFORE,
  layers: [
    { ...BEFORE.layers[0]!, digest: "f", size: 2050, satisfiedBy: "formation:bio-seq@2026.04", formation: "bio-seq@2026.04" },
    { ...BEFORE.layers[1]!, satisfiedBy: "formation:bio-seq@2026.04", formation: "bio-seq@2026.04" },
    { ...BEFORE.layers[2]!, version: "3.12.4", digest: "9a", size: 5000, satisfiedBy: "python@3.12" },
    { name: "tool-b", version: "1.0", digest: "8b", size: 200, order: 4, satisfiedBy: "tool-b" },
  ],
  sets: [
    {
      manager: "pip",
      packages: [
        { name: "numpy", version: "1.26.4", digest: "4d" },
        { name: "pandas", version: "2.2.2", digest: "5e" },
        { name: "pytz", version: "2024.1", digest: "6f" },
      ],
    },
  ],
  defaults: ['{name: python, version: "3.12"}'],
};

test("one change per layer: version changed, added, removed, rebuilt at the same version (digest and size), each with its mount order and why", () => {
  const d = diffLocks(parse(BEFORE), parse(AFTER));
  const layers = d.layers.map((l) => [l.name, l.change]);
  assert.deepEqual(layers, [
    ["python", "version-changed"],
    ["samtools", "rebuilt"],
    ["tool-a", "removed"],
    ["tool-b", "added"],
  ]);
  const py = d.layers.find((l) => l.name === "python")!;
  assert.deepEqual(
    [py.a?.version, py.b?.version, py.a?.size, py.b?.size, py.b?.mount_order, py.a?.satisfied_by, py.b?.satisfied_by],
    ["3.11.9", "3.12.4", 4096, 5000, 3, "python@3.11", "python@3.12"],
  );
  const sam = d.layers.find((l) => l.name === "samtools")!;
  assert.equal(sam.a?.sha256, `sha256:${"b".repeat(64)}`);
  assert.equal(sam.b?.sha256, `sha256:${"f".repeat(64)}`);
  assert.equal(sam.b?.from_formation, "bio-seq@2026.04");
  assert.equal(d.layers.find((l) => l.name === "tool-b")!.a, null);
  // bwa is the same blob at the same place: not a change, though its formation's version moved
  assert.ok(!d.layers.some((l) => l.name === "bwa"));
});

test("a layer moved in the stack with the same bytes is `moved` (control: the same lockfile has no layer change)", () => {
  const swapped: HandLock = {
    ...BEFORE,
    layers: BEFORE.layers.map((l) => (l.name === "python" ? { ...l, order: 4 } : l.name === "tool-a" ? { ...l, order: 3 } : l)),
  };
  const d = diffLocks(parse(BEFORE), parse(swapped));
  assert.deepEqual(
    d.layers.map((l) => [l.name, l.change, l.a?.mount_order, l.b?.mount_order]),
    [
      ["python", "moved", 3, 4],
      ["tool-a", "moved", 4, 3],
    ],
  );
  const same = diffLocks(parse(BEFORE), parse(BEFORE));
  assert.deepEqual([same.layers, same.packages, same.formations, same.defaults, same.changes], [[], [], [], [], []]);
  assert.equal(same.same_id, true);
});

test("one change per package, uv-style: added, removed, version changed, another archive at the same version; each its own field-level change", () => {
  const d = diffLocks(parse(BEFORE), parse(AFTER));
  assert.deepEqual(
    d.packages.map((p) => [p.set, p.name, p.change, p.from, p.to]),
    [
      ["pip", "numpy", "version-changed", "1.26.0", "1.26.4"],
      ["pip", "pandas", "added", null, "2.2.2"],
      ["pip", "pytz", "digest-changed", "2024.1", "2024.1"],
      ["pip", "six", "removed", "1.16.0", null],
    ],
  );
  const pytz = d.packages.find((p) => p.name === "pytz")!;
  assert.deepEqual([pytz.from_sha256, pytz.to_sha256], [`sha256:${"3c".repeat(32)}`, `sha256:${"6f".repeat(32)}`]);
  const pkgPaths = d.changes.filter((c) => c.path.startsWith("/packages")).map((c) => `${c.path} ${c.change}`);
  assert.deepEqual(pkgPaths, [
    "/packages/pip/packages/numpy changed",
    "/packages/pip/packages/pandas added",
    "/packages/pip/packages/pytz changed",
    "/packages/pip/packages/six removed",
  ]);
  assert.ok(
    d.changes.every((c) => !(c.a ?? "").includes(",") && !(c.b ?? "").includes(",")),
    "no change holds a list of packages joined into one string",
  );
});

test("formations and defaults change one entry each; env values stay hidden", () => {
  const d = diffLocks(parse(BEFORE), parse({ ...AFTER, env: { LC_ALL: "SECRET-VALUE" } }));
  assert.deepEqual(d.formations, [{ name: "bio-seq", change: "version-changed", from: "2026.03", to: "2026.04" }]);
  assert.deepEqual(d.defaults, [{ name: "python", change: "version-changed", from: "python@3.11", to: "python@3.12" }]);
  assert.ok(d.changes.some((c) => c.path === "/formations/bio-seq" && c.a === "2026.03" && c.b === "2026.04"));
  assert.ok(d.changes.some((c) => c.path === "/defaults/python"));
  assert.ok(!JSON.stringify(d).includes("SECRET-VALUE"), "env values are never in the diff");
  assert.ok(d.changes.some((c) => c.path === "/env/LC_ALL" && c.a === "(value hidden)"));
});

test("package sets are matched by manager and environment, not by position: a set inserted first changes nothing in the others", () => {
  const withConda: HandLock = {
    ...BEFORE,
    sets: [{ manager: "conda", env: "ml", packages: [{ name: "scipy", version: "1.13.1", digest: "7a" }] }, ...BEFORE.sets!],
  };
  const d = diffLocks(parse(BEFORE), parse(withConda));
  assert.deepEqual(
    d.packages.map((p) => [p.set, p.name, p.change]),
    [["conda:ml", "scipy", "added"]],
  );
  assert.deepEqual(d.package_sets, [{ set: "conda:ml", change: "added", from_target: null, to_target: null }]);
  // control: the same insertion at the end is the same single change
  const atEnd = diffLocks(parse(BEFORE), parse({ ...withConda, sets: [...BEFORE.sets!, withConda.sets![0]!] }));
  assert.deepEqual(atEnd.packages, d.packages);
});

test("a request frozen into pins: each package is `pinned` or `added` (a dependency), and request changes of frozen sets are their own entries", () => {
  const wire = parse({ ...BEFORE, sets: [] }).spec;
  const pin = (name: string, version: string, hex: string) => ({
    name,
    version,
    kind: "wheel" as const,
    filename: `${name}-${version}-py3-none-any.whl`,
    sha256: parseDigest(`sha256:${hex.repeat(64)}`, "", "sha256") as Sha256Digest,
    size: 10,
    url: `file:///idx/${name}`,
    requested_by: ["request"],
  });
  const unfrozen: LockPackageSet = { manager: "pip", packages: [{ name: "pandas", version: "2.2.2" }, { name: "gamma" }] };
  const frozen = (pins: ReturnType<typeof pin>[], packages: LockPackageSet["packages"]): LockPackageSet => ({
    manager: "pip",
    packages,
    frozen: { index: "file:///idx", target: new Map([["python", "3.12"]]), pins },
  });
  const a = viewLock(wire, { layers: new Map(), formations: [], packages: [unfrozen] });
  const b = viewLock(wire, {
    layers: new Map(),
    formations: [],
    packages: [frozen([pin("gamma", "1.0", "a"), pin("pandas", "2.2.2", "b"), pin("six", "1.16.0", "c")], unfrozen.packages)],
  });
  const d = diffLocks(a, b);
  assert.deepEqual(
    d.packages.map((p) => [p.name, p.change, p.from, p.to]),
    [
      ["gamma", "pinned", null, "1.0"],
      ["pandas", "pinned", "2.2.2", "2.2.2"],
      ["six", "added", null, "1.16.0"],
    ],
  );
  assert.deepEqual(d.requests, [], "requests are the packages of an unfrozen set, not compared twice");
  // both frozen: a new request is its own entry, a new target is the set's
  const c = viewLock(wire, {
    layers: new Map(),
    formations: [],
    packages: [
      {
        ...frozen([pin("gamma", "1.0", "a"), pin("pandas", "2.2.2", "b"), pin("six", "1.16.0", "c")], [...unfrozen.packages, { name: "six" }]),
        frozen: {
          index: "file:///idx",
          target: new Map([["python", "3.13"]]),
          pins: [pin("gamma", "1.0", "a"), pin("pandas", "2.2.2", "b"), pin("six", "1.16.0", "c")],
        },
      },
    ],
  });
  const e = diffLocks(b, c);
  assert.deepEqual(e.packages, [], "the same pins");
  assert.deepEqual(e.requests, [{ set: "pip", name: "six", change: "added", from: null, to: null }]);
  assert.deepEqual(e.package_sets, [{ set: "pip", change: "target-changed", from_target: "python=3.12", to_target: "python=3.13" }]);
});
