// `cairn run` of a workload named by registry digest (issue 11, "done when"):
// the acceptance probe's OCI image, pushed by skopeo to the real registry, is
// named in the spec as `oci: {ref: HOST/REPO@sha256:…}` and recorded under
// QEMU; the run passes its assertions as the same image from a layout does.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "../vm/fixtures/kit.ts";
import { minimalOciWorkspace } from "../vm/fixtures/workloads.ts";
import { tempDir } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPush } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools()) || VM_SKIP;
let reg: TestRegistry;
let root = "";
let regDir = "";

before(async () => {
  if (skip) return;
  regDir = tempDir("run-ref");
  reg = await TestRegistry.create(join(regDir, "registry"));
});
after(async () => {
  await reg?.stop();
  for (const d of [root, regDir]) if (d) rmSync(d, { recursive: true, force: true });
});

test("a spec naming the image by registry digest records a passing run", { skip }, async () => {
  await testKit();
  const ws = minimalOciWorkspace();
  root = ws.root;
  const spec = JSON.parse(readFileSync(ws.specPath, "utf8"));
  const manifest: string = spec.source.oci.manifest;
  await skopeoPush(`${join(ws.root, spec.source.oci.layout)}:latest`, `${reg.host}/acceptance/probe:1`);
  spec.source = { oci: { ref: `${reg.host}/acceptance/probe@${manifest}` } };
  writeFileSync(ws.specPath, JSON.stringify(spec));
  rmSync(join(ws.root, "layout"), { recursive: true }); // nothing local: the image comes from the registry
  const r = await runCli(["run", ws.specPath, "--store", ws.storeDir, "--runs", ws.runsDir, "--kit", TEST_KIT_DIR, "--plain-http", "--json"], {
    ...process.env,
    HOME: ws.root,
  });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.status, "passed");
  assert.equal(out.assertions.failed, 0);
});
