// `cairn layer capture --source lmod` (issue 32, item 6): an Lmod tree's
// module and the software it points to become a layer carrying the
// modulefile, rewritten to where the layer mounts the software; Debian's Lmod
// loads it from the layer's module tree, in a private mount namespace where
// the layer's /opt/NAME/VERSION is mounted at /opt/NAME/VERSION (nothing on
// the host's /opt changes), and the software runs from there. A Tcl module is
// captured without a modulefile (has_modulefile false). Ambiguous or missing
// software roots are refused, each next to a passing control.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { captureLayer, type LayerSpec } from "../../src/strata/index.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { lmodTree } from "./capture-fixtures.ts";
import { tempDir } from "./fixtures.ts";

const LMOD_INIT = "/usr/share/lmod/lmod/init/bash";
const unshareWorks = spawnSync("unshare", ["--mount", "--propagation", "private", "true"]).status === 0;
const skip = !existsSync(LMOD_INIT)
  ? "Lmod missing (Debian package lmod: apt-get install -y lmod)"
  : !unshareWorks
    ? "a private mount namespace (unshare --mount, as root) is not available here"
    : false;

const SPEC: LayerSpec = {
  name: "hello",
  version: "1.0",
  arch: "noarch",
  abi: "none",
  install_layout: "prefix",
  user_selectable: true,
  provides: [],
  requires: [],
  builder: "cairn test",
};

const out = () => join(tempDir("cairn-lmod-out-"), "layer.tar.gz");

