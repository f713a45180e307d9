/**
 * The raw closure holds what runs, not the layout's index: a workload lock
 * made from one layout verifies (the first thing replay does) against a
 * store filled from another layout of the same manifest whose index.json was
 * rewritten the way `umoci tag` and `skopeo copy` rewrite it (a ref.name
 * annotation, another entry beside it, another key order). Before, that
 * failed with STORE_MISSING at /raw/2 (the index). Controls: a store filled
 * from another image fails, and an old lock that pins the index is refused
 * by name.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { execFileSync, spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openVerifiedWorkload } from "../../src/workload/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";
import { assemble, helloImage, ociSpec, ociWorkspace, readLockJson, rewriteLock } from "./fixtures/workspace.ts";
import { file } from "./fixtures/tar-writer.ts";

const opts = { skip: GCC_SKIP };

/** A second workspace whose layout is `layout` and whose spec selects `manifest` (same spec text), with an empty store. */
function elsewhere(layout: string, manifest: string) {
  const d = mkdtempSync(join(tmpdir(), "cairn-elsewhere-"));
  cpSync(layout, join(d, "image"), { recursive: true });
  writeFileSync(join(d, "spec.json"), ociSpec(manifest));
  return { dir: d, specPath: join(d, "spec.json"), storeDir: join(d, "store"), lockPath: join(d, "spec.lock.json") };
}

test("a lock verifies against a store filled from a re-tagged layout of the same manifest", opts, async () => {
  const ws = ociWorkspace();
  await assemble(ws);
  const manifest = ws.image.manifestDigest;
  const other = elsewhere(join(ws.dir, "image"), manifest);
  const indexPath = join(other.dir, "image", "index.json");
  const index = JSON.parse(readFileSync(indexPath, "utf8")) as { manifests: Array<Record<string, unknown>> };
  const entry = index.manifests[0]!;
  // as `umoci tag v2` leaves it: the entry tagged, plus a second tagged copy; keys in another order
  index.manifests = [
    { ...entry, annotations: { "org.opencontainers.image.ref.name": "v1" } },
    {
      size: entry.size,
      digest: `sha256:${"0".repeat(64)}`,
      mediaType: entry.mediaType,
      platform: entry.platform,
      annotations: { "org.opencontainers.image.ref.name": "other" },
    },
  ];
  writeFileSync(indexPath, `${JSON.stringify({ manifests: index.manifests, schemaVersion: 2 }, null, 1)}\n`);
  await assemble(other);
  assert.notEqual(readFileSync(indexPath, "utf8"), readFileSync(join(ws.dir, "image", "index.json"), "utf8"));
  const w = await openVerifiedWorkload(ws.lockPath, other.storeDir);
  assert.equal(w.identities.workload, (readLockJson(ws) as { workload: string }).workload);

  // control: a store filled from another image does not hold this lock's closure
  const ws2 = ociWorkspace(helloImage({ layers: [{ entries: [...(helloImage().layers[0]!.entries ?? []), file("etc/extra", "x")] }] }));
  await assemble(ws2);
  await assertCodeAsync(() => openVerifiedWorkload(ws.lockPath, ws2.storeDir), "STORE_MISSING");
});

const SKOPEO_SKIP = needs(spawnSync("sh", ["-c", "command -v skopeo"]).status === 0 ? undefined : "skopeo is not installed");

test("a skopeo copy of the layout (its platform restored, as docs/oci.md requires) fills a store the lock verifies against", {
  ...opts,
  skip: opts.skip || SKOPEO_SKIP,
}, async () => {
  const ws = ociWorkspace();
  await assemble(ws);
  const copied = join(mkdtempSync(join(tmpdir(), "cairn-skopeo-")), "image");
  execFileSync("skopeo", ["copy", "--quiet", `oci:${join(ws.dir, "image")}`, `oci:${copied}:v1`]);
  const indexPath = join(copied, "index.json");
  const index = JSON.parse(readFileSync(indexPath, "utf8")) as { manifests: Array<Record<string, unknown>> };
  assert.equal(index.manifests[0]!.digest, ws.image.manifestDigest, "skopeo kept the manifest bytes");
  index.manifests[0]!.platform = { architecture: "amd64", os: "linux" };
  writeFileSync(indexPath, JSON.stringify(index));
  const other = elsewhere(copied, ws.image.manifestDigest);
  await assemble(other);
  await openVerifiedWorkload(ws.lockPath, other.storeDir);
});

test("a lock that pins the layout's index (written before this change) is refused by name", opts, async () => {
  const ws = ociWorkspace();
  await assemble(ws);
  rewriteLock(ws, (lock) => {
    const raw = lock.raw as Array<Record<string, unknown>>;
    raw.splice(1, 0, { role: "index", digest: `sha256:${"1".repeat(64)}`, size: 10 });
  });
  const e = await assertCodeAsync(() => openVerifiedWorkload(ws.lockPath, ws.storeDir), "WORKLOAD_MISMATCH");
  assert.equal(e.path, "/raw/1");
  // control: the lock as assembled verifies
  const fresh = ociWorkspace();
  await assemble(fresh);
  await openVerifiedWorkload(fresh.lockPath, fresh.storeDir);
});
