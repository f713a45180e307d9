/**
 * Hostile OCI JSON never crashes the reader: any field of index.json, the
 * manifest or the config replaced by an arbitrary JSON value is accepted or
 * refused with a CairnError — never a TypeError from a shape cairn assumed.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
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

describe("fuzzing OCI documents", () => {
  it("any field replaced by any JSON value: accepted or a CairnError", async () => {
    const json = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("index", "manifest", "config"),
        fc.array(fc.nat(20), { minLength: 1, maxLength: 4 }),
        json,
        async (doc, picks, value) => {
          const d = mkdtempSync(join(tmpdir(), "cairn-ocifuzz-"));
          const edit = (o: JsonObj): void => replaceAt(o, picks, value);
          const img = writeCase(join(d, "layout"), doc === "index" ? { editIndex: edit } : doc === "manifest" ? { editManifest: edit } : { editConfig: edit });
          try {
            const src = await readOciSource({ layoutDir: join(d, "layout"), manifestDigest: img.manifestDigest, stagingDir: join(d, "staging") });
            await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: new MemorySink() });
          } catch (e) {
            assert.ok(e instanceof CairnError, `expected a CairnError, got ${String(e)}`);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
