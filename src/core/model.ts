/**
 * Strict readers for parsed models. A `Checker` walks a `JsonModel`, records
 * every problem as an issue with its JSON pointer (zod-style: collect all,
 * then refuse once), and never casts parser output to a type it has not
 * checked. Unknown keys are issues.
 */
import { CairnError, MAX_ISSUES, refuseAll, type ErrorCode, type Issue } from "./errors.ts";
import { escapePointer } from "./jcs.ts";
import { isJsonObject, type JsonModel, type JsonObject } from "./json.ts";

export function childPath(path: string, key: string | number): string {
  return `${path}/${typeof key === "number" ? key : escapePointer(key)}`;
}

export class Checker {
  /** The first MAX_ISSUES issues; `count` says how many there were. */
  readonly issues: Issue[] = [];
  #count = 0;

  /** Pointers a reader below the model (YAML) already reported: a problem there is not reported twice. */
  readonly #reported = new Set<string>();

  constructor(readonly code: ErrorCode) {}

  /**
   * Takes the problems a reader below the model found (readYamlText's), so
   * that one refusal lists them with the model's own. Where the reader left
   * `null` for a refused node (a bare `-`, an alias) the model's reading of
   * that place adds nothing; a duplicate key keeps its first value, which the
   * model still checks.
   */
  adopt(issues: readonly Issue[]): void {
    for (const i of issues) {
      this.add(i.path, i.message, i.code);
      if (i.code !== "JSON_DUPLICATE_KEY") this.#reported.add(i.path);
    }
  }

  add(path: string, message: string, code: ErrorCode = this.code): void {
    if (this.#reported.has(path)) return;
    // a hostile input can hold millions of bad entries: keep the first few, count the rest
    if (this.#count++ < MAX_ISSUES) this.issues.push({ code, path, message });
  }

  get count(): number {
    return this.#count;
  }

  get ok(): boolean {
    return this.#count === 0;
  }

  /** Throws one error listing every issue, if there are any. */
  done(what: string, hint?: string): void {
    if (this.#count === 0) return;
    if (this.#count === 1) {
      const i = this.issues[0]!;
      throw new CairnError(i.code, `${what}: ${i.message}`, { path: i.path, hint, issues: this.issues });
    }
    throw refuseAll(this.code, what, this.issues, hint, this.#count);
  }

  /** An object whose keys are all in `allowed`; unknown keys are issues. */
  object(v: JsonModel | undefined, path: string, allowed?: readonly string[]): JsonObject | undefined {
    if (!isJsonObject(v)) {
      this.add(path, `expected an object, found ${describe(v)}`, "MODEL_TYPE");
      return undefined;
    }
    if (allowed) {
      for (const k of Object.keys(v)) {
        if (!allowed.includes(k)) this.add(childPath(path, k), `unknown field "${k}"`, "MODEL_UNKNOWN_FIELD");
      }
    }
    return v;
  }

  required(obj: JsonObject, key: string, path: string): JsonModel | undefined {
    if (!Object.hasOwn(obj, key)) {
      this.add(childPath(path, key), `missing required field "${key}"`, "MODEL_MISSING_FIELD");
      return undefined;
    }
    return obj[key];
  }

  /** A required string field: one issue when it is missing, one when it is not such a string, never both. */
  requiredString(obj: JsonObject, key: string, path: string, opts: { nonEmpty?: boolean; pattern?: RegExp; max?: number } = {}): string | undefined {
    const v = this.required(obj, key, path);
    return v === undefined ? undefined : this.string(v, childPath(path, key), opts);
  }

  string(v: JsonModel | undefined, path: string, opts: { nonEmpty?: boolean; pattern?: RegExp; max?: number } = {}): string | undefined {
    if (typeof v !== "string") {
      this.add(path, `expected a string, found ${describe(v)}`, "MODEL_TYPE");
      return undefined;
    }
    if (opts.nonEmpty && v.length === 0) {
      this.add(path, "must not be empty", "MODEL_VALUE");
      return undefined;
    }
    if (opts.max !== undefined && v.length > opts.max) {
      this.add(path, `longer than ${opts.max} characters`, "LIMIT_EXCEEDED");
      return undefined;
    }
    if (opts.pattern && !opts.pattern.test(v)) {
      this.add(path, `does not match ${opts.pattern}`, "MODEL_VALUE");
      return undefined;
    }
    return v;
  }

  boolean(v: JsonModel | undefined, path: string): boolean | undefined {
    if (typeof v !== "boolean") {
      this.add(path, `expected a boolean, found ${describe(v)}`, "MODEL_TYPE");
      return undefined;
    }
    return v;
  }

  integer(v: JsonModel | undefined, path: string, opts: { min?: number; max?: number } = {}): number | undefined {
    if (typeof v !== "number" || !Number.isSafeInteger(v)) {
      this.add(path, `expected an integer, found ${describe(v)}`, "MODEL_TYPE");
      return undefined;
    }
    if ((opts.min !== undefined && v < opts.min) || (opts.max !== undefined && v > opts.max)) {
      this.add(path, `must be between ${opts.min ?? "-∞"} and ${opts.max ?? "∞"}`, "MODEL_VALUE");
      return undefined;
    }
    return v;
  }

  array(v: JsonModel | undefined, path: string): JsonModel[] | undefined {
    if (!Array.isArray(v)) {
      this.add(path, `expected a list, found ${describe(v)}`, "MODEL_TYPE");
      return undefined;
    }
    v.forEach((item, i) => {
      if (item === null) this.add(childPath(path, i), `list entry ${i} is null`, "MODEL_NULL_ENTRY");
    });
    return v;
  }

  stringArray(v: JsonModel | undefined, path: string): string[] | undefined {
    const arr = this.array(v, path);
    if (arr === undefined) return undefined;
    const out: string[] = [];
    arr.forEach((item, i) => {
      const s = item === null ? undefined : this.string(item, childPath(path, i));
      if (s !== undefined) out.push(s);
    });
    return out.length === arr.length ? out : undefined;
  }

  /** A mapping of string to string (environment-like); values are never echoed. */
  stringMap(v: JsonModel | undefined, path: string): Map<string, string> | undefined {
    const obj = this.object(v, path);
    if (obj === undefined) return undefined;
    const out = new Map<string, string>();
    for (const k of Object.keys(obj)) {
      const s = this.string(obj[k], childPath(path, k));
      if (s !== undefined) out.set(k, s);
    }
    return out;
  }
}

export function describe(v: JsonModel | undefined): string {
  if (v === undefined) return "nothing";
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  return `a ${typeof v}`;
}
