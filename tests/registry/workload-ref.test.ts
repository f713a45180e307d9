// A workload spec naming a registry image by digest (issue 11, item 2):
// `oci: {ref: HOST/REPO@sha256:…}` assembles through the registry into the
// store, with the same identities as the same image read from a layout (the
// ref is a locator, like `layout`); a tag is refused before any request; the
// lock then verifies with the registry gone. A ref spec's `launch` is parsed,
// validated and applied exactly as a layout spec's (issue 31 case 10: it was
// ignored and never read, so the image's own Cmd ran).
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
    // an absolute layout path: the spec may read it only because the user names a directory holding it
    writeFileSync(layoutSpec, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: img.dir, manifest: img.manifestDigest } } }));
    const a = await runCli(["workload", "assemble", refSpec, "--plain-http", "--json"], env());
    assert.equal(a.code, 0, a.stdout + a.stderr);
    const refused = await runCli(["workload", "assemble", layoutSpec, "--json"], env());
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.equal(JSON.parse(refused.stdout).error.code, "PATH_UNSAFE");
    assert.equal(JSON.parse(refused.stdout).error.path, "/source/oci/layout");
    const b = await runCli(["workload", "assemble", layoutSpec, "--inputs-root", work, "--json"], env());
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

  test("a ref spec's launch is validated and applied exactly as a layout spec's (issue 31 case 10)", async () => {
    const spec = (name: string, oci: object) => {
      const p = join(work, `${name}.json`);
      writeFileSync(p, JSON.stringify({ schema: "cairn.workload/1", source: { oci } }));
      return p;
    };
    const ref = { ref: `${reg.host}/w/app@${img.manifestDigest}` };
    const layout = { layout: "./src", manifest: img.manifestDigest }; // img.dir, beside the specs
    const assemble = async (p: string) => {
      const r = await runCli(["workload", "assemble", p, "--plain-http", "--json"], env());
      return { code: r.code, out: JSON.parse(r.stdout), text: r.stdout + r.stderr };
    };
    const launch = { args: ["--flag", "x"], env: { B: "2" }, workdir: "/etc", user: "1001:1002" };
    const a = await assemble(spec("ref-launch", { ...ref, launch }));
    assert.equal(a.code, 0, a.text);
    const shown = await runCli(["workload", "show", a.out.lock, "--tree", "--json"], env());
    assert.equal(shown.code, 0, shown.stdout + shown.stderr);
    const l = JSON.parse(shown.stdout).launch;
    assert.deepEqual([l.argv, l.workdir, l.uid, l.gid], [["/app", "--flag", "x"], "/etc", 1001, 1002], "the spec's launch, not the image's Cmd");
    assert.ok(l.env_names.includes("B") && l.env_names.includes("A"), "env merged over the image's by name");
    // one code path: the same launch over the same image from a layout gives the same identities
    const b = await assemble(spec("layout-launch", { ...layout, launch }));
    assert.equal(b.code, 0, b.text);
    assert.deepEqual(a.out.identities, b.out.identities);
    const plain = await assemble(spec("ref-plain", ref));
    assert.notEqual(plain.out.identities.launch, a.out.identities.launch, "control: without launch the image's own");
    // refusals: the same code and path for either form
    for (const [name, bad] of [
      ["unknown", { bogus: 1, user: "0:0" }],
      ["root", { user: "0:0" }],
      ["not-object", "run"],
      ["args-type", { args: "x" }],
    ] as const) {
      const r = await assemble(spec(`ref-${name}`, { ...ref, launch: bad }));
      const y = await assemble(spec(`layout-${name}`, { ...layout, launch: bad }));
      assert.equal(r.code, 1, `${name}: ${r.text}`);
      assert.deepEqual([r.out.error.code, r.out.error.path], [y.out.error.code, y.out.error.path], name);
    }
  });
});
