// Strata layer blobs go through the same strict tar gate and tree rules as OCI
// layers. Each case is a hand-made blob (written here, not by `layer build`)
// that cairn's own writer would never produce; each is refused by `layer fold`
// (foldLayers) and by lock verify's content check (checkLayerContents), and
// each has a control: the same shape made valid passes both.
import { test } from "node:test";
import assert from "node:assert/strict";
import { sha256, type ErrorCode, type Sha256Digest } from "../../src/core/index.ts";
import {
  LocalRegistry,
  buildLayerBlob,
  checkLayerContents,
  foldLayers,
  gzipReproducible,
  manifestFor,
  type LayerBlob,
  type LayerSpec,
} from "../../src/strata/index.ts";
import type { TarEntry } from "../../src/tree/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { writeTar as writeTestTar, type TarMember } from "../workload/fixtures/tar-writer.ts";
import { exampleRegistry } from "./fixtures.ts";

const spec = (name: string): LayerSpec => ({
  name,
  version: "1.0",
  arch: "noarch",
  abi: "none",
  install_layout: "rootfs",
  user_selectable: true,
  builder: "test",
  provides: [],
  requires: [],
});
const idOf = (name: string): string => `${name}-1.0-none-noarch`;
const file = (path: string, data = "x"): TarEntry => ({ type: "file", path, mode: 0o644, data: Buffer.from(data) });
const dir = (path: string): TarEntry => ({ type: "dir", path, mode: 0o755 });
const link = (path: string, target: string): TarEntry => ({ type: "symlink", path, target });

/** A blob from raw tar members (the test's own tar writer: any type, no parent added). */
function rawBlob(members: readonly TarMember[]): LayerBlob {
  const tar = writeTestTar(members);
  const blob = gzipReproducible(tar);
  return {
    blob,
    sha256: sha256(blob),
    size: blob.length,
    diff_id: sha256(tar),
    content_manifest: new Map<string, Sha256Digest>(),
    symlinks: new Map<string, string>(),
    whiteouts: [],
  };
}

function setup() {
  const ex = exampleRegistry();
  const reg = LocalRegistry.open(ex.registry);
  const trust = { keys: [ex.registryKey], allowUnsignedOffline: false };
  const publish = (name: string, blob: LayerBlob) => reg.publishLayer(blob.blob, manifestFor(spec(name), blob), [ex.registryKey]).value;
  const fold = (names: readonly string[]) => foldLayers(reg, names.map(idOf), spec("folded"), trust);
  const contents = (name: string) => {
    const m = reg.readLayer(idOf(name)).value;
    return checkLayerContents(reg.readBlob(m.sha256, m.size), m, `/layers/${name}`);
  };
  return { publish, fold, contents };
}

/** Refused by fold (after `base`) and by the content check; the control passes both. */
async function refusedWithControl(bad: LayerBlob, good: LayerBlob, code: ErrorCode): Promise<void> {
  const { publish, fold, contents } = setup();
  publish("base", buildLayerBlob([dir("etc"), file("etc/motd")]));
  publish("bad", bad);
  publish("good", good);
  await assertCodeAsync(() => fold(["base", "bad"]), code);
  await assertCodeAsync(() => contents("bad"), code);
  // control
  assert.ok((await fold(["base", "good"])).manifest.content_manifest.size >= 1);
  await contents("good");
}

test("fold: a later source writing a/x under an earlier source's symlink a is refused (TAR_THROUGH_SYMLINK)", async () => {
  const { publish, fold, contents } = setup();
  publish("links", buildLayerBlob([dir("b"), link("a", "b")]));
  publish("under", buildLayerBlob([file("a/x")])); // hand-made: names no parent, writes through the symlink
  publish("beside", buildLayerBlob([dir("b"), file("b/x")]));
  await assertCodeAsync(() => fold(["links", "under"]), "TAR_THROUGH_SYMLINK");
  // control: the same file written to the real directory folds, and the result holds it
  const ok = await fold(["links", "beside"]);
  assert.equal(ok.manifest.content_manifest.get("/b/x"), sha256(Buffer.from("x")));
  assert.equal(ok.manifest.symlinks.get("/a"), "b");
  // Read alone, the hand-made blob lacks its parent directory.
  await assertCodeAsync(() => contents("under"), "TAR_INVALID");
  await contents("beside");
});

test("a member beneath a symlink inside one blob is refused (TAR_THROUGH_SYMLINK)", async () => {
  await refusedWithControl(buildLayerBlob([link("a", "/etc"), file("a/x")]), buildLayerBlob([dir("a"), file("a/x")]), "TAR_THROUGH_SYMLINK");
});

test("a member whose parent directory the blob does not name is refused (TAR_INVALID)", async () => {
  await refusedWithControl(buildLayerBlob([file("d/x")]), buildLayerBlob([dir("d"), file("d/x")]), "TAR_INVALID");
});

test("a device node, a FIFO and a hard link in a blob are refused", async () => {
  const good = buildLayerBlob([dir("dev"), file("dev/null", "")]);
  await refusedWithControl(
    rawBlob([
      { name: "dev/", type: "dir", mode: 0o755 },
      { name: "dev/null", type: "char", mode: 0o666, devmajor: 1, devminor: 3 },
    ]),
    good,
    "TAR_UNSUPPORTED_TYPE",
  );
  await refusedWithControl(
    rawBlob([
      { name: "dev/", type: "dir", mode: 0o755 },
      { name: "dev/pipe", type: "fifo", mode: 0o644 },
    ]),
    good,
    "TAR_UNSUPPORTED_TYPE",
  );
  await refusedWithControl(
    rawBlob([
      { name: "dev/", type: "dir", mode: 0o755 },
      { name: "dev/null", type: "file", mode: 0o644, data: "" },
      { name: "dev/again", type: "hardlink", linkname: "dev/null", mode: 0o644 },
    ]),
    good,
    "TAR_HARDLINK",
  );
});

test("fold keeps its rule: a directory never replaces a file or the reverse (RESOLVE_CONFLICT)", async () => {
  const { publish, fold } = setup();
  publish("as-file", buildLayerBlob([file("p")]));
  publish("as-dir", buildLayerBlob([dir("p"), file("p/x")]));
  publish("as-file2", buildLayerBlob([file("p", "y")]));
  await assertCodeAsync(() => fold(["as-file", "as-dir"]), "RESOLVE_CONFLICT");
  await assertCodeAsync(() => fold(["as-dir", "as-file2"]), "RESOLVE_CONFLICT");
  // control: a file replaces a file, the later one wins
  const ok = await fold(["as-file", "as-file2"]);
  assert.equal(ok.manifest.content_manifest.get("/p"), sha256(Buffer.from("y")));
});

test("fold output for valid sources is byte-identical to building the merged entries directly", async () => {
  const { publish, fold } = setup();
  publish("one", buildLayerBlob([dir("usr"), dir("usr/bin"), file("usr/bin/a", "1"), link("usr/bin/l", "a")]));
  publish("two", buildLayerBlob([dir("usr"), dir("usr/bin"), file("usr/bin/a", "2"), file("usr/bin/b", "3")]));
  const folded = await fold(["one", "two"]);
  const direct = buildLayerBlob([dir("usr"), dir("usr/bin"), file("usr/bin/a", "2"), link("usr/bin/l", "a"), file("usr/bin/b", "3")]);
  assert.ok(folded.blob.blob.equals(direct.blob));
});
