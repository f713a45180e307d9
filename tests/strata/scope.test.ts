/**
 * The EnvironmentID scope test: every lockfile field is either hashed or
 * excluded with a named reason, never both, never neither. Adding a field to
 * the lockfile (its parser's field lists) without placing it fails here.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Sha256Digest } from "../../src/core/index.ts";
import {
  BASE_DIGEST_SCOPE,
  ENVIRONMENT_ID_SCOPE,
  baseDigest,
  declaredBase,
  environmentId,
  environmentIdInput,
  explainScope,
  lockfileToModel,
  modulefilePath,
  parseLockfile,
  parseProfileText,
  type LockBase,
  type Lockfile,
} from "../../src/strata/index.ts";
import { LOCK_BASE_FIELDS, LOCK_FIELDS, LOCK_LAYER_FIELDS } from "../../src/strata/lockfile.ts";
import { baseToModel } from "../../src/strata/lockfile-model.ts";
import { assertCatchesExtraField, assertScopeExhaustive } from "../helpers/identity-scope.ts";
import { exampleRegistry, resolveExample } from "./fixtures.ts";

const OBJECTS = { lockfile: LOCK_FIELDS, base: LOCK_BASE_FIELDS, layer: LOCK_LAYER_FIELDS } as const;
// The scope grouped per lockfile object, exactly as `lock explain` prints it.
const { hashed: HASHED, excluded: EXCLUDED } = explainScope();

test("every lockfile field is hashed or excluded with a reason, exactly once", () => {
  for (const [obj, fields] of Object.entries(OBJECTS) as [keyof typeof OBJECTS, readonly string[]][]) {
    const hashed = HASHED[obj]!;
    const excluded = Object.keys(EXCLUDED[obj]!);
    for (const f of fields) {
      const h = hashed.includes(f);
      const x = excluded.includes(f);
      assert.ok(h !== x, `${obj}.${f} must be in exactly one of HASHED and EXCLUDED (hashed=${h}, excluded=${x})`);
    }
    for (const f of [...hashed, ...excluded]) assert.ok(fields.includes(f), `${obj}.${f} is classified but is not a lockfile field`);
    for (const [f, why] of Object.entries(EXCLUDED[obj]!)) assert.ok(typeof why === "string" && why.length > 10, `${obj}.${f} needs a named reason`);
  }
});

async function fullLock(): Promise<Lockfile> {
  const ex = exampleRegistry();
  const profile = parseProfileText(`name: full
base: {os: debian12}
software: [python, numpy, "formation:bio-seq"]
env: {A: "1"}
on_ready: [echo]
defaults: [python]
packages: [{manager: pip, packages: [{name: x, version: "1"}]}]
mutable_layer: {name: w, version: "1"}
requires_host: [{key: gpu, value: "true"}]
instance: {type: c7i.large}
storage: [{type: ebs, mount: /scratch}]
`);
  const lock = await resolveExample(ex, profile);
  // The example layers carry no Lmod modulefile; give the first one the record a layer with one gets (tests/strata/modulefile.test.ts resolves a real one).
  const model = lockfileToModel(lock) as { layers: Record<string, unknown>[] };
  const l0 = model.layers[0]!;
  l0.modulefile = { path: modulefilePath(l0.name as string, l0.version as string), sha256: `sha256:${"a".repeat(64)}` };
  return parseLockfile(JSON.parse(JSON.stringify(model)));
}

test("what the writer emits is exactly the listed fields (so the lists are the real lockfile)", async () => {
  const model = lockfileToModel(await fullLock());
  assert.deepEqual(Object.keys(model).sort(), [...LOCK_FIELDS].sort());
  assert.deepEqual(Object.keys(model.base as object).sort(), [...LOCK_BASE_FIELDS].filter((f) => f !== "image").sort());
  const layers = model.layers as Record<string, unknown>[];
  const seen = new Set(layers.flatMap((l) => Object.keys(l)));
  assert.deepEqual([...seen].sort(), [...LOCK_LAYER_FIELDS].sort());
});

function mutate(lock: Lockfile, obj: string, field: string): Lockfile {
  const m = lockfileToModel(lock) as Record<string, unknown>;
  const bump = (o: Record<string, unknown>, f: string): void => {
    const v = o[f];
    if (typeof v === "string")
      o[f] = v.startsWith("sha256:")
        ? `sha256:${"b".repeat(64)}`
        : f === "resolved_at" || f === "probed_at"
          ? "2001-01-01T00:00:00Z"
          : f === "name" && obj === "base"
            ? "debian13"
            : f === "arch"
              ? "aarch64"
              : f === "abi"
                ? "musl"
                : f === "verification_policy"
                  ? "unsigned-offline"
                  : `${v}x`;
    else if (typeof v === "number") o[f] = v + 100;
    else if (typeof v === "boolean") o[f] = !v;
    else if (Array.isArray(v))
      o[f] =
        f === "capabilities"
          ? [...v, "extra@1"]
          : f === "requires_host"
            ? [...v, { key: "kvm", value: "true" }]
            : f === "defaults"
              ? [...v, "extra@1"]
              : f === "on_ready"
                ? [...v, "more"]
                : f === "layers"
                  ? v.slice(1).map((l: Record<string, unknown>, i) => ({ ...l, mount_order: i }))
                  : f === "formations"
                    ? []
                    : [...v, { manager: "conda", packages: [] }];
    else if (v && typeof v === "object")
      o[f] =
        f === "satisfied_by"
          ? {}
          : f === "modulefile"
            ? { ...(v as object), sha256: `sha256:${"b".repeat(64)}` }
            : f === "signature"
              ? { status: "unsigned-offline", envelope_sha256: `sha256:${"c".repeat(64)}` }
              : f === "not_acted_upon"
                ? { instance: { type: "c7i.xlarge" } }
                : f === "mutable_layer"
                  ? { ...(v as object), size_gb: 99 }
                  : f === "base"
                    ? { ...(v as object), version_id: "13" }
                    : { ...(v as object), ZZ: "new" };
    else o[f] = obj === "base" && f === "image" ? `sha256:${"d".repeat(64)}` : "x";
  };
  const base = m.base as Record<string, unknown>;
  if (obj === "lockfile") bump(m, field);
  else if (obj === "base")
    bump(base, field === "digest" ? "capabilities" : field); // a digest alone cannot change: Validate recomputes it
  else {
    const l0 = (m.layers as Record<string, unknown>[])[0]!;
    // The embedded envelope is pinned by manifest_sha256 and signature (Validate checks it): drop it when they change, and "changing" it means leaving it out.
    if (field === "manifest_envelope") delete l0.manifest_envelope;
    else bump(l0, field);
    if (field === "manifest_sha256" || field === "signature") delete l0.manifest_envelope;
    // The modulefile path is derived from name and version (Validate checks it): it moves with them.
    if (field === "name" || field === "version") delete l0.modulefile;
  }
  const b = m.base as Omit<LockBase, "capabilities" | "digest"> & { capabilities: string[]; digest?: string };
  const facts = {
    name: b.name,
    arch: b.arch,
    abi: b.abi,
    capabilities: b.capabilities.map((c: string) => ({ name: c.slice(0, c.lastIndexOf("@")), version: c.slice(c.lastIndexOf("@") + 1) })),
    os_id: b.os_id,
    version_id: b.version_id,
    image: b.image,
  };
  b.digest = baseDigest(facts);
  return parseLockfile(JSON.parse(JSON.stringify(m)));
}

test("changing a hashed field changes the ID; changing an excluded field does not", async () => {
  const lock = await fullLock();
  const id = environmentId(lock);
  for (const obj of Object.keys(OBJECTS) as (keyof typeof OBJECTS)[]) {
    for (const f of HASHED[obj]!) assert.notEqual(environmentId(mutate(lock, obj, f)), id, `${obj}.${f} is hashed, so changing it must change the ID`);
    for (const [f, why] of Object.entries(EXCLUDED[obj]!)) {
      if (obj === "lockfile" && f === "format") continue; // one valid value: it cannot be changed and still parse
      // Base facts are hashed through base.digest, which Validate recomputes; mutate() keeps the digest true to them.
      if (why.startsWith("covered by base.digest")) {
        assert.notEqual(environmentId(mutate(lock, obj, f)), id, `${obj}.${f} is covered by base.digest, so changing it must change the ID`);
        continue;
      }
      assert.equal(environmentId(mutate(lock, obj, f)), id, `${obj}.${f} is excluded, so changing it must not change the ID`);
    }
  }
});

test("the hash input is tagged and has layers in mount order", async () => {
  const input = environmentIdInput(await fullLock());
  assert.equal(input.schema, "cairn.environment/2");
  const orders = (input.layers as { mount_order: number }[]).map((l) => l.mount_order);
  assert.deepEqual(
    orders,
    [...orders].sort((a, b) => a - b),
  );
});

/** Real instances: the full lockfile, and the same lockfile on a base probed from an OCI image (the only base with `image`). */
async function lockInstances(): Promise<Record<string, unknown>[]> {
  const lock = await fullLock();
  const model = lockfileToModel(lock);
  const facts = { ...lock.base, image: `sha256:${"d".repeat(64)}` as Sha256Digest, source: "oci:layout" };
  const ociBase = baseToModel({ ...facts, digest: baseDigest(facts) });
  // a lockfile whose package sets were frozen (cairn freeze): every field of a pin, and a conda set with its env
  const pin = { name: "x", version: "1", kind: "sdist", filename: "x-1.tar.gz", sha256: `sha256:${"e".repeat(64)}`, size: 3, url: "file:///i/x/x-1.tar.gz" };
  const frozen = {
    ...model,
    packages: [
      {
        manager: "pip",
        packages: [{ name: "x", version: "1" }],
        frozen: {
          index: "file:///i/",
          target: { python: "3.12", platform: "any" },
          pins: [{ ...pin, requested_by: ["request: x==1"], dependencies: "unknown" }],
        },
      },
      { manager: "conda", env: "analysis", packages: [{ name: "y" }] },
    ],
  };
  parseLockfile(JSON.parse(JSON.stringify(frozen))); // a real lockfile model: Validate accepts it
  return [model, { ...model, base: ociBase }, frozen];
}

test("the EnvironmentID scope places every field of real lockfiles (shared exhaustiveness helper)", async () => {
  assertScopeExhaustive(ENVIRONMENT_ID_SCOPE, ...(await lockInstances()));
});

test("control: a lockfile with one more field fails the helper", async () => {
  assertCatchesExtraField(ENVIRONMENT_ID_SCOPE, ...(await lockInstances()));
});

test("the base digest scope places every field of real base models (probed, from an image, declared)", async () => {
  const bases = (await lockInstances()).map((m) => m.base);
  bases.push(baseToModel(declaredBase("debian12", "x86_64")));
  assertScopeExhaustive(BASE_DIGEST_SCOPE, ...bases);
  assertCatchesExtraField(BASE_DIGEST_SCOPE, ...bases);
});
