/**
 * A matrix: JSON pointers into a document and the values each takes, the
 * cross product of them giving one variant of the document per point. The
 * one definition of what `set: POINTER, values: [...]` means, used by a
 * campaign's matrix over a spec (expand.ts) and by `cairn explore`'s
 * variations over a branch tail (explore-file.ts), so the two cannot come to
 * read the same pointer differently.
 *
 * A pointer writes only into what exists: every parent must be there, a list
 * index must name an existing entry (no appending, no `-`), and `__proto__`
 * is refused; the values are copied as null-prototype models.
 */
import { checkLimit, childPath, isJsonObject, type Checker, type JsonModel, type JsonObject } from "../core/index.ts";

/** One axis: a JSON pointer into the document and the values it takes. */
export interface MatrixAxis {
  readonly set: string;
  readonly values: readonly JsonModel[];
}

function unescapeToken(token: string): string {
  return token.replaceAll("~1", "/").replaceAll("~0", "~");
}

/** A deep copy as plain null-prototype objects (the strict readers' own kind of model). */
export function copyModel(v: JsonModel): JsonModel {
  if (Array.isArray(v)) return v.map(copyModel);
  if (isJsonObject(v)) {
    const o = Object.create(null) as JsonObject;
    for (const k of Object.keys(v)) o[k] = copyModel(v[k]!);
    return o;
  }
  return v;
}

/** `value` set at `pointer` in `model` (in place); the parent must exist. Returns why not, or undefined. `what` names the document in the reason. */
export function setAt(model: JsonObject, pointer: string, value: JsonModel, what = "the spec"): string | undefined {
  const tokens = pointer.split("/").slice(1).map(unescapeToken);
  let at: JsonModel = model;
  for (let i = 0; i < tokens.length - 1; i++) {
    const t = tokens[i]!;
    const next: JsonModel | undefined = Array.isArray(at)
      ? /^(0|[1-9][0-9]*)$/.test(t)
        ? at[Number(t)]
        : undefined
      : isJsonObject(at) && Object.hasOwn(at, t)
        ? at[t]
        : undefined;
    if (next === undefined || next === null || typeof next !== "object") return `${what} has no /${tokens.slice(0, i + 1).join("/")} to set into`;
    at = next;
  }
  const last = tokens.at(-1)!;
  if (Array.isArray(at)) {
    if (!/^(0|[1-9][0-9]*)$/.test(last) || Number(last) >= at.length) return `${what}'s list has no entry ${last}`;
    at[Number(last)] = copyModel(value);
  } else if (isJsonObject(at)) {
    if (last === "__proto__") return "__proto__ is refused";
    at[last] = copyModel(value);
  } else return "the parent is not an object or a list";
  return undefined;
}

/** The cross product of the axes, first axis slowest; one empty point without a matrix. */
export function matrixPoints(matrix: readonly MatrixAxis[]): JsonModel[][] {
  let out: JsonModel[][] = [[]];
  for (const axis of matrix) out = out.flatMap((p) => axis.values.map((v) => [...p, v]));
  return out;
}

export interface AxisRules {
  /** Where a pointer may write. */
  readonly settable: RegExp;
  /** What is said at `/…/set` when a pointer is outside `settable`. */
  readonly settableMessage: string;
  /** The named limit on one axis's values, and its value. */
  readonly valuesLimit: readonly [name: string, max: number];
}

/** Reads a list of axes (`path` is its pointer): each `{set, values}`, no pointer twice, at least one value; problems go to `c`. */
export function readMatrixAxes(c: Checker, axes: readonly JsonModel[], path: string, rules: AxisRules): MatrixAxis[] {
  const out: MatrixAxis[] = [];
  const seen = new Set<string>();
  axes.forEach((axis, i) => {
    const at = childPath(path, i);
    const o = c.object(axis, at, ["set", "values"]);
    if (o === undefined) return;
    const set = c.requiredString(o, "set", at);
    if (set !== undefined && !rules.settable.test(set)) c.add(childPath(at, "set"), rules.settableMessage);
    if (set !== undefined && seen.has(set)) c.add(childPath(at, "set"), "an axis sets this pointer already");
    if (set !== undefined) seen.add(set);
    const values = c.array(c.required(o, "values", at), childPath(at, "values"));
    if (values !== undefined) {
      checkLimit(rules.valuesLimit[0], values.length, rules.valuesLimit[1], childPath(at, "values"));
      if (values.length === 0) c.add(childPath(at, "values"), "must hold at least one value");
    }
    if (set !== undefined && values !== undefined) out.push({ set, values });
  });
  return out;
}
