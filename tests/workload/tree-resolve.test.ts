import { test } from "node:test";
import assert from "node:assert/strict";
import { sha256 } from "../../src/core/index.ts";
import { resolveInTree } from "../../src/workload/tree-resolve.ts";
import type { FsEntry } from "../../src/workload/tree.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";
import { dir, symlink } from "./fixtures/tar-writer.ts";
import { assemble, helloImage, ociWorkspace } from "./fixtures/workspace.ts";

const D = (path: string): FsEntry => ({ type: "dir", path, mode: 0o755, uid: 0, gid: 0, mtime: 0 });
const F = (path: string): FsEntry => ({ type: "file", path, mode: 0o755, uid: 0, gid: 0, mtime: 0, size: 1, sha256: sha256("x") });
const L = (path: string, target: string): FsEntry => ({ type: "symlink", path, mode: 0o777, uid: 0, gid: 0, mtime: 0, target });
const tree = new Map([D("/"), D("/usr"), D("/usr/bin"), F("/usr/bin/busybox"), L("/bin", "usr/bin"), L("/usr/bin/sh", "busybox"), L("/abs", "/usr/bin/sh"), L("/loop", "loop"), L("/up", "../../usr/bin/busybox"), L("/dangling", "nope")].map((e) => [e.path, e]));

test("resolution follows relative, absolute and chained symlinks inside the tree", () => {
  assert.equal(resolveInTree(tree, "/bin/sh")?.path, "/usr/bin/busybox");
  assert.equal(resolveInTree(tree, "/abs")?.path, "/usr/bin/busybox");
  assert.equal(resolveInTree(tree, "/up")?.path, "/usr/bin/busybox", "'..' above the root stays at the root");
  assert.equal(resolveInTree(tree, "/usr/bin/./busybox")?.path, "/usr/bin/busybox");
  assert.equal(resolveInTree(tree, "/loop"), undefined, "a symlink loop does not resolve");
  assert.equal(resolveInTree(tree, "/dangling"), undefined);
  assert.equal(resolveInTree(tree, "/usr/bin/busybox/x"), undefined, "a file is not a directory");
});

test("an OCI program that is missing, not executable, or a directory is refused at assembly", { skip: GCC_SKIP }, async () => {
  const base = helloImage();
  const withEntry = (Entrypoint: string[]) => helloImage({ config: { ...base.config, Entrypoint } });
  await assertCodeAsync(() => assemble(ociWorkspace(withEntry(["/app/missing"]))), "LAUNCH_INVALID");
  await assertCodeAsync(() => assemble(ociWorkspace(withEntry(["/etc/motd"]))), "LAUNCH_INVALID");
  await assertCodeAsync(() => assemble(ociWorkspace(withEntry(["/app"]))), "LAUNCH_INVALID");
  // control: a program reached through an in-image symlink is accepted
  const linked = helloImage({ layers: [...base.layers, { entries: [dir("bin/"), symlink("bin/hello", "../app/hello")] }], config: { ...base.config, Entrypoint: ["/bin/hello"] } });
  assert.equal((await assemble(ociWorkspace(linked))).kind, "oci");
});
