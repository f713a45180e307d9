/**
 * The OCI layout of a dynamically linked program with its interpreter and
 * libraries is accepted, and inside the resulting tree every path the loader
 * will open resolves (through the image's own symlinks) to a regular file.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { describe, it } from "node:test";
import { applyLayers } from "../../src/tree/index.ts";
import { readOciSource } from "../../src/oci/index.ts";
import { STRICT_POLICY } from "../../src/tree/layer-policy.ts";
import type { CanonicalTree, FsEntry } from "../../src/tree/entries.ts";
import { writeDynamicProgramLayout } from "./fixtures/dynamic-layout.ts";
import { MemorySink } from "../tree/fixtures/memory-sink.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";

/** Resolves `path` inside the tree, following the tree's symlinks (an independent, test-side resolver). */
function resolveIn(tree: CanonicalTree, path: string, hops = 0): FsEntry | undefined {
  assert.ok(hops < 40, "symlink loop");
  const parts = path.split("/").filter(Boolean);
  let cur = "/";
  for (let i = 0; i < parts.length; i++) {
    const next = posix.join(cur, parts[i]!);
    const e = tree.get(next);
    if (e === undefined) return undefined;
    if (e.type === "symlink") return resolveIn(tree, posix.resolve(cur, e.target, ...parts.slice(i + 1)), hops + 1);
    cur = next;
  }
  return tree.get(cur);
}

describe("dynamically linked program as an OCI layout", { skip: GCC_SKIP }, () => {
  it("is accepted, with the interpreter and every library resolvable in the tree", async () => {
    const d = mkdtempSync(join(tmpdir(), "cairn-dyn-"));
    const img = writeDynamicProgramLayout(join(d, "layout"));
    const src = await readOciSource({ layoutDir: join(d, "layout"), manifestDigest: img.manifestDigest, stagingDir: join(d, "staging") });
    const { tree } = await applyLayers({ layers: src.layers, policy: STRICT_POLICY, sink: new MemorySink() });
    assert.equal(tree.get(img.program)?.type, "file");
    assert.ok(
      img.libraries.some((l) => l.includes("ld-linux")),
      "ldd names the interpreter",
    );
    for (const lib of img.libraries) assert.equal(resolveIn(tree, lib)?.type, "file", lib);
    assert.equal(resolveIn(tree, "/no/such/lib.so"), undefined);
  });
});
