// `oci-archive` tarballs (issue 11, item 2): an archive written by skopeo
// imports into a layout cairn accepts, with no network; archives holding a
// link, a blob that does not match its name, a foreign name or lacking a
// blob are refused, and nothing unverified is stored.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { readOciSource } from "../../src/oci/index.ts";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { file, symlink, writeTar, type TarItem } from "../workload/fixtures/tar-writer.ts";
import { assertStoreSound, tempDir, writeImage } from "./fixtures/images.ts";
import { missingRegistryTools } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools());
const run = promisify(execFile);

describe("oci-archive tarballs", { skip }, () => {
  let work: string;
  let img: ReturnType<typeof writeImage>;
  let members: TarItem[];
  before(async () => {
    work = tempDir("archive");
    img = writeImage(join(work, "src"), "a1");
    // the members of a layout, for archives written by code
    const blob = (d: string) => file(`blobs/sha256/${d.slice(7)}`, readFileSync(join(img.dir, "blobs", "sha256", d.slice(7))));
    members = [
      file("oci-layout", readFileSync(join(img.dir, "oci-layout"))),
      file("index.json", readFileSync(join(img.dir, "index.json"))),
      blob(img.manifestDigest),
      blob(img.configDigest),
      ...img.layers.map((l) => blob(l.digest)),
    ];
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  const pull = async (archive: string, name: string) => {
    const out = join(work, `out-${name}`);
    const r = await runCli(["pull", `oci-archive:${archive}`, "--oci", out, "--store", join(work, `store-${name}`), "--json"], { HOME: work });
    return { r, out, store: join(work, `store-${name}`) };
  };

  test("an archive written by skopeo imports into a layout cairn reads, with the same manifest digest", async () => {
    const archive = join(work, "skopeo.tar");
    await run("skopeo", ["copy", "--quiet", "--preserve-digests", `oci:${img.dir}:a1`, `oci-archive:${archive}`]);
    const { r, out } = await pull(archive, "skopeo");
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(JSON.parse(r.stdout).manifest.digest, img.manifestDigest);
    const src = await readOciSource({ layoutDir: out, manifestDigest: img.manifestDigest, stagingDir: join(work, "stage") });
    assert.equal(src.layers.length, 2);
  });

  const cases: { id: string; code: string; items: () => TarItem[] }[] = [
    { id: "a symlink member", code: "OCI_INVALID", items: () => [...members, symlink("blobs/sha256/evil", "/etc/passwd")] },
    { id: "a foreign name", code: "OCI_INVALID", items: () => [...members, file("../escape", "x")] },
    {
      id: "a blob that does not match its name",
      code: "DIGEST_MISMATCH",
      items: () => members.map((m, i) => (i === members.length - 1 ? { ...(m as ReturnType<typeof file>), data: Buffer.from("not the layer") } : m)),
    },
    { id: "a missing layer", code: "OCI_MISSING_BLOB", items: () => members.slice(0, -1) },
  ];
  for (const c of cases) {
    test(`refused: ${c.id} (${c.code}); the code-written control is accepted`, async () => {
      const name = c.id.replaceAll(" ", "-");
      const archive = join(work, `${name}.tar`);
      writeFileSync(archive, writeTar(c.items()));
      const { r, out, store } = await pull(archive, name);
      assert.equal(r.code, 1, r.stdout);
      assert.equal(JSON.parse(r.stdout).error.code, c.code);
      assert.ok(!existsSync(out));
      const stored = assertStoreSound(store);
      if (c.code === "DIGEST_MISMATCH") assert.ok(!stored.includes(img.layers[1]!.digest));
      assert.deepEqual(
        readdirSync(work).filter((n) => n.startsWith(".")),
        [],
      );
    });
  }

  // issue 31, case 6: each of these was INTERNAL; now a typed error naming the path, and nothing written
  const at = (name: string, write: (path: string) => void): string => {
    write(join(work, name));
    return join(work, name);
  };
  const notArchives: { id: string; code: string; make: () => string }[] = [
    { id: "a path where nothing is", code: "IO_ERROR", make: () => join(work, "nonexistent.tar") },
    {
      id: "a file that is not a tar",
      code: "TAR_INVALID",
      make: () => at("text.tar", (p) => writeFileSync(p, "hello, not a tar\n".repeat(64))),
    },
    {
      id: "a gzip-compressed archive",
      code: "TAR_INVALID",
      make: () => at("gz.tar", (p) => writeFileSync(p, gzipSync(writeTar(members)))),
    },
    {
      id: "a truncated archive",
      code: "TAR_INVALID",
      make: () => at("cut.tar", (p) => writeFileSync(p, writeTar(members).subarray(0, 700))),
    },
    { id: "a directory", code: "SOURCE_NOT_REGULAR", make: () => at("adir.tar", (p) => mkdirSync(p)) },
    { id: "a device", code: "SOURCE_NOT_REGULAR", make: () => "/dev/null" },
    {
      id: "a symlink to an archive",
      code: "SOURCE_NOT_REGULAR",
      make: () =>
        at("link.tar", (p) => {
          writeFileSync(join(work, "real.tar"), writeTar(members));
          symlinkSync("real.tar", p);
        }),
    },
  ];
  for (const c of notArchives) {
    test(`not an archive: ${c.id} is ${c.code} naming the path`, async () => {
      const archive = c.make();
      const { r, out } = await pull(archive, c.id.replaceAll(" ", "-"));
      assert.equal(r.code, 1, r.stdout);
      const error = JSON.parse(r.stdout).error;
      assert.equal(error.code, c.code, error.message);
      assert.equal(error.path, archive);
      assert.ok(!existsSync(out));
    });
  }

  test("control: the same members written by code are accepted", async () => {
    const archive = join(work, "control.tar");
    writeFileSync(archive, writeTar(members));
    const { r } = await pull(archive, "control");
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });
});
