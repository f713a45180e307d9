/**
 * The content identity's scope: every field of the seed's LockFile,
 * ResolvedBase and ResolvedLayer is hashed or excluded with a named reason,
 * never both, never neither; changing a hashed field changes the identity and
 * changing an excluded one does not (proved by mutation, field by field); and
 * the base digest's scope places every field of the base.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { BASE_DIGEST_SCOPE, ENVIRONMENT_ID_SCOPE, environmentId, environmentIdInput, explainScope, viewLock } from "../../src/strata/index.ts";
import { LOCK_FILE, RESOLVED_BASE, RESOLVED_LAYER, type Kind, type StructSchema } from "../../src/strata/spec/schema.ts";
import type { LockFile } from "../../src/strata/spec/types.ts";
import { writeStruct, zeroStruct } from "../../src/strata/spec/struct-wire.ts";
import { assertCatchesExtraField, assertScopeExhaustive } from "../helpers/identity-scope.ts";

const OBJECTS = { lockfile: LOCK_FILE, base: RESOLVED_BASE, layer: RESOLVED_LAYER } as const;
const { hashed: HASHED, excluded: EXCLUDED } = explainScope();
const H = (c: string) => c.repeat(64);

test("every field of the seed's lockfile, base and layer is hashed or excluded with a reason, exactly once", () => {
  for (const [obj, schema] of Object.entries(OBJECTS) as [keyof typeof OBJECTS, StructSchema][]) {
    const fields = schema.fields.map((f) => f.name);
    const hashed = HASHED[obj]!;
    const excluded = Object.keys(EXCLUDED[obj]!);
    for (const f of fields) assert.ok(hashed.includes(f) !== excluded.includes(f), `${obj}.${f} must be in exactly one of the two lists`);
    for (const f of [...hashed, ...excluded]) assert.ok(fields.includes(f), `${obj}.${f} is classified but is not a field of the seed's ${schema.type}`);
    for (const [f, why] of Object.entries(EXCLUDED[obj]!)) assert.ok(why.length > 10, `${obj}.${f} needs a named reason`);
  }
});

/** A value of `kind` that is not its zero value, and another one (for mutation). */
function sample(kind: Kind, name: string, n: number): unknown {
  if (kind === "string") return name.endsWith("sha256") || name === "sha256" ? H(n === 1 ? "a" : "b") : `${name}-${n}`;
  if (kind === "time") return n === 1 ? "2026-01-02T03:04:05Z" : "2027-01-02T03:04:05Z";
  if (kind === "int") return n;
  if (kind === "bool") return n === 1;
  if (kind === "map") return { [`K${n}`]: `v${n}` };
  if (kind === "ref") return { kind: "layer", name: `r${n}`, version: `${n}` };
  if ("list" in kind) return [sample(kind.list, name, n)];
  return full("struct" in kind ? kind.struct : kind.ptr, n);
}

function full(schema: StructSchema, n: number): Record<string, unknown> {
  const o = zeroStruct(schema);
  for (const f of schema.fields) o[f.name] = sample(f.kind, f.name, n);
  return o;
}

/** A frozen lockfile with every field of every object set, one layer at mount order 1 and one at 2. */
function fullLock(): LockFile {
  const l = full(LOCK_FILE, 1) as unknown as Record<string, unknown> & { layers: Record<string, unknown>[] };
  const second = { ...full(RESOLVED_LAYER, 1), id: "second", sha256: H("c"), mount_order: 2 };
  l.layers = [{ ...l.layers[0]!, mount_order: 1 }, second];
  return l as unknown as LockFile;
}

function mutate(lock: LockFile, obj: keyof typeof OBJECTS, field: string): LockFile {
  const schema = OBJECTS[obj];
  const kind = schema.fields.find((f) => f.name === field)!.kind;
  const next = sample(kind, field, 2);
  const m = structuredClone(lock) as unknown as Record<string, unknown> & { base: Record<string, unknown>; layers: Record<string, unknown>[] };
  if (obj === "lockfile") m[field] = field === "layers" ? [m.layers[1]] : next;
  else if (obj === "base") m.base[field] = next;
  else m.layers[0]![field] = field === "mount_order" ? 3 : next;
  return m as unknown as LockFile;
}

test("changing a hashed field changes the identity; changing an excluded field does not", () => {
  const lock = fullLock();
  const id = environmentId(viewLock(lock));
  for (const obj of Object.keys(OBJECTS) as (keyof typeof OBJECTS)[]) {
    for (const f of HASHED[obj]!) assert.notEqual(environmentId(viewLock(mutate(lock, obj, f))), id, `${obj}.${f} is hashed`);
    for (const f of Object.keys(EXCLUDED[obj]!)) assert.equal(environmentId(viewLock(mutate(lock, obj, f))), id, `${obj}.${f} is excluded`);
  }
});

test("the hash input is tagged, has layers in mount order, and host requirements as a sorted set", () => {
  const lock = fullLock();
  const swapped = { ...lock, layers: [...lock.layers].reverse(), requires_host: [{ key: "z", value: "1" }, ...lock.requires_host, { key: "z", value: "1" }] };
  const input = environmentIdInput(viewLock(swapped));
  assert.equal(input.schema, "cairn.environment/2");
  assert.deepEqual(
    (input.layers as { mount_order: number }[]).map((l) => l.mount_order),
    [1, 2],
  );
  assert.deepEqual(
    (input.requires_host as { key: string }[]).map((h) => h.key),
    ["key-1", "z"],
  );
});

test("the scope places every field of a real, fully populated lockfile (shared exhaustiveness helper), and its control", () => {
  const model = writeStruct(fullLock() as unknown as Record<string, unknown>, LOCK_FILE);
  assertScopeExhaustive(ENVIRONMENT_ID_SCOPE, model);
  assertCatchesExtraField(ENVIRONMENT_ID_SCOPE, model);
});

test("the base digest scope places every field of the base", () => {
  const base = writeStruct(fullLock() as unknown as Record<string, unknown>, LOCK_FILE).base;
  assertScopeExhaustive(BASE_DIGEST_SCOPE, base);
  assertCatchesExtraField(BASE_DIGEST_SCOPE, base);
});