async function captureCli(tree: string, extra: string[] = []) {
  const d = tempDir("cairn-lmod-reg-");
  assert.equal((await runCli(["keygen", "--out", join(d, "k")])).code, 0);
  const reg = join(d, "reg");
  const r = await runCli([
    "layer",
    "capture",
    tree,
    "--source",
    "lmod",
    "--name",
    "hello",
    "--version",
    "1.0",
    "--registry",
    reg,
    "--init-registry",
    "--key",
    join(d, "k.key"),
    "--json",
    ...extra,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout) as { id: string; sha256: string; capture: { original_prefix: string; normalized: boolean; rewritten: string[] } };
  const doc = JSON.parse(readFileSync(join(reg, "layers", `${j.id}.json`), "utf8")) as Record<string, unknown>;
  const root = tempDir("cairn-lmod-unpacked-");
  execFileSync("tar", ["-xzf", join(reg, "blobs", "sha256", j.sha256.slice(7)), "-C", root]);
  return { j, doc, root };
}

test("a Lua module is captured with its software; Lmod loads the layer's modulefile and the software runs from /opt/NAME/VERSION", { skip }, async () => {
  const t = lmodTree("lua");
  const { j, doc, root } = await captureCli(t.tree);
  assert.equal(j.capture.original_prefix, t.root);
  assert.equal(doc.capture_source, "lmod");
  assert.equal(doc.original_prefix, t.root);
  assert.equal(doc.normalized, true);
  assert.equal(doc.has_modulefile, true);
  assert.deepEqual(j.capture.rewritten, ["/opt/hello/1.0/bin/hello", "/opt/hello/1.0/share/where", "/usr/share/modulefiles/hello/1.0.lua"]);
  const mf = readFileSync(join(root, "usr/share/modulefiles/hello/1.0.lua"), "utf8");
  assert.match(mf, /local root = "\/opt\/hello\/1\.0"/);
  assert.ok(!mf.includes(t.tree), "the modulefile no longer names the tree it was captured from");
  // Only the software root is in the layer, not the rest of the tree.
  assert.ok(!existsSync(join(root, "opt/hello/1.0/modulefiles")));
  // Lmod on the host, in a private mount namespace: /opt is a fresh tmpfs holding only the layer's software at its mount path.
  const script = [
    "set -e",
    'mount -t tmpfs cairn-test /opt && mkdir -p /opt/hello/1.0 && mount --bind "$1/opt/hello/1.0" /opt/hello/1.0',
    `source ${LMOD_INIT}`,
    'module use "$1/usr/share/modulefiles"',
    "module load hello/1.0",
    "command -v hello",
    "hello",
  ].join("\n");
  const r = spawnSync("unshare", ["--mount", "--propagation", "private", "bash", "--noprofile", "--norc", "-c", script, "lmod", root], {
    encoding: "utf8",
    env: { PATH: "/usr/bin:/bin:/usr/sbin:/sbin", HOME: tempDir("cairn-lmod-home-") },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split("\n"), ["/opt/hello/1.0/bin/hello", "hello from /opt/hello/1.0, data in /opt/hello/1.0/share"]);
  // Control: the same script without `module load` finds no hello (Lmod did the work).
  const c = spawnSync(
    "unshare",
    ["--mount", "--propagation", "private", "bash", "--noprofile", "--norc", "-c", script.replace("module load hello/1.0", "true"), "lmod", root],
    { encoding: "utf8", env: { PATH: "/usr/bin:/bin:/usr/sbin:/sbin", HOME: tempDir("cairn-lmod-home-") } },
  );
  assert.notEqual(c.status, 0);
});

test("a Tcl module: the software is captured, the modulefile is not carried (has_modulefile false), and the report says so", { skip }, async () => {
  const t = lmodTree("tcl");
  const { j, doc, root } = await captureCli(t.tree);
  assert.equal(doc.has_modulefile, undefined, "false is omitted as Go's omitempty does");
  assert.equal(doc.capture_source, "lmod");
  assert.ok(!existsSync(join(root, "usr/share/modulefiles")));
  assert.deepEqual((j as unknown as { capture: { modulefile: unknown } }).capture.modulefile, { path: t.modulefile, kind: "tcl", carried: false });
  // With --generate-modulefile the layer carries one made from its directories.
  const g = await captureCli(t.tree, ["--generate-modulefile"]);
  assert.equal(g.doc.has_modulefile, true);
  assert.match(
    readFileSync(join(g.root, "usr/share/modulefiles/hello/1.0.lua"), "utf8"),
    /local root = "\/opt\/hello\/1\.0"\nprepend_path\("PATH", pathJoin\(root, "bin"\)\)/,
  );
});

test("lmod refusals: no modulefile, no or two software roots, a root outside the tree; controls: --prefix, --modulepath", async () => {
  const t = lmodTree("lua");
  await assertCodeAsync(() => captureLayer(t.tree, { ...SPEC, version: "2.0" }, { source: "lmod" }, out()), "CAPTURE_REFUSED");
  await assertCodeAsync(() => captureLayer(t.tree, SPEC, { source: "lmod", modulepath: "modules" }, out()), "CAPTURE_REFUSED");
  await assertCodeAsync(() => captureLayer(t.tree, SPEC, { source: "lmod", modulepath: "../x" }, out()), "USAGE", "--modulepath");
  const none = lmodTree("lua", () => 'prepend_path("PATH", "/usr/local/bin")\n');
  await assertCodeAsync(() => captureLayer(none.tree, SPEC, { source: "lmod" }, out()), "CAPTURE_REFUSED", none.modulefile);
  const two = lmodTree("lua", (root) => `local a = "${root}"\nlocal b = "/elsewhere/hello/1.0"\n`);
  await assertCodeAsync(() => captureLayer(two.tree, SPEC, { source: "lmod" }, out()), "CAPTURE_REFUSED", two.modulefile);
  const ok = await captureLayer(two.tree, SPEC, { source: "lmod", unsafePrefix: two.root }, out());
  assert.equal(ok.report.original_prefix, two.root);
  assert.equal(ok.manifest.modulefile, "/usr/share/modulefiles/hello/1.0.lua");
  const outside = lmodTree("lua", () => 'local root = "/usr/share/hello/1.0"\n');
  await assertCodeAsync(() => captureLayer(outside.tree, SPEC, { source: "lmod" }, out()), "CAPTURE_REFUSED", outside.modulefile);
  // Control: the plain tree captures, and rootfs layout keeps the root (nothing rewritten, modulefile unchanged).
  const r = await captureLayer(t.tree, { ...SPEC, install_layout: "rootfs" }, { source: "lmod" }, out());
  assert.equal(r.report.normalized, false);
  assert.ok(r.manifest.content_manifest.has(`${t.root}/bin/hello`));
});

test("second pass: a modulefile or software root reached through a symlink out of the tree is refused, never read (control: the same tree without the link)", async () => {
  const t = lmodTree("lua");
  const elsewhere = lmodTree("lua");
  // The tree's module path is a symlink to another tree's: the modulefile would be read from outside.
  rmSync(join(t.tree, "modulefiles"), { recursive: true });
  symlinkSync(join(elsewhere.tree, "modulefiles"), join(t.tree, "modulefiles"));
  await assertCodeAsync(() => captureLayer(t.tree, SPEC, { source: "lmod", unsafePrefix: t.root }, out()), "CAPTURE_REFUSED");
  // The software directory is a symlink out of the tree: its root names a path inside, the bytes are elsewhere.
  const u = lmodTree("lua");
  rmSync(join(u.tree, "software"), { recursive: true });
  symlinkSync(join(elsewhere.tree, "software"), join(u.tree, "software"));
  await assertCodeAsync(() => captureLayer(u.tree, SPEC, { source: "lmod" }, out()), "CAPTURE_REFUSED");
  await captureLayer(elsewhere.tree, SPEC, { source: "lmod" }, out());
});
