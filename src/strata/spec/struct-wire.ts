/**
 * Reading and writing Strata's types by the field table (schema.ts).
 *
 * Reading is Go's decoding made strict: a field the file leaves out, or
 * writes as null, takes Go's zero value (so a lockfile from an older Strata
 * with fields missing is read), but a field the table does not name, a value
 * of the wrong type, a null list entry (the seed's #79 refusal, applied to
 * every list) and a malformed time are errors, each with its JSON pointer.
 * Duplicate keys and bad UTF-8 are refused by the YAML/JSON readers below
 * this. Policy checks (Validate) are apart from parsing, as the seed says:
 * see lockfile.ts.
 *
 * Writing emits the table's names in its order and leaves out an `omitempty`
 * field holding its zero value, as Go's encoder does; the zero time is written
 * as Go writes it (`0001-01-01T00:00:00Z`) and read back as unset. A package
 * set's nil list is written `null` (Go's yaml.v3 would write `[]`, which reads
 * back as an empty list and so changes the EnvironmentID).
 */
import { type Checker, childPath, compareBytes, type JsonModel } from "../../core/index.ts";
import { readRef, refToModel, yamlNumberMessage, type SoftwareRef } from "../ref.ts";
import type { Kind, StructSchema } from "./schema.ts";

/** Go's zero time.Time as yaml.v3 and encoding/json write it. */
export const GO_ZERO_TIME = "0001-01-01T00:00:00Z";
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** Fields whose nil list must stay distinct from an empty one (Go's JSON writes `null` for nil); see types.ts. */
const KEEPS_NIL = new Set(["ResolvedPackageSet.packages"]);

function zero(kind: Kind): unknown {
  if (kind === "string" || kind === "time") return "";
  if (kind === "int") return 0;
  if (kind === "bool") return false;
  if (kind === "map") return Object.freeze(Object.create(null));
  if (kind === "ref") return undefined;
  if ("list" in kind) return [];
  if ("struct" in kind) return zeroStruct(kind.struct);
  return undefined;
}

export function zeroStruct(schema: StructSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of schema.fields) out[f.name] = KEEPS_NIL.has(`${schema.type}.${f.name}`) ? null : zero(f.kind);
  return out;
}

function readValue(c: Checker, kind: Kind, v: JsonModel, p: string): unknown {
  if (kind === "ref") return readRef(c, v, p);
  if (v === null) return zero(kind);
  if (kind === "string") {
    if (typeof v === "string") return v;
    c.add(p, typeof v === "number" ? yamlNumberMessage(v) : `expected a string, found ${typeof v}`, "MODEL_TYPE");
    return "";
  }
  if (kind === "time") {
    if (typeof v !== "string" || !RFC3339.test(v) || Number.isNaN(Date.parse(v))) {
      c.add(p, "expected an RFC 3339 time (2026-03-01T12:00:00Z)", "MODEL_VALUE");
      return "";
    }
    return v === GO_ZERO_TIME ? "" : v;
  }
  if (kind === "int") {
    if (typeof v === "number" && Number.isSafeInteger(v)) return v;
    c.add(p, "expected an integer (at most 2^53 - 1 in magnitude)", "MODEL_TYPE");
    return 0;
  }
  if (kind === "bool") {
    if (typeof v === "boolean") return v;
    c.add(p, "expected true or false", "MODEL_TYPE");
    return false;
  }
  if (kind === "map") {
    const o = c.object(v, p);
    const out: Record<string, string> = Object.create(null);
    if (o !== undefined) for (const [k, x] of Object.entries(o)) out[k] = readValue(c, "string", x, childPath(p, k)) as string;
    return out;
  }
  if ("list" in kind) {
    if (!Array.isArray(v)) {
      c.add(p, `expected a list, found ${typeof v}`, "MODEL_TYPE");
      return [];
    }
    const out: unknown[] = [];
    v.forEach((x, i) => {
      if (x === null) {
        c.add(childPath(p, i), "a null list entry (a bare '-', or the dash of a commented-out entry) is not an entry", "MODEL_NULL_ENTRY");
        return;
      }
      const r = readValue(c, kind.list, x, childPath(p, i));
      if (r !== undefined) out.push(r);
    });
    return out;
  }
  return readStruct(c, v, p, "struct" in kind ? kind.struct : kind.ptr);
}

/** Reads one struct at `p`; problems are added to `c`, and the value is still returned (zero where a field was bad). */
export function readStruct(c: Checker, v: JsonModel | undefined, p: string, schema: StructSchema): Record<string, unknown> {
  const out = zeroStruct(schema);
  if (v === undefined || v === null) return out;
  const o = c.object(
    v,
    p,
    schema.fields.map((f) => f.name),
  );
  if (o === undefined) return out;
  for (const f of schema.fields) {
    if (!Object.hasOwn(o, f.name)) continue;
    const x = o[f.name]!;
    if (x === null && KEEPS_NIL.has(`${schema.type}.${f.name}`)) continue;
    out[f.name] = readValue(c, f.kind, x, childPath(p, f.name));
  }
  return out;
}

function isEmpty(kind: Kind, v: unknown): boolean {
  if (v === undefined || v === null || v === "" || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.length === 0;
  if (kind === "map") return Object.keys(v as object).length === 0;
  if (typeof kind === "object" && "struct" in kind) return kind.struct.fields.every((f) => isEmpty(f.kind, (v as Record<string, unknown>)[f.name]));
  return false;
}

function writeValue(kind: Kind, v: unknown): unknown {
  if (kind === "ref") return refToModel(v as SoftwareRef); // the mapping form, which every Strata version reads
  if (kind === "time") return v === "" ? GO_ZERO_TIME : v;
  if (kind === "string" || kind === "int" || kind === "bool") return v;
  if (kind === "map") {
    const m = v as Record<string, string>;
    const out: Record<string, string> = {};
    for (const k of Object.keys(m).sort(compareBytes)) out[k] = m[k]!;
    return out;
  }
  if ("list" in kind) return ((v as unknown[] | null) ?? []).map((x) => writeValue(kind.list, x));
  return writeStruct(v as Record<string, unknown>, "struct" in kind ? kind.struct : kind.ptr);
}

/** The struct as a plain object in the table's field order, `omitempty` zero fields left out. */
export function writeStruct(v: Record<string, unknown>, schema: StructSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of schema.fields) {
    const x = v[f.name];
    if (f.omitempty && isEmpty(f.kind, x)) continue;
    if (x === undefined && typeof f.kind === "object" && "ptr" in f.kind) continue;
    // A nil list that must stay nil (KEEPS_NIL) is written as null, which Go reads back as nil: writing [] would change the EnvironmentID.
    out[f.name] = x === null && KEEPS_NIL.has(`${schema.type}.${f.name}`) ? null : writeValue(f.kind, x);
  }
  return out;
}
