/**
 * A registry document as two files: the seed's own document, which Strata
 * reads, and cairn's signature of it beside it (seed 002: LayerManifest,
 * Formation). This module is the one definition of the first file's bytes
 * and of the check that binds the two.
 *
 * The DSSE envelope signs cairn's record (the layer manifest of
 * layer-manifest.ts, the formation record of formation-document.ts): a
 * superset of the seed document, holding what the seed has no field for
 * (which entries are symlinks and their targets, whiteouts, the builder, the
 * diff_id, recorded sources, the build base's digest; a formation's members
 * pinned by id and sha256). The seed document is a function of that record
 * and of who signed it: `toSpecLayerManifest` / `toSpecFormation`, written by
 * spec/struct-wire.ts's writer as indented JSON (which Strata's YAML reader reads),
 * `signed_by` holding the key id of the envelope's first signature. A
 * formation's software refs are written as Go's encoding/json writes the
 * seed's SoftwareRef (it defines MarshalYAML only, so JSON gets the struct's
 * fields, `{"name", "version"}`): the mapping form, which every Strata reads
 * (v0.22.0 decodes no scalar ref). So the
 * pair binds both ways: an edited envelope fails its signature, and an edited
 * seed document is no longer the bytes its signed record gives; every read of
 * a registry document compares them byte for byte (REGISTRY_INVALID naming
 * the first field that differs). Trust is still decided by verifying the
 * envelope alone: the seed document is never read for anything but this
 * comparison, so it can say nothing the signature does not.
 */
import { CairnError, type DsseEnvelope, isJsonObject, parseJsonBytes } from "../core/index.ts";
import type { Formation } from "./formation-document.ts";
import type { LayerManifest } from "./layer-manifest.ts";
import { toSpecFormation, toSpecLayerManifest } from "./layer-spec.ts";
import { FORMATION, LAYER_MANIFEST, type StructSchema } from "./spec/schema.ts";
import { writeStruct } from "./spec/struct-wire.ts";

/** What the signature file beside a document is named: the document's name and this suffix (`layers/ID.json.dsse`). */
export const SIGNATURE_SUFFIX = ".dsse";

/** The signer a seed document names: the key id of the envelope's first signature; "" for an unsigned document. */
export function signerOf(envelope: DsseEnvelope): string {
  return envelope.signatures[0]?.keyid ?? "";
}

function documentBytes(value: object, schema: StructSchema): Buffer {
  return jsonBytes(writeStruct(value as Record<string, unknown>, schema));
}

function jsonBytes(model: unknown): Buffer {
  return Buffer.from(`${JSON.stringify(model, null, 2)}\n`);
}

/** The seed's LayerManifest for a signed layer manifest: the registry's `layers/ID.json`. */
export function layerDocumentBytes(value: LayerManifest, envelope: DsseEnvelope): Buffer {
  return documentBytes(toSpecLayerManifest(value, signerOf(envelope)), LAYER_MANIFEST);
}

/** The seed's Formation for a signed formation record: the registry's `formations/NAME-VERSION.json`. */
export function formationDocumentBytes(value: Formation, envelope: DsseEnvelope): Buffer {
  const spec = toSpecFormation(value, signerOf(envelope));
  // writeStruct writes each member ref in its mapping form (refToModel), which is how Go's encoding/json writes the seed's SoftwareRef.
  return jsonBytes(writeStruct(spec as unknown as Record<string, unknown>, FORMATION));
}

/**
 * Refuses a seed document that is not the one its signed record gives
 * (REGISTRY_INVALID naming the first field that differs): the seed document
 * or its signature was edited, or one was replaced without the other.
 */
export function checkDocument(found: Buffer, expected: Buffer, where: string): void {
  if (found.equals(expected)) return;
  throw new CairnError("REGISTRY_INVALID", `${where} is not the document its signed record gives (${whatDiffers(found, expected, where)} differs)`, {
    path: where,
    hint: `the document or its signature beside it (${SIGNATURE_SUFFIX}) was altered or replaced; publish again with cairn`,
  });
}

/** For the message: the first top-level field that differs. Parsed only when near the expected size, so a huge document is refused without building its model. */
function whatDiffers(found: Buffer, expected: Buffer, where: string): string {
  if (found.length > 2 * expected.length + 4096) return "its size";
  try {
    const a = parseJsonBytes(found, { source: where });
    const b = JSON.parse(expected.toString("utf8")) as Record<string, unknown>;
    if (!isJsonObject(a)) return "its type";
    const differs = [...new Set([...Object.keys(b), ...Object.keys(a)])].find((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
    return differs === undefined ? "its formatting" : `field ${JSON.stringify(differs).slice(0, 80)}`;
  } catch (e) {
    if (!(e instanceof CairnError)) throw e;
    return "its syntax";
  }
}
