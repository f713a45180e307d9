/**
 * Every layer-application refusal of issue 4 part 4, from the generator in
 * fixtures/tar-refusals.ts: the hostile layers fail with their code (and a
 * limit failure names its limit); the control, differing only in the refused
 * detail, is accepted, so each refusal is shown to be caused by that detail.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assertCodeAsync } from "../helpers/errors.ts";
import { runLayers } from "./fixtures/layer-runner.ts";
import { TAR_REFUSALS } from "./fixtures/tar-refusals.ts";

describe("layer refusals (each with a control)", () => {
  for (const c of TAR_REFUSALS) {
    it(`${c.id}: refused with ${c.code}`, async () => {
      const opts = { policy: c.policy, limits: c.limits, gzip: !c.plain };
      const err = await assertCodeAsync(() => runLayers(c.hostile, opts), c.code);
      if (c.limit !== undefined) assert.match(err.message, new RegExp(`\\b${c.limit}\\b`), "a limit failure names the limit");
      assert.ok(err.path, "the refusal names where in the layer it happened");
    });
    it(`${c.id}: control accepted`, async () => {
      const { tree } = await runLayers(c.control, { policy: c.policy, limits: c.limits, gzip: !c.plain });
      assert.equal(tree.get("/")?.type, "dir");
    });
  }
});
