/**
 * Hostile OCI JSON never crashes the reader: any field of index.json, the
 * manifest or the config replaced by an arbitrary JSON value is accepted or
 * refused with a CairnError — never a TypeError from a shape cairn assumed.
 * The test counts what the generator reached and requires each class.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import fc from "fast-check";
import { CairnError } from "../../src/core/index.ts";
import { applyLayers } from "../../src/tree/index.ts";
import { readOciSource } from "../../src/oci/index.ts";
import { STRICT_POLICY } from "../../src/tree/layer-policy.ts";
import { MemorySink } from "../tree/fixtures/memory-sink.ts";
import { writeCase } from "./fixtures/oci-refusals.ts";
import type { Json, JsonObj } from "../workload/fixtures/oci-writer.ts";

/** Replaces the value at a path chosen by `picks` (indexes into each level's keys) with `value`. */
function replaceAt(doc: JsonObj, picks: number[], value: Json): void {
  let cur: Json = doc;
  for (let i = 0; i < picks.length; i++) {
    if (cur === null || typeof cur !== "object") return;
    const keys: (string | number)[] = Array.isArray(cur) ? cur.map((_, j) => j) : Object.keys(cur);
    if (keys.length === 0) return;
    const k: string | number = keys[picks[i]! % keys.length]!;
    const next: Json = (cur as Record<string | number, Json>)[k]!;
    if (i === picks.length - 1 || next === null || typeof next !== "object") {
      (cur as Record<string | number, Json>)[k] = value;
      return;
    }
    cur = next;
  }
}

const KEEP = Symbol("keep");

/** What a case reached: the JSON parser's refusal, the schema's, cairn's own checks after the schema, or acceptance. */
type Reached = "json" | "schema" | "cairn" | "accepted";

function classify(e: unknown): Reached {
  assert.ok(e instanceof CairnError, `expected a CairnError, got ${String(e)}`);
  if (e.code.startsWith("JSON_")) return "json";
  if (e.code === "OCI_SCHEMA") return "schema";
  return "cairn";
}

/**
 * Values a schema accepts in many places (digests, sizes, platform words,
 * media types), mixed with arbitrary JSON, so that cases get past the parser
 * and the schema to cairn's own checks (selection, platform, DiffIDs, sizes).
 */
const plausible: fc.Arbitrary<Json> = fc.oneof(
  fc.stringMatching(/^[0-9a-f]{64}$/).map((h) => `sha256:${h}`),
  fc.nat(4096),
  fc.constantFrom(
    "linux",
    "amd64",
    "arm64",
    "windows",
    "v8",
    "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.oci.image.manifest.v1+json",
    "",
  ),
  fc.array(
    fc.stringMatching(/^[0-9a-f]{64}$/).map((h) => `sha256:${h}`),
    { maxLength: 3 },
  ),
);

describe("fuzzing OCI documents", () => {
  it("any field replaced by any JSON value: accepted or a CairnError; the generator reaches the parser, the schema, cairn's own checks and acceptance", async (t) => {
    // KEEP writes the field's own value back: the unchanged document, accepted (the control inside the property).
    const json = fc.oneof(fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json | typeof KEEP>, plausible, fc.constant(KEEP));
    const reached: Record<Reached, number> = { json: 0, schema: 0, cairn: 0, accepted: 0 };
    const cairnCodes = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("index", "manifest", "config"),
        fc.array(fc.nat(20), { minLength: 1, maxLength: 4 }),
        json,
        async (doc, picks, value) => {
          const d = mkdtempSync(join(tmpdir(), "cairn-ocifuzz-"));
          try {
            if (value === KEEP) {
              const img = writeCase(join(d, "layout"), {});
              const src = await readOciSource({ layoutDir: join(d, "layout"), manifestDigest: img.manifestDigest, stagingDir: join(d, "staging") });
              await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: new MemorySink() });
              reached.accepted++;
              return;
            }
            const edit = (o: JsonObj): void => replaceAt(o, picks, value);
            const img = writeCase(
              join(d, "layout"),
              doc === "index" ? { editIndex: edit } : doc === "manifest" ? { editManifest: edit } : { editConfig: edit },
            );
            try {
              const src = await readOciSource({ layoutDir: join(d, "layout"), manifestDigest: img.manifestDigest, stagingDir: join(d, "staging") });
              await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: new MemorySink() });
              reached.accepted++;
            } catch (e) {
              const r = classify(e);
              reached[r]++;
              if (r === "cairn") cairnCodes.add((e as CairnError).code);
            }
          } finally {
            rmSync(d, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 300 },
    );
    t.diagnostic(`reached: ${JSON.stringify(reached)}; cairn's own codes: ${[...cairnCodes].sort().join(", ")}`);
    // Each class is expected tens of times in 300 runs; a generator that stops reaching one fails here.
    // Expected counts in 300 runs: json ~50, schema ~170, cairn ~12, accepted ~100; the floors leave room for chance.
    for (const k of ["json", "schema", "accepted"] as const) assert.ok(reached[k] >= 10, `only ${reached[k]} cases reached ${k}`);
    assert.ok(reached.cairn >= 3, `only ${reached.cairn} cases reached cairn's own checks`);
    assert.ok(cairnCodes.size >= 2, `cairn's own checks reached with ${[...cairnCodes].join(", ")}`);
  });
});
