/**
 * Validation of OCI JSON documents against the image-spec's own JSON schemas
 * (draft-04, vendored unmodified in `./schemas`, see NOTICE.md there), with
 * `ajv` + `ajv-draft-04`. The schemas are the spec's word on document shape;
 * cairn's stricter rules (platform, media types, `urls`, `data`) are checked
 * afterwards by the source reader, never instead of the schema.
 *
 * Unknown fields pass, as the OCI spec requires of consumers.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type Ajv04Module from "ajv-draft-04";
import type { ValidateFunction } from "ajv";
import { CairnError, codeFile, refuseAll, type Issue, type JsonModel } from "../core/index.ts";

const FILES = ["defs", "defs-descriptor", "content-descriptor", "config-schema", "image-index-schema", "image-layout-schema", "image-manifest-schema"] as const;

export type OciDocumentKind = "layout" | "index" | "manifest" | "config";
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
/** ajv is loaded at the first schema compiled, not at import: a command that validates no OCI document (a verify under a memo) never pays its ~25 ms load. */
const loadAjv04 = (): typeof Ajv04Module => createRequire(import.meta.url)("ajv-draft-04") as typeof Ajv04Module;

let ajv: Ajv04 | undefined;
const validators = new Map<OciDocumentKind, ValidateFunction>();

/**
 * The validator for one kind, compiled on first use: a command compiles
 * only the schemas of the documents it reads (a pull never compiles the
 * layout schema). The vendored schemas are registered without validating
 * them against the draft-04 meta-schema at every start
 * (`validateSchema: false`): they are the spec's unmodified files, and
 * tests/oci/schemas-vendored.test.ts compiles each with the meta-schema check
 * on, so a damaged file still fails, in the tests instead of in every run.
 */
function load(kind: OciDocumentKind): ValidateFunction {
  const cached = validators.get(kind);
  if (cached !== undefined) return cached;
  ajv ??= registry(false);
  const v = ajv.getSchema(`${BASE}${KIND_FILE[kind]}.json`);
  if (v === undefined) throw new CairnError("OCI_SCHEMA", `schema for ${kind} did not load`);
  validators.set(kind, v);
  return v;
}

/** An ajv instance with every vendored schema registered under its file name (exposed for the vendored-schema test). */
export function registry(validateSchema: boolean): Ajv04 {
  // ajv-draft-04 is CommonJS: its class is `module.exports.default` under Node ESM interop.
  const a = new (loadAjv04().default)({ allErrors: true, strict: true, validateSchema });
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

/** Every kind's schema URL, for the vendored-schema test. */
export const SCHEMA_URLS: Readonly<Record<OciDocumentKind, string>> = {
  layout: `${BASE}${KIND_FILE.layout}.json`,
  index: `${BASE}${KIND_FILE.index}.json`,
  manifest: `${BASE}${KIND_FILE.manifest}.json`,
  config: `${BASE}${KIND_FILE.config}.json`,
};

/**
 * Validates `doc` (already strictly parsed) as an OCI `kind` document and
 * throws OCI_SCHEMA listing every violation with its JSON pointer. `source`
 * names the document (a file name or digest) for the message.
 */
export function validateOciDocument(kind: OciDocumentKind, doc: JsonModel, source: string): void {
  const validate = load(kind);
  if (validate(doc)) return;
  const issues: Issue[] = (validate.errors ?? []).map((e) => ({
    code: "OCI_SCHEMA",
    path: e.instancePath,
    message: `${e.message ?? "invalid"}${e.params && "allowedValues" in e.params ? ` (${String(e.params.allowedValues)})` : ""}`,
  }));
  throw refuseAll(
    "OCI_SCHEMA",
    `${source} is not a valid OCI ${kind} document`,
    issues,
    "the image-spec JSON schema refuses it; rebuild the image with a conforming tool",
  );
}
