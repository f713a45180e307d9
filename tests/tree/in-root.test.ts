import { test } from "node:test";
import assert from "node:assert/strict";
import { sha256 } from "../../src/core/index.ts";
import { MAX_SYMLINK_HOPS, resolveInTree } from "../../src/tree/in-root.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { dir, symlink } from "../workload/fixtures/tar-writer.ts";
import { assemble, helloImage, ociWorkspace } from "../workload/fixtures/workspace.ts";

const D = (path: string): FsEntry => ({ type: "dir", path, mode: 0o755, uid: 0, gid: 0, mtime: 0 });
const F = (path: string): FsEntry => ({ type: "file", path, mode: 0o755, uid: 0, gid: 0, mtime: 0, size: 1, sha256: sha256("x") });
const L = (path: string, target: string): FsEntry => ({ type: "symlink", path, mode: 0o777, uid: 0, gid: 0, mtime: 0, target });
const tree = new Map(
  [
    D("/"),
    D("/usr"),
    D("/usr/bin"),
    F("/usr/bin/busybox"),
    L("/bin", "usr/bin"),
    L("/usr/bin/sh", "busybox"),
    L("/abs", "/usr/bin/sh"),
    L("/loop", "loop"),
    L("/up", "../../usr/bin/busybox"),
    L("/dangling", "nope"),
  ].map((e) => [e.path, e]),
);

test("resolution follows relative, absolute and chained symlinks inside the tree", async () => {
  assert.equal((await resolveInTree(tree, "/bin/sh"))?.path, "/usr/bin/busybox");
  assert.equal((await resolveInTree(tree, "/abs"))?.path, "/usr/bin/busybox");
  assert.equal((await resolveInTree(tree, "/up"))?.path, "/usr/bin/busybox", "'..' above the root stays at the root");
  assert.equal((await resolveInTree(tree, "/usr/bin/./busybox"))?.path, "/usr/bin/busybox");
  assert.equal(await resolveInTree(tree, "/dangling"), undefined);
  assert.equal(await resolveInTree(tree, "/usr/bin/busybox/x"), undefined, "a file is not a directory");
});

test("a symlink loop is LIMIT_EXCEEDED naming tree.max_symlink_hops, distinct from not found", async () => {
  await assertCodeAsync(() => resolveInTree(tree, "/loop"), "LIMIT_EXCEEDED");
  await assert.rejects(resolveInTree(tree, "/loop"), /tree\.max_symlink_hops/);
  // control: a chain of exactly MAX_SYMLINK_HOPS links resolves; one more is refused
  const chain = (n: number): Map<string, FsEntry> => {
    const entries: FsEntry[] = [D("/"), F("/end")];
    for (let i = 0; i < n; i++) entries.push(L(`/l${i}`, i === n - 1 ? "/end" : `/l${i + 1}`));
    return new Map(entries.map((e) => [e.path, e]));
  };
  assert.equal((await resolveInTree(chain(MAX_SYMLINK_HOPS), "/l0"))?.path, "/end");
  await assertCodeAsync(() => resolveInTree(chain(MAX_SYMLINK_HOPS + 1), "/l0"), "LIMIT_EXCEEDED");
});

test("an OCI program that is missing, not executable, or a directory is refused at assembly", { skip: GCC_SKIP }, async () => {
  const base = helloImage();
  const withEntry = (Entrypoint: string[]) => helloImage({ config: { ...base.config, Entrypoint } });
  await assertCodeAsync(() => assemble(ociWorkspace(withEntry(["/app/missing"]))), "LAUNCH_INVALID");
  await assertCodeAsync(() => assemble(ociWorkspace(withEntry(["/etc/motd"]))), "LAUNCH_INVALID");
  await assertCodeAsync(() => assemble(ociWorkspace(withEntry(["/app"]))), "LAUNCH_INVALID");
  // a program behind a symlink loop stays a launch refusal (the resolver's LIMIT_EXCEEDED is its cause)
  const looped = helloImage({
    layers: [...base.layers, { entries: [dir("bin/"), symlink("bin/loop", "loop")] }],
    config: { ...base.config, Entrypoint: ["/bin/loop"] },
  });
  await assertCodeAsync(() => assemble(ociWorkspace(looped)), "LAUNCH_INVALID");
  // control: a program reached through an in-image symlink is accepted
  const linked = helloImage({
    layers: [...base.layers, { entries: [dir("bin/"), symlink("bin/hello", "../app/hello")] }],
    config: { ...base.config, Entrypoint: ["/bin/hello"] },
  });
  assert.equal((await assemble(ociWorkspace(linked))).kind, "oci");
});
