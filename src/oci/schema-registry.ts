/**
 * The vendored image-spec JSON schemas (draft-04, unmodified in `./schemas`,
 * see NOTICE.md there) registered with `ajv` + `ajv-draft-04`. This is not
 * what a command runs: scripts/oci-validators.ts compiles the schemas here
 * and writes ajv's compiled functions out as `schema-validators.ts`, which
 * `schemas.ts` runs (a start does not load ajv nor compile a schema). The
 * tests use this module to check the vendored files against the draft-04
 * meta-schema and the generated validators against a fresh generation.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type Ajv04Module from "ajv-draft-04";
import { codeFile } from "../core/index.ts";
import type { OciDocumentKind } from "./schemas.ts";

const FILES = ["defs", "defs-descriptor", "content-descriptor", "config-schema", "image-index-schema", "image-layout-schema", "image-manifest-schema"] as const;

const KIND_FILE: Record<OciDocumentKind, (typeof FILES)[number]> = {
  layout: "image-layout-schema",
  index: "image-index-schema",
  manifest: "image-manifest-schema",
  config: "config-schema",
};

const BASE = "https://opencontainers.org/schema/";

/**
 * Nested `id`s in the upstream files (`.../descriptor/mediaType`, ...) are
 * labels, but draft-04 treats them as base-URI changes, so one definitions
 * file reached from two schemas would register the same id twice and refs
 * like `defs-descriptor.json#` would resolve against different bases. Every
 * file is therefore registered under `BASE + <file>.json` with all `id`s
 * removed, which is how the upstream Go validator resolves them too (by
 * file name).
 */
function withoutIds(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutIds);
  if (typeof v === "object" && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (k !== "id") out[k] = withoutIds(x);
    return out;
  }
  return v;
}

// RFC 3339 date-time (the `format` the config schema names) and an absolute URI.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$/;

type Ajv04 = InstanceType<typeof Ajv04Module.default>;
const loadAjv04 = (): typeof Ajv04Module => createRequire(import.meta.url)("ajv-draft-04") as typeof Ajv04Module;

/**
 * An ajv instance with every vendored schema registered under its file name.
 * With `source`, ajv keeps the code it compiles, for
 * scripts/oci-validators.ts to write out; `validateSchema` checks each file
 * against the draft-04 meta-schema (tests/oci/schemas-vendored.test.ts).
 */
export function registry(validateSchema: boolean, code: { readonly source?: boolean } = {}): Ajv04 {
  // ajv-draft-04 is CommonJS: its class is `module.exports.default` under Node ESM interop.
  const options = { allErrors: true, strict: true, validateSchema };
  const a = new (loadAjv04().default)(code.source === true ? { ...options, code: { source: true, esm: true } } : options);
  a.addKeyword({ keyword: "media", schemaType: "object" });
  a.addFormat("date-time", DATE_TIME);
  a.addFormat("uri", URI);
  for (const f of FILES) {
    const text = readFileSync(codeFile(`oci/schemas/${f}.json`), "utf8");
    // Trusted, vendored spec files: plain JSON.parse (their int64 bounds are not safe integers).
    const schema = withoutIds(JSON.parse(text)) as Record<string, unknown>;
    delete schema.$schema;
    a.addSchema(schema, `${BASE}${f}.json`);
  }
  return a;
}

/** Every kind's schema URL: what the generated validators are compiled from, and the vendored-schema test's list. */
export const SCHEMA_URLS: Readonly<Record<OciDocumentKind, string>> = {
  layout: `${BASE}${KIND_FILE.layout}.json`,
  index: `${BASE}${KIND_FILE.index}.json`,
  manifest: `${BASE}${KIND_FILE.manifest}.json`,
  config: `${BASE}${KIND_FILE.config}.json`,
};
