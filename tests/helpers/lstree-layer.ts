/**
 * The lstree program (tests/vm/fixtures/lstree.c, built static at test time)
 * as one more signed layer of the example Strata registry, `lstree@1.0`: the
 * program a VM test runs from a lockfile (tests/vm/strata-lock-run.test.ts,
 * tests/fleet/campaign-vm.test.ts). One definition, so the two tests publish
 * the same layer.
 */
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { toySpec, type ExampleRegistry } from "../../examples/strata/build-registry.ts";
import { buildLayerFromDirectory, LocalRegistry } from "../../src/strata/index.ts";
import { tempDir } from "../strata/fixtures.ts";
import { staticFixture } from "../vm/fixtures/programs.ts";

/** Publishes the layer (at /usr/local/bin/lstree) into the example's registry, signed with its key; returns the layer's id. */
export function publishLstreeLayer(ex: ExampleRegistry): string {
  const src = tempDir("cairn-lstree-");
  mkdirSync(join(src, "usr/local/bin"), { recursive: true });
  copyFileSync(staticFixture("lstree"), join(src, "usr/local/bin/lstree"));
  const built = buildLayerFromDirectory(src, toySpec({ name: "lstree", version: "1.0", provides: ["lstree@1.0"], files: {} }));
  LocalRegistry.open(ex.registry).publishLayer(built.blob.blob, built.manifest, [ex.registryKey]);
  return built.manifest.id;
}
