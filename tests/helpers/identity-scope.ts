/**
 * The one exhaustiveness check for identity scopes (src/core/identity.ts).
 * Given a scope and real model instances, it fails when a field of a model is
 * in neither list, when a field is in both, and when a listed field exists in
 * none of the instances (the table went stale). Every identity's scope test
 * calls it; `assertCatchesExtraField` is the control each of them runs.
 *
 * Instances are plain models (JSON-like values). An instance given through
 * `named("spec", model)` has its fields named "spec:/…", for scopes that span
 * several models. A listed field with listed children is walked into (arrays
 * through "*"); a listed field without listed children is classified whole.
 */
import assert from "node:assert/strict";
import { escapePointer, type IdentityScope } from "../../src/core/index.ts";

const NAMED = Symbol("named model");
interface Named {
  readonly [NAMED]: string;
  readonly model: unknown;
}

/** A model instance whose fields are named `${name}:/…`. */
export function named(name: string, model: unknown): Named {
  return { [NAMED]: name, model };
}

function isNamed(v: unknown): v is Named {
  return typeof v === "object" && v !== null && NAMED in v;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v) && !(v instanceof Map);
}

/** Every problem of `scope` against the instances; empty when the scope is exhaustive and current. */
export function scopeProblems(scope: IdentityScope, instances: readonly unknown[]): string[] {
  const problems: string[] = [];
  const covers = Object.keys(scope.covers);
  const excludes = Object.keys(scope.excludes);
  const listed = new Set([...covers, ...excludes]);
  for (const f of covers) if (excludes.includes(f)) problems.push(`${f} is both covered and excluded`);
  for (const [f, why] of [...Object.entries(scope.covers), ...Object.entries(scope.excludes)]) {
    if (typeof why !== "string" || why.trim().length < 8) problems.push(`${f} has no reason`);
  }
  const hasChildren = (p: string): boolean => [...listed].some((f) => f.startsWith(`${p}/`));
  const seen = new Set<string>();
  const walk = (value: unknown, at: string): void => {
    if (Array.isArray(value)) {
      if (hasChildren(`${at}/*`)) for (const v of value) walk(v, `${at}/*`);
      return;
    }
    if (!isObject(value)) return;
    for (const key of Object.keys(value)) {
      const p = `${at}/${escapePointer(key)}`;
      seen.add(p);
      const children = hasChildren(p);
      if (!listed.has(p) && !children) problems.push(`${p} is a field of the model but neither covered nor excluded`);
      if (children) walk(value[key], p);
    }
  };
  for (const inst of instances) {
    if (isNamed(inst)) walk(inst.model, `${inst[NAMED]}:`);
    else walk(inst, "");
  }
  for (const f of listed) if (!seen.has(f)) problems.push(`${f} is listed but is not a field of any model given`);
  return problems;
}

/** Fails (listing every problem) unless the scope places every field of every instance exactly once. */
export function assertScopeExhaustive(scope: IdentityScope, ...instances: unknown[]): void {
  assert.ok(instances.length > 0, "give at least one real model instance");
  const problems = scopeProblems(scope, instances);
  assert.deepEqual(problems, [], `scope of ${scope.identity}:\n  ${problems.join("\n  ")}`);
}

/**
 * The control every scope test runs: the same instances plus one unlisted
 * field on the first of them make the check fail, naming that field.
 */
export function assertCatchesExtraField(scope: IdentityScope, ...instances: unknown[]): void {
  const [first, ...rest] = instances;
  const extend = (m: unknown): unknown => ({ ...(m as object), zz_unlisted_field: 1 });
  const extended = isNamed(first) ? named(first[NAMED], extend(first.model)) : extend(first);
  const problems = scopeProblems(scope, [extended, ...rest]);
  const prefix = isNamed(first) ? `${first[NAMED]}:` : "";
  assert.ok(
    problems.some((p) => p.startsWith(`${prefix}/zz_unlisted_field `)),
    `the check must catch an unlisted field (got: ${problems.join("; ")})`,
  );
}
