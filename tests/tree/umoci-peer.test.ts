/**
 * umoci as a real peer (issue 4, part 11): layouts written by umoci are
 * accepted, and for layouts both accept, cairn's tree equals what
 * `umoci raw unpack` writes (paths, types, modes, owners, contents, link
 * targets; mtimes are not compared: umoci sets directory mtimes after
 * writing children in an order of its own).
 */
import assert from "node:assert/strict";
import { chmodSync, chownSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { applyLayers } from "../../src/tree/index.ts";
import { readOciSource } from "../../src/oci/index.ts";
import { STRICT_POLICY, parsePolicy, type LayerPolicy } from "../../src/tree/layer-policy.ts";
import type { CanonicalTree } from "../../src/tree/entries.ts";
import { needs } from "../helpers/prerequisites.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { writeConformanceLayout } from "../workload/fixtures/conformance.ts";
import { MemorySink } from "./fixtures/memory-sink.ts";
import { addPlatform, isRoot, umociAvailable, umociBuild, umociRawUnpack, walkRootfs, type PeerRow } from "./fixtures/umoci.ts";

const skip = needs(umociAvailable() ? undefined : "umoci is not installed (scripts/setup-host.sh installs it)");
const tmp = (): string => mkdtempSync(join(tmpdir(), "cairn-umoci-"));

/** cairn's tree as peer rows; owners are compared only when umoci could set them (as root). */
function rows(tree: CanonicalTree, owners: boolean): PeerRow[] {
  return [...tree.values()].map(
    (e) => [e.path, e.type, e.mode, owners ? e.uid : 0, owners ? e.gid : 0, e.type === "file" ? e.sha256 : e.type === "symlink" ? e.target : ""] as const,
  );
}
const ownerless = (r: PeerRow[], owners: boolean): PeerRow[] => (owners ? r : r.map(([p, t, m, , , c]) => [p, t, m, 0, 0, c] as const));

async function cairnTree(layoutDir: string, manifest: string, staging: string, policy: LayerPolicy = STRICT_POLICY): Promise<CanonicalTree> {
  const src = await readOciSource({ layoutDir, manifestDigest: manifest, stagingDir: staging });
  return (await applyLayers({ layers: src.layers, policy, sink: new MemorySink() })).tree;
}

function compare(cairn: CanonicalTree, rootfs: string): void {
  const owners = isRoot();
  const peer = ownerless(walkRootfs(rootfs), owners);
  // umoci's rootfs directory itself gets its mode from the layer's "./" member, like cairn's "/".
  assert.deepEqual(rows(cairn, owners), peer);
}

describe("umoci peer", { skip }, () => {
  it("the conformance layout: cairn's tree equals umoci raw unpack", async () => {
    const d = tmp();
    const img = writeConformanceLayout(join(d, "layout"));
    umociRawUnpack(join(d, "layout"), "latest", join(d, "rootfs"));
    compare(await cairnTree(join(d, "layout"), img.manifestDigest, join(d, "staging")), join(d, "rootfs"));
  });

  it("a layout written by umoci (deletions, replacements, modes, owners, symlinks) is accepted and matches", async () => {
    const d = tmp();
    const layout = join(d, "layout");
    umociBuild(
      layout,
      "t",
      d,
      [
        (r) => {
          mkdirSync(join(r, "etc"), { recursive: true });
          writeFileSync(join(r, "etc", "config"), "one\n");
          mkdirSync(join(r, "opt", "app", "sub"), { recursive: true });
          writeFileSync(join(r, "opt", "app", "sub", "f"), "f");
          writeFileSync(join(r, "opt", "app", "old"), "old");
          mkdirSync(join(r, "bin"));
          writeFileSync(join(r, "bin", "tool"), "#!tool\n");
          chmodSync(join(r, "bin", "tool"), 0o750);
          symlinkSync("../bin/tool", join(r, "etc", "tool-link"));
          mkdirSync(join(r, "tmp"));
          chmodSync(join(r, "tmp"), 0o1777);
          mkdirSync(join(r, "gone", "deep"), { recursive: true });
          writeFileSync(join(r, "gone", "deep", "x"), "x");
          if (isRoot()) {
            mkdirSync(join(r, "home", "u"), { recursive: true });
            chownSync(join(r, "home", "u"), 1000, 1000);
            writeFileSync(join(r, "home", "u", "notes"), "n");
            chownSync(join(r, "home", "u", "notes"), 1000, 1001);
          }
        },
        (r) => {
          writeFileSync(join(r, "etc", "config"), "two\n");
          rmSync(join(r, "opt", "app", "old"));
          rmSync(join(r, "gone"), { recursive: true });
          rmSync(join(r, "opt", "app", "sub"), { recursive: true });
          writeFileSync(join(r, "opt", "app", "sub"), "now a file");
          chmodSync(join(r, "bin"), 0o711);
          rmSync(join(r, "etc", "tool-link"));
          writeFileSync(join(r, "etc", "tool-link"), "no longer a link");
        },
      ],
      ["--config.entrypoint", "/bin/tool", "--config.user", "1000:1000"],
    );
    const manifest = addPlatform(layout);
    umociRawUnpack(layout, "t", join(d, "rootfs"));
    const tree = await cairnTree(layout, manifest, join(d, "staging"));
    assert.equal(tree.has("/gone"), false);
    assert.equal(tree.get("/opt/app/sub")?.type, "file");
    compare(tree, join(d, "rootfs"));
  });

  it("umoci's own index.json (no platform) is refused; with the platform added it is accepted", async () => {
    const d = tmp();
    const layout = join(d, "layout");
    umociBuild(layout, "t", d, [(r) => writeFileSync(join(r, "hello"), "hi")]);
    const manifest = (JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as { manifests: { digest: string }[] }).manifests[0]!.digest;
    await assertCodeAsync(() => cairnTree(layout, manifest, join(d, "s1")), "OCI_PLATFORM");
    addPlatform(layout);
    const tree = await cairnTree(layout, manifest, join(d, "s2"));
    assert.equal(tree.get("/hello")?.type, "file");
  });

  it("umoci's hard links are refused strictly; under hardlinks: copy the tree equals umoci's (a copy per link)", async () => {
    const d = tmp();
    const layout = join(d, "layout");
    umociBuild(layout, "t", d, [
      (r) => {
        mkdirSync(join(r, "bin"));
        writeFileSync(join(r, "bin", "busybox"), "multi-call binary");
        chmodSync(join(r, "bin", "busybox"), 0o755);
        linkSync(join(r, "bin", "busybox"), join(r, "bin", "sh"));
        linkSync(join(r, "bin", "busybox"), join(r, "bin", "ls"));
      },
    ]);
    const manifest = addPlatform(layout);
    await assertCodeAsync(() => cairnTree(layout, manifest, join(d, "s1")), "TAR_HARDLINK");
    const tree = await cairnTree(layout, manifest, join(d, "s2"), parsePolicy({ hardlinks: "copy" }));
    umociRawUnpack(layout, "t", join(d, "rootfs"));
    compare(tree, join(d, "rootfs"));
    assert.equal(tree.get("/bin/sh")?.type, "file");
  });
});
