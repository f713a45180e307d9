/**
 * Every OCI-source refusal of issue 4 part 3, from fixtures/oci-refusals.ts:
 * the hostile layout fails with its code; the control (the same image
 * without the refused detail) is read, staged and applied.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { applyLayers } from "../../src/tree/index.ts";
import { DEFAULT_LIMITS, type LayerLimits } from "../../src/tree/layer-limits.ts";
import { readOciSource } from "../../src/oci/index.ts";
import { STRICT_POLICY } from "../../src/tree/layer-policy.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { MemorySink } from "../tree/fixtures/memory-sink.ts";
import { OCI_REFUSALS, writeCase } from "./fixtures/oci-refusals.ts";

async function assemble(layoutDir: string, manifestDigest: string, limits: Partial<LayerLimits> | undefined): Promise<void> {
  const all = { ...DEFAULT_LIMITS, ...limits };
  const src = await readOciSource({ layoutDir, manifestDigest, stagingDir: join(layoutDir, "..", "staging"), limits: all });
  await applyLayers({ layers: src.layers, policy: STRICT_POLICY, limits: all, sink: new MemorySink() });
}

describe("OCI source refusals (each with a control)", () => {
  for (const c of OCI_REFUSALS) {
    it(`${c.id}: refused with ${c.code}`, async () => {
      const layout = join(mkdtempSync(join(tmpdir(), "cairn-oci-")), "layout");
      const img = writeCase(layout, c.image);
      c.after?.(img);
      const err = await assertCodeAsync(() => assemble(layout, c.select?.(img) ?? img.manifestDigest, c.limits), c.code);
      if (c.code === "LIMIT_EXCEEDED") assert.match(err.message, new RegExp(c.id.split(" ")[1]!));
    });
    it(`${c.id}: control accepted`, async () => {
      const layout = join(mkdtempSync(join(tmpdir(), "cairn-oci-")), "layout");
      const img = writeCase(layout, c.control);
      await assemble(layout, img.manifestDigest, c.controlLimits);
    });
  }
});
