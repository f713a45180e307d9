// A workload spec naming a registry image by digest (issue 11, item 2):
// `oci: {ref: HOST/REPO@sha256:…}` assembles through the registry into the
// store, with the same identities as the same image read from a layout (the
// ref is a locator, like `layout`); a tag is refused before any request; the
// lock then verifies with the registry gone.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { tempDir, writeImage } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPush } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools());

describe("workload specs naming a registry digest", { skip }, () => {
  let reg: TestRegistry;
  let work: string;
  let img: ReturnType<typeof writeImage>;
  before(async () => {
    work = tempDir("wref");
    reg = await TestRegistry.create(join(work, "registry"));
    img = writeImage(join(work, "src"), "w1");
    await skopeoPush(`${img.dir}:w1`, `${reg.host}/w/app:w1`);
  });
  after(async () => {
    await reg?.stop();
    rmSync(work, { recursive: true, force: true });
  });
  const env = () => ({ HOME: work, CAIRN_HOME: join(work, "home") });

  test("a ref spec assembles to the identities of the same image read from its layout, and verifies offline", async () => {
    const refSpec = join(work, "ref.json");
    writeFileSync(refSpec, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { ref: `${reg.host}/w/app@${img.manifestDigest}` } } }));
    const layoutSpec = join(work, "layout.json");
    writeFileSync(layoutSpec, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: img.dir, manifest: img.manifestDigest } } }));
    const a = await runCli(["workload", "assemble", refSpec, "--plain-http", "--json"], env());
    assert.equal(a.code, 0, a.stdout + a.stderr);
    const b = await runCli(["workload", "assemble", layoutSpec, "--json"], env());
    assert.equal(b.code, 0, b.stdout + b.stderr);
    assert.deepEqual(JSON.parse(a.stdout).identities, JSON.parse(b.stdout).identities);
    assert.equal(JSON.parse(a.stdout).workload, JSON.parse(b.stdout).workload);
    await reg.kill();
    try {
      const v = await runCli(["workload", "verify", JSON.parse(a.stdout).lock, "--json"], env());
      assert.equal(v.code, 0, v.stdout + v.stderr);
      // assembling again needs nothing from the registry: the store holds the digest's content
      const again = await runCli(["workload", "assemble", refSpec, "--plain-http", "--json"], env());
      assert.equal(again.code, 0, again.stdout + again.stderr);
    } finally {
      await reg.start();
    }
  });

  test("a tag in a spec is refused with the way to pin it, before any request", async () => {
    const spec = join(work, "tag.json");
    writeFileSync(spec, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { ref: `${reg.host}/w/app:w1` } } }));
    await reg.kill();
    try {
      const r = await runCli(["workload", "assemble", spec, "--plain-http", "--json"], env());
      assert.equal(r.code, 1);
      const err = JSON.parse(r.stdout).error;
      assert.equal(err.code, "REFERENCE_INVALID");
      assert.equal(err.path, "/source/oci/ref");
      assert.match(JSON.stringify(err), /cairn pull/);
    } finally {
      await reg.start();
    }
  });

  test("a spec whose manifest disagrees with what its ref selects is refused", async () => {
    const spec = join(work, "other.json");
    const wrong = `sha256:${"0".repeat(64)}`;
    writeFileSync(spec, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { ref: `${reg.host}/w/app@${img.manifestDigest}`, manifest: wrong } } }));
    const r = await runCli(["workload", "assemble", spec, "--plain-http", "--json"], env());
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout).error.code, "OCI_SELECTION");
  });
});
