/**
 * Validation of OCI JSON documents against the image-spec's own JSON schemas
 * (draft-04, vendored unmodified in `./schemas`, see NOTICE.md there). The
 * schemas are the spec's word on document shape; cairn's stricter rules
 * (platform, media types, `urls`, `data`) are checked afterwards by the
 * source reader, never instead of the schema.
 *
 * The functions that validate are ajv's own compilation of those schemas
 * (`ajv` + `ajv-draft-04`, `schema-registry.ts`), generated ahead of time
 * into `schema-validators.ts` by scripts/oci-validators.ts, and compared with
 * a fresh generation by tests/oci/schema-validators.test.ts: a command runs
 * the same checks without loading ajv and compiling the schemas at every
 * start (issue 34: ~80 ms of module loading and ~80-150 ms of compilation
 * per `cairn pull` on the development machine).
 *
 * Unknown fields pass, as the OCI spec requires of consumers.
 */
import type { ErrorObject } from "ajv";
import { refuseAll, type Issue, type JsonModel } from "../core/index.ts";
import * as generated from "./schema-validators.ts";

export type OciDocumentKind = "layout" | "index" | "manifest" | "config";

/** A generated validator: ajv's calling convention (the errors of the last call on the function). */
type Validator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

// The generated module is unchecked code (`@ts-nocheck`): its four exports are typed here, once.
const VALIDATORS: Readonly<Record<OciDocumentKind, Validator>> = {
  layout: generated.layout as Validator,
  index: generated.index as Validator,
  manifest: generated.manifest as Validator,
  config: generated.config as Validator,
};

/**
 * Validates `doc` (already strictly parsed) as an OCI `kind` document and
 * throws OCI_SCHEMA listing every violation with its JSON pointer. `source`
 * names the document (a file name or digest) for the message.
 */
export function validateOciDocument(kind: OciDocumentKind, doc: JsonModel, source: string): void {
  const validate = VALIDATORS[kind];
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
