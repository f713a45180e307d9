// The EnvironmentID's hash input (src/strata/env-id.ts) on hand-written frozen
// lockfile models, beyond lockfile.test.ts: layers are hashed in mount order
// whatever order the file lists them in, a frozen package set is hashed
// without its index and pin URLs (provenance) but with every pin field the
// scope covers, and an unfrozen lock is refused at /layers. Written to kill
// StrykerJS survivors (bench/mutation/README.md); each refusal and each
// "the ID does not move" has a control beside it where the ID does move.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { JsonModel } from "../../src/core/index.ts";
import { baseDigest } from "../../src/strata/index.ts";
import { environmentId, environmentIdInput } from "../../src/strata/env-id.ts";
import { type Lockfile, parseLockfile } from "../../src/strata/lockfile.ts";
import { assertCode } from "../helpers/errors.ts";

// biome-ignore lint/suspicious/noExplicitAny: the models are edited on purpose
type Doc = Record<string, any>;
const LAYER = (i: number) => ({ id: `l${i}-1-gnu-x86_64`, name: `l${i}`, version: "1", sha256: `sha256:${String(i).repeat(64)}`, size: 10, mount_order: i });
const FACTS = { name: "debian12", arch: "x86_64", abi: "gnu", capabilities: ["glibc@2.36"] } as const;
const PIN = (name: string, digit: string) => ({
  name,
  version: "1.0",
  kind: "wheel",
  filename: `${name}-1.0-py3-none-any.whl`,
  sha256: `sha256:${digit.repeat(64)}`,
  size: 100,
  url: `https://pypi.example/${name}-1.0-py3-none-any.whl`,
  requested_by: [name],
});

function doc(baseDigestValue?: string): Doc {
  return {
    format: "cairn.lock/1",
    profile: "p",
    resolved_at: "2026-03-01T12:00:00Z",
    cairn_version: "t",
    verification_policy: "unsigned-offline",
    base: { ...FACTS, capabilities: [...FACTS.capabilities], source: "rootfs:x", ...(baseDigestValue ? { digest: baseDigestValue } : {}) },
    layers: [LAYER(0), LAYER(1), LAYER(2)],
    packages: [
      {
        manager: "pip",
        packages: [{ name: "alpha" }, { name: "beta" }],
        frozen: { index: "/srv/pip", target: { python: "3.12" }, pins: [PIN("alpha", "a"), PIN("beta", "b")] },
      },
      { manager: "pip", packages: [{ name: "gamma" }] },
    ],
  };
}
const BASE = baseDigest(parseLockfile(doc() as JsonModel).base);
const lock = (edit: (m: Doc) => void = () => {}): Lockfile => {
  const m = doc(BASE);
  edit(m);
  return parseLockfile(JSON.parse(JSON.stringify(m)) as JsonModel);
};

test("an unfrozen lock has no EnvironmentID: LOCK_UNFROZEN at /layers; control: the frozen lock has one", () => {
  assert.match(environmentId(lock()), /^sha256:[0-9a-f]{64}$/);
  assertCode(() => environmentId(lock((m) => delete m.layers[1].mount_order)), "LOCK_UNFROZEN", "/layers");
  assertCode(() => environmentIdInput(lock((m) => delete m.base.digest)), "LOCK_UNFROZEN", "/layers");
});

test("layers are hashed in mount order, whatever order the lockfile lists them in; control: another mount order is another ID", () => {
  const listed = lock((m) => (m.layers = [m.layers[2], m.layers[0], m.layers[1]]));
  const input = environmentIdInput(listed) as { layers: { mount_order: number; id: string }[] };
  assert.deepEqual(
    input.layers.map((l) => l.mount_order),
    [0, 1, 2],
  );
  assert.deepEqual(
    input.layers.map((l) => l.id),
    ["l0-1-gnu-x86_64", "l1-1-gnu-x86_64", "l2-1-gnu-x86_64"],
  );
  assert.equal(environmentId(listed), environmentId(lock()));
  const swapped = lock((m) => {
    m.layers[0].mount_order = 1;
    m.layers[1].mount_order = 0;
  });
  assert.notEqual(environmentId(swapped), environmentId(lock()), "control");
});

test("a frozen set is hashed without its index and pin URLs, with every other pin field; an unfrozen set as it is; control: another archive is another ID", () => {
  const input = environmentIdInput(lock()) as { packages: Doc[] };
  const { url: _a, ...alpha } = PIN("alpha", "a");
  const { url: _b, ...beta } = PIN("beta", "b");
  assert.deepEqual(input.packages, [
    { manager: "pip", packages: [{ name: "alpha" }, { name: "beta" }], frozen: { target: { python: "3.12" }, pins: [alpha, beta] } },
    { manager: "pip", packages: [{ name: "gamma" }] },
  ]);
  const mirrored = lock((m) => {
    m.packages[0].frozen.index = "/mnt/mirror";
    for (const p of m.packages[0].frozen.pins) p.url = `file:///mnt/mirror/${p.filename}`;
  });
  assert.equal(environmentId(mirrored), environmentId(lock()), "the same archives from a mirror are the same environment");
  assert.notEqual(environmentId(lock((m) => (m.packages[0].frozen.pins[1].sha256 = `sha256:${"c".repeat(64)}`))), environmentId(lock()), "control");
  assert.notEqual(environmentId(lock((m) => (m.packages[0].frozen.target.python = "3.13"))), environmentId(lock()), "control: the target");
});
