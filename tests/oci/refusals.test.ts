/**
 * Every OCI-source refusal of issue 4 part 3, from fixtures/oci-refusals.ts:
 * the hostile layout fails with its code; the control (the same image
 * without the refused detail) is read, staged and applied. A case that could
 * block (a FIFO) runs in a child process with a timeout.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { assertCodeAsync } from "../helpers/errors.ts";
import { outcomeInChild } from "../helpers/in-child.ts";
import { assembleLayout as assemble } from "./fixtures/assemble-layout.ts";
import { OCI_REFUSALS, writeCase } from "./fixtures/oci-refusals.ts";

const ASSEMBLE = new URL("./fixtures/assemble-layout.ts", import.meta.url);

describe("OCI source refusals (each with a control)", () => {
  for (const c of OCI_REFUSALS) {
    it(`${c.id}: refused with ${c.code}`, async () => {
      const layout = join(mkdtempSync(join(tmpdir(), "cairn-oci-")), "layout");
      const img = writeCase(layout, c.image);
      c.after?.(img);
      if (c.blocking === true) {
        // Could block the thread (a FIFO opened without O_NONBLOCK): in a child with a timeout, so a regression fails instead of hanging.
        const digest = c.select?.(img) ?? img.manifestDigest;
        assert.equal(outcomeInChild(ASSEMBLE, `m.assembleLayout(${JSON.stringify(layout)}, ${JSON.stringify(digest)}, ${JSON.stringify(c.limits)})`), c.code);
        return;
      }
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
