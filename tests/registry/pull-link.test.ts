// `cairn pull` writes each blob once (issue 34, item 3): the layout's blobs
// are hard links of the store's objects when both are on one file system,
// read-only for both names, and copies when they are not. A layout blob
// changed in place later (which changes the store's object through the
// shared inode) is refused where it is read, found by the store, and
// fetched again by the next pull instead of being used.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { readOciSource } from "../../src/oci/index.ts";
import { Store } from "../../src/store/index.ts";
import { pullToLayout } from "../../src/workload/index.ts";
import { needs } from "../helpers/prerequisites.ts";
import { assertStoreSound, countingFetch, tempDir, writeImage } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPush } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools());

/** The path of blob `digest` in the layout at `layout`. */
const blob = (layout: string, digest: string): string => join(layout, "blobs", "sha256", digest.slice("sha256:".length));
const sha = (path: string): string => `sha256:${createHash("sha256").update(readFileSync(path)).digest("hex")}`;

describe("pulled blobs are written once", { skip }, () => {
  let reg: TestRegistry;
  let work: string;
  before(async () => {
    work = tempDir("pull-link");
    reg = await TestRegistry.create(join(work, "registry"));
  });
  after(async () => {
    await reg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const remote = (extra: Record<string, unknown> = {}) => ({ plainHttp: true, env: { HOME: work }, cwd: work, ...extra });

  test("the layout's blobs are the store's objects (one inode, read-only), and cairn reads the layout", async () => {
    const img = writeImage(join(work, "src1"), "v1");
    await skopeoPush(`${img.dir}:v1`, `${reg.host}/link/one:v1`);
    const store = new Store(join(work, "store1"));
    const layout = join(work, "out1");
    const r = await pullToLayout(`${reg.host}/link/one:v1`, layout, store, remote());
    for (const d of [r.image.manifest, r.image.config, ...r.image.layers]) {
      const inLayout = statSync(blob(layout, d.digest));
      const inStore = statSync(store.pathOf("objects", d.digest));
      assert.equal(inLayout.ino, inStore.ino, `${d.digest}: one inode for the layout and the store`);
      assert.equal(inLayout.nlink, 2);
      assert.equal(inLayout.mode & 0o777, 0o444, "read-only for both names");
      assert.equal(sha(blob(layout, d.digest)), d.digest);
    }
    const src = await readOciSource({ layoutDir: layout, manifestDigest: r.image.manifest.digest, stagingDir: join(work, "stage1") });
    assert.deepEqual(
      src.layers.map((l) => l.digest),
      img.layers.map((l) => l.digest),
    );
    store.close();
  });

  test("a layout blob changed in place later: the layout is refused, the store finds it, and the next pull fetches it again", async () => {
    const img = writeImage(join(work, "src2"), "v2");
    await skopeoPush(`${img.dir}:v2`, `${reg.host}/link/two:v2`);
    const storeDir = join(work, "store2");
    const store = new Store(storeDir);
    const first = join(work, "out2a");
    const r = await pullToLayout(`${reg.host}/link/two:v2`, first, store, remote());
    const layer = r.image.layers[0]!;
    // control: before the change, a second pull makes no blob request and its layout reads
    const control = countingFetch();
    await pullToLayout(`${reg.host}/link/two:v2`, join(work, "out2control"), store, remote({ fetch: control.fetch }));
    assert.equal(control.requests.filter((q) => q.path.includes("/blobs/")).length, 0);

    // a writer of the layout's blob: it must make the file writable first (it is read-only), then writes the same size
    const victim = blob(first, layer.digest);
    chmodSync(victim, 0o644);
    const fd = openSync(victim, "r+");
    writeSync(fd, Buffer.alloc(16, 0x58), 0, 16, 0);
    closeSync(fd);
    assert.equal(statSync(victim).size, layer.size);
    assert.notEqual(sha(victim), layer.digest);

    await assert.rejects(
      readOciSource({ layoutDir: first, manifestDigest: r.image.manifest.digest, stagingDir: join(work, "stage2") }),
      (e: { code?: string }) => ["DIGEST_MISMATCH", "OCI_DIGEST_MISMATCH", "OCI_INVALID"].includes(e.code ?? ""),
    );
    assert.throws(() => store.read("objects", layer.digest, 1 << 20), { code: "STORE_CORRUPT" }, "the store re-hashes what it reads");

    const again = countingFetch();
    const second = join(work, "out2b");
    const lines: string[] = [];
    await pullToLayout(`${reg.host}/link/two:v2`, second, store, remote({ fetch: again.fetch }), { log: (l) => lines.push(l) });
    assert.deepEqual(
      again.requests.filter((q) => q.path.includes("/blobs/")).map((q) => q.path.slice(q.path.lastIndexOf("/") + 1)),
      [layer.digest],
      "exactly the changed object is fetched again",
    );
    assert.ok(
      lines.some((l) => l.includes(`stored ${layer.digest} does not match its digest`)),
      lines.join("\n"),
    );
    assert.equal(sha(blob(second, layer.digest)), layer.digest, "the new layout holds the right bytes");
    store.read("objects", layer.digest, 1 << 20); // repaired
    assertStoreSound(storeDir);
    assert.notEqual(statSync(blob(second, layer.digest)).ino, statSync(victim).ino, "the repair replaced the store's name, not the changed inode");
    store.close();
  });

  test("a layout on another file system (a tmpfs) gets checked copies, and cairn reads it", async (t) => {
    const shm = "/dev/shm";
    let other: string;
    try {
      other = mkdtempSync(join(shm, "cairn-pull-link-"));
    } catch {
      return t.skip("no writable /dev/shm");
    }
    try {
      if (statSync(other).dev === statSync(work).dev) return t.skip("/dev/shm is on the same file system as the temp directory");
      const img = writeImage(join(work, "src3"), "v3");
      await skopeoPush(`${img.dir}:v3`, `${reg.host}/link/three:v3`);
      const store = new Store(join(work, "store3"));
      const layout = join(other, "out3");
      const r = await pullToLayout(`${reg.host}/link/three:v3`, layout, store, remote());
      for (const d of [r.image.manifest, r.image.config, ...r.image.layers]) {
        const st = statSync(blob(layout, d.digest));
        assert.equal(st.nlink, 1, `${d.digest}: a copy`);
        assert.equal(st.mode & 0o777, 0o644);
        assert.equal(statSync(store.pathOf("objects", d.digest)).mode & 0o777, 0o600, "the store's object is left as published");
        assert.equal(sha(blob(layout, d.digest)), d.digest);
      }
      await readOciSource({ layoutDir: layout, manifestDigest: r.image.manifest.digest, stagingDir: join(work, "stage3") });
      store.close();
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
