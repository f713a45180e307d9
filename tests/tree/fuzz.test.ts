/**
 * Hostile bytes never crash or hang layer application: random corruptions of
 * valid layers (byte flips, truncation, spliced blocks), with the DiffID
 * recomputed so the parser itself is exercised, either apply or fail with a
 * typed CairnError — never another exception, an unhandled rejection or a
 * hang. And an accepted corruption still yields a complete tree.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { CairnError } from "../../src/core/index.ts";
import { runLayers } from "./fixtures/layer-runner.ts";
import { dir, file, opaque, symlink, whiteout, writeTar } from "../workload/fixtures/tar-writer.ts";

const base = writeTar([
  dir("etc"),
  file("etc/a", "alpha\n", { mode: 0o640, uid: 3 }),
  symlink("etc/l", "a"),
  file("x".repeat(130), "long", { longName: "gnu" }),
  file("p", "pax", { pax: { path: "q".repeat(140), mtime: "1700000000" } }),
  whiteout("etc/gone"),
  opaque("etc"),
  file("big", Buffer.alloc(3000, 0x41)),
]);

const mutation = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(base.length - 1), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat(base.length - 1) }),
  fc.record({ kind: fc.constant("splice" as const), from: fc.nat(base.length / 512 - 1), to: fc.nat(base.length / 512 - 1) }),
);

function mutate(tar: Buffer, ms: { kind: string; at?: number; value?: number; from?: number; to?: number }[]): Buffer {
  let out = Buffer.from(tar);
  for (const m of ms) {
    if (m.kind === "flip") out[m.at! % out.length] = m.value!;
    else if (m.kind === "truncate") out = out.subarray(0, m.at! % (out.length + 1));
    else {
      const block = Buffer.from(out.subarray(m.from! * 512, m.from! * 512 + 512));
      out = Buffer.concat([out.subarray(0, m.to! * 512), block, out.subarray(m.to! * 512)]);
    }
  }
  return out;
}

describe("fuzzing layer application", () => {
  it("corrupted layers are applied or refused with a CairnError, never anything else", async () => {
    let refused = 0;
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), fc.boolean(), async (ms, gz) => {
        const tar = mutate(base, ms);
        try {
          const { tree } = await runLayers([tar], { gzip: gz });
          accepted++;
          for (const e of tree.values())
            if (e.path !== "/") assert.ok(tree.get(e.path.slice(0, e.path.lastIndexOf("/")) || "/")?.type === "dir", `parent of ${e.path}`);
        } catch (e) {
          assert.ok(e instanceof CairnError, `expected a CairnError, got ${String(e)}`);
          refused++;
        }
      }),
      { numRuns: 300 },
    );
    assert.ok(refused > 0 && accepted > 0, `both outcomes occur (refused ${refused}, accepted ${accepted})`);
  });
});
