/**
 * The vary file of `cairn explore RUN --at CHECKPOINT --vary FILE` (issue 35
 * item 5): a base branch tail (the `steps` and optional `expect` that
 * `cairn branch --scenario` takes) and the variations over it, as a matrix
 * of JSON pointers into that tail (matrix.ts, the campaign matrix's own
 * reading). Every point of the cross product is one branch, named by what it
 * set.
 *
 *   steps:
 *     - action: network-up
 *       after: {output: stdout, contains: "fetch 2 attempt 3:"}
 *     - action: close-stdin
 *       after: {output: stdout, contains: "echo:"}
 *   vary:
 *     - set: /steps/0/after/contains
 *       values: ["fetch 2 attempt 1:", "fetch 2 attempt 2:"]
 *
 * Hostile like every input: read bounded, by the strict YAML reader, unknown
 * fields refused, every problem listed with its pointer (RUN_INVALID), the
 * count of variations checked from the axes alone before one is built
 * (`explore.variations`), and a pointer that names nothing in the tail
 * refused naming the axis. Each variation's tail is then read by the branch
 * (branch-scenario.ts) against where the parent's agent stood: a tail that
 * does not parse there is that variation's refusal, reported, not dropped.
 */
import { resolve } from "node:path";
import { CairnError, Checker, checkLimit, decodeUtf8, EXPLORE_LIMITS, readFileBounded, readYamlText, type JsonModel, type JsonObject } from "../core/index.ts";
import { copyModel, matrixPoints, readMatrixAxes, setAt, type MatrixAxis } from "./matrix.ts";

/** Where a variation may write: the tail's steps or its expectations. */
const SETTABLE = /^\/(steps|expect)(\/|$)/;

export interface VaryFile {
  readonly path: string;
  /** The base tail: `steps` and, when given, `expect`. */
  readonly base: JsonObject;
  readonly vary: readonly MatrixAxis[];
}

/** One branch to record: its name, the values it set (one per axis), and its tail's bytes (JSON). */
export interface Variation {
  readonly name: string;
  readonly set: readonly { readonly pointer: string; readonly value: JsonModel }[];
  readonly tail: Buffer;
}

export function readVaryFile(unsafePath: string): VaryFile {
  const path = resolve(unsafePath);
  const bytes = readFileBounded(path, EXPLORE_LIMITS["explore.file-bytes"], "explore.file-bytes", {
    missing: "USAGE",
    notRegular: "RUN_INVALID",
    notRegularHint: "give the vary file itself, a regular file",
  });
  return parseVaryFile(bytes, path);
}

export function parseVaryFile(bytes: Buffer, path: string): VaryFile {
  const { model, issues } = readYamlText(decodeUtf8(bytes, path), path);
  const c = new Checker("RUN_INVALID");
  c.adopt(issues);
  const top = c.object(model, "", ["steps", "expect", "vary"]) ?? Object.create(null);
  const steps = c.array(c.required(top, "steps", ""), "/steps");
  if (Object.hasOwn(top, "expect")) c.array(top.expect, "/expect");
  const vary: MatrixAxis[] = [];
  const axes = c.array(c.required(top, "vary", ""), "/vary");
  if (axes !== undefined) {
    checkLimit("explore.vary-axes", axes.length, EXPLORE_LIMITS["explore.vary-axes"], "/vary");
    if (axes.length === 0) c.add("/vary", "must hold at least one axis: each point of the axes is one branch");
    vary.push(
      ...readMatrixAxes(c, axes, "/vary", {
        settable: SETTABLE,
        settableMessage: "must be a JSON pointer under /steps or /expect (the branch tail)",
        valuesLimit: ["explore.vary-values", EXPLORE_LIMITS["explore.vary-values"]],
      }),
    );
  }
  c.done(`invalid vary file ${path}`, 'see docs/runs.md, "Explore"');
  const base = Object.create(null) as JsonObject;
  base.steps = steps as JsonModel;
  if (Object.hasOwn(top, "expect")) base.expect = top.expect as JsonModel;
  // the count of branches from the axes alone, before one is built
  checkLimit(
    "explore.variations",
    vary.reduce((n, a) => n * a.values.length, 1),
    EXPLORE_LIMITS["explore.variations"],
    "/vary",
  );
  return { path, base, vary };
}

/** A variation's name shows at most this many characters of a value (the report's `set` keeps it whole). */
export const NAME_VALUE_CHARS = 80;

/**
 * How a value is shown in a variation's name: a plain string as it is,
 * anything else (a string with a control character or a quote, a number,
 * an object) as JSON, at most NAME_VALUE_CHARS characters. Attack stopped:
 * a vary file's value holding terminal escapes reached the terminal raw
 * through the report's table and the progress lines.
 */
function shown(v: JsonModel): string {
  const text = typeof v === "string" && !/[\u0000-\u001f\u007f-\u009f"\\]/.test(v) ? v : JSON.stringify(v);
  return text.length > NAME_VALUE_CHARS ? `${text.slice(0, NAME_VALUE_CHARS)}…` : text;
}

/** Every point of the vary file's axes, first axis slowest, as a named tail. */
export function variations(file: VaryFile): Variation[] {
  return matrixPoints(file.vary).map((point) => {
    const tail = copyModel(file.base) as JsonObject;
    const set = file.vary.map((axis, i) => {
      const why = setAt(tail, axis.set, point[i]!, "the tail");
      if (why !== undefined)
        throw new CairnError("RUN_INVALID", `vary axis ${i} (${axis.set}): ${why}`, {
          path: `/vary/${i}/set`,
          hint: "a pointer writes into the base tail's steps or expect, which must hold what it names",
        });
      return { pointer: axis.set, value: point[i]! };
    });
    const name = set.map((s) => `${s.pointer}=${shown(s.value)}`).join(", ");
    return { name, set, tail: Buffer.from(`${JSON.stringify(tail)}\n`, "utf8") };
  });
}
