/**
 * The --json documents of the CLI and their JSON Schemas (docs/json-output.md):
 * the commands that take --json, found by walking the commander tree, the tag
 * each must print, and a validator that checks a printed document against the
 * schema its tag names (ajv, draft 2020-12).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv";
import { buildProgram } from "../../src/cli/program.ts";
import { PROJECT_ROOT } from "./vectors.ts";

export const SCHEMAS_DIR = join(PROJECT_ROOT, "docs/schemas");
export const ERROR_TAG = "cairn.cli.error/1";

/** The tag a command's --json document carries: its words joined by "-". */
export const tagOf = (path: readonly string[]): string => `cairn.cli.${path.join("-")}/1`;

/** The schema file of a tag: `cairn.cli.runs-list/1` is docs/schemas/cairn.cli.runs-list.1.schema.json. */
export const schemaFileOf = (tag: string): string => `${tag.replace("/", ".")}.schema.json`;

/** Every command (leaf or not) that has a --json option, as its words. */
export async function jsonCommands(): Promise<string[][]> {
  const io = { out: () => {}, err: () => {}, tty: false };
  const program = await buildProgram({ io, env: process.env, cwd: process.cwd(), json: false });
  const found: string[][] = [];
  const walk = (c: Command, path: string[]): void => {
    for (const s of c.commands) {
      const p = [...path, s.name()];
      if (s.options.some((o) => o.long === "--json")) found.push(p);
      walk(s, p);
    }
  };
  walk(program, []);
  return found;
}

let ajv: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction>();

/** The compiled schema of `tag` (throws when there is no such file or it does not compile). */
export function schemaOf(tag: string): ValidateFunction {
  const have = compiled.get(tag);
  if (have !== undefined) return have;
  if (ajv === undefined) {
    // every schema at once: one may refer to another's $defs (a run's failure embeds the error object)
    ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
    for (const name of schemaFiles()) ajv.addSchema(JSON.parse(readFileSync(join(SCHEMAS_DIR, name), "utf8")) as object);
  }
  const schema = JSON.parse(readFileSync(join(SCHEMAS_DIR, schemaFileOf(tag)), "utf8")) as { $id?: string };
  if (schema.$id !== tag) throw new Error(`${schemaFileOf(tag)}: $id ${schema.$id} is not ${tag}`);
  const v = ajv.getSchema(tag);
  if (v === undefined) throw new Error(`${tag}: no schema`);
  compiled.set(tag, v);
  return v;
}

/** The schema files under docs/schemas. */
export const schemaFiles = (): string[] => readdirSync(SCHEMAS_DIR).filter((n) => n.endsWith(".schema.json"));

/**
 * Parses `stdout` as one --json document and validates it against the schema
 * its tag names; returns the document and the validation errors (empty when
 * it conforms). `expected` is the tag it must carry.
 */
export function checkDocument(stdout: string, expected: string): { doc: Record<string, unknown>; problems: string[] } {
  const doc = JSON.parse(stdout) as Record<string, unknown>;
  if (doc.schema !== expected) return { doc, problems: [`schema is ${JSON.stringify(doc.schema)}, not ${expected}`] };
  const v = schemaOf(expected);
  if (v(doc)) return { doc, problems: [] };
  return { doc, problems: (v.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message} ${JSON.stringify(e.params)}`) };
}
