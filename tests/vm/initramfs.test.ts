import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { sha256, type Sha256Digest } from "../../src/core/index.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DEFAULT_SCENARIO,
  DEV_SYMLINKS,
  encodeInputs,
  encodeTreeManifest,
  treeManifestBytes,
  IMAGE_BYTES,
  prepareGuest,
  S_IFCHR,
  S_IFDIR,
  S_IFLNK,
  S_IFREG,
  writeGuestImage,
  type GuestImageParts,
  type Scenario,
} from "../../src/vm/index.ts";

import { assertCodeAsync } from "../helpers/errors.ts";
import { readNewc } from "./fixtures/newc.ts";

const exe = Buffer.from("\x7fELF pretend");
const blobs = new Map<string, Buffer>([[sha256(exe), exe]]);
const content = { get: async (d: Sha256Digest) => blobs.get(d)! };
const entries: FsEntry[] = [
  { type: "dir", path: "/", mode: 0o755, uid: 0, gid: 0, mtime: 10 },
  { type: "dir", path: "/a-b", mode: 0o700, uid: 5, gid: 6, mtime: 11 },
  { type: "dir", path: "/a", mode: 0o1777, uid: 0, gid: 0, mtime: 12 },
  { type: "file", path: "/a/x", mode: 0o750, uid: 1000, gid: 1000, mtime: 13, size: exe.length, sha256: sha256(exe) },
  { type: "symlink", path: "/a/l", mode: 0o777, uid: 3, gid: 4, mtime: 14, target: "x" },
  { type: "dir", path: "/tmp", mode: 0o1777, uid: 0, gid: 0, mtime: 15 },
];
const launch = { path: "/a/x", argv: ["/a/x"], env: ["K=v"], workdir: "/", uid: 1000, gid: 1000 };
const agent = Buffer.from("agent bytes");
const modules = [
  { name: "virtio_ring", bytes: Buffer.from("m1") },
  { name: "virtio", bytes: Buffer.from("m2") },
];
const inputs = encodeInputs(launch, DEFAULT_SCENARIO);

/** The image written to a sink that keeps its bytes (copied: a streaming source reuses its buffer). */
async function inMemory(parts: GuestImageParts) {
  const chunks: Buffer[] = [];
  const img = await writeGuestImage(parts, { write: (c) => void chunks.push(Buffer.from(c)) });
  return { ...img, bytes: Buffer.concat(chunks) };
}

function partsOf(list: FsEntry[], source: GuestImageParts["content"] = content): GuestImageParts {
  const tree = new Map(list.map((e) => [e.path, e]));
  return { agent, inputs, treeManifest: encodeTreeManifest(tree), modules, tree, content: source };
}

async function image(list: FsEntry[]) {
  return inMemory(partsOf(list));
}

describe("guest image", () => {
  it("is byte-identical for the same workload, whatever the tree's insertion order", async () => {
    const a = await image(entries);
    const b = await image([...entries].reverse());
    assert.equal(a.digest, b.digest);
    assert.ok(a.bytes.equals(b.bytes));
    assert.equal(a.digest, sha256(a.bytes));
  });

  it("puts the agent and inputs outside the template and the tree's metadata on the template", async () => {
    const { entries: got } = readNewc((await image(entries)).bytes);
    const by = new Map(got.map((e) => [e.name, e]));
    assert.deepEqual(
      got.slice(0, 10).map((e) => e.name),
      [
        "cairn",
        "cairn/inputs",
        "cairn/tree",
        "cairn/modules",
        "cairn/modules/00-virtio_ring.ko",
        "cairn/modules/01-virtio.ko",
        "dev",
        "dev/console",
        "init",
        "cairn/template",
      ],
    );
    assert.ok(by.get("cairn/modules/01-virtio.ko")!.data.equals(Buffer.from("m2")));
    assert.ok(by.get("init")!.data.equals(agent));
    assert.ok(by.get("cairn/inputs")!.data.equals(inputs));
    // the tree manifest comes from the canonical tree, and before the template (the unpacker stops at the first write error)
    assert.ok(by.get("cairn/tree")!.data.equals(treeManifestBytes(encodeTreeManifest(new Map(entries.map((e) => [e.path, e]))))));
    assert.equal(by.get("dev/console")!.mode, S_IFCHR | 0o600);
    assert.deepEqual([by.get("cairn/template")!.mode, by.get("cairn/template")!.mtime], [S_IFDIR | 0o755, 10]);
    // sorted by UTF-8 bytes: "/a" < "/a-b"? no — "-" (0x2d) < "/" (0x2f), so /a, /a-b, /a/l, /a/x
    assert.deepEqual(
      got.slice(10).map((e) => e.name),
      ["cairn/template/a", "cairn/template/a-b", "cairn/template/a/l", "cairn/template/a/x", "cairn/template/tmp"],
    );
    const x = by.get("cairn/template/a/x")!;
    assert.deepEqual([x.mode, x.uid, x.gid, x.mtime, x.data.equals(exe)], [S_IFREG | 0o750, 1000, 1000, 13, true]);
    const l = by.get("cairn/template/a/l")!;
    assert.deepEqual([l.mode, l.uid, l.gid, l.mtime, l.data.toString()], [S_IFLNK | 0o777, 3, 4, 14, "x"]);
    assert.deepEqual([by.get("cairn/template/a")!.mode, by.get("cairn/template/a-b")!.uid], [S_IFDIR | 0o1777, 5]);
  });

  it("refuses trees that collide with the runtime overlay (control: an empty /tmp directory is fine)", async () => {
    await image(entries);
    await assertCodeAsync(
      () => image([...entries, { type: "file", path: "/tmp/x", mode: 0o644, uid: 0, gid: 0, mtime: 0, size: exe.length, sha256: sha256(exe) }]),
      "RUN_INVALID",
    );
    await assertCodeAsync(() => image([...entries, { type: "symlink", path: "/dev", mode: 0o777, uid: 0, gid: 0, mtime: 0, target: "/x" }]), "RUN_INVALID");
  });

  it("accepts empty directories below /tmp and /dev (Debian's /dev/pts) and the standard /dev symlinks, nothing else below them (issue 9)", async () => {
    const d = (path: string): FsEntry => ({ type: "dir", path, mode: 0o755, uid: 0, gid: 0, mtime: 0 });
    const withDev = [...entries.filter((e) => e.path !== "/dev"), d("/dev"), d("/dev/pts"), d("/dev/shm"), d("/tmp/.X11-unix"), d("/tmp/.X11-unix/a")];
    await image(withDev);
    const link = (path: string, target: string): FsEntry => ({ type: "symlink", path, mode: 0o777, uid: 0, gid: 0, mtime: 0, target });
    // the standard /dev symlinks a Debian root keeps, each with its own target, are accepted (the agent keeps them)...
    await image([...withDev, ...Object.entries(DEV_SYMLINKS).map(([path, target]) => link(path, target))]);
    // ...another target, another name, or one below a subdirectory is not (controls for the rule above)
    await assertCodeAsync(() => image([...withDev, link("/dev/fd", "/etc")]), "RUN_INVALID", "/dev/fd");
    await assertCodeAsync(() => image([...withDev, link("/dev/stdout", "/proc/self/fd/2")]), "RUN_INVALID", "/dev/stdout");
    await assertCodeAsync(() => image([...withDev, link("/dev/core", "/proc/kcore")]), "RUN_INVALID", "/dev/core");
    await assertCodeAsync(() => image([...withDev, link("/dev/pts/fd", "/proc/self/fd")]), "RUN_INVALID", "/dev/pts/fd");
    await assertCodeAsync(() => image([...withDev, link("/tmp/fd", "/proc/self/fd")]), "RUN_INVALID", "/tmp/fd");
    await assertCodeAsync(
      () => image([...withDev, { type: "file", path: "/dev/pts/x", mode: 0o644, uid: 0, gid: 0, mtime: 0, size: exe.length, sha256: sha256(exe) }]),
      "RUN_INVALID",
    );
  });

  it("refuses entries Linux cannot create, which the kernel's initramfs unpacker would skip silently (controls: the largest that fit)", async () => {
    const dir = (path: string): FsEntry => ({ type: "dir", path, mode: 0o755, uid: 0, gid: 0, mtime: 0 });
    const link = (target: string): FsEntry => ({ type: "symlink", path: "/a/t", mode: 0o777, uid: 0, gid: 0, mtime: 0, target });
    // a symlink target holds at most 4095 bytes (PATH_MAX with its NUL)
    await image([...entries, link("x".repeat(4095))]);
    const t = await assertCodeAsync(() => image([...entries, link("x".repeat(4096))]), "LIMIT_EXCEEDED");
    assert.match(t.message, /vm\.symlink-target-bytes/);
    assert.equal(t.path, "/a/t");
    // a name holds at most 255 bytes (NAME_MAX)
    await image([...entries, dir(`/${"n".repeat(255)}`)]);
    const n = await assertCodeAsync(() => image([...entries, dir(`/${"n".repeat(256)}`)]), "LIMIT_EXCEEDED");
    assert.match(n.message, /vm\.name-bytes/);
    // the archive name "cairn/template/..." with its NUL holds at most 4096 bytes (PATH_MAX)
    const deep = (total: number): FsEntry[] => {
      const out: FsEntry[] = [];
      let p = "";
      while (`cairn/template${p}`.length + 1 < total) {
        const room = total - (`cairn/template${p}`.length + 1) - 1;
        p += `/${"d".repeat(Math.min(200, room))}`;
        out.push(dir(p));
      }
      assert.equal(`cairn/template${p}`.length + 1, total);
      return out;
    };
    await image([...entries, ...deep(4096)]);
    const d = await assertCodeAsync(() => image([...entries, ...deep(4097)]), "LIMIT_EXCEEDED");
    assert.match(d.message, /vm\.path-bytes/);
  });

  it("refuses content whose size differs from the tree", async () => {
    const wrong = { get: async () => Buffer.from("short") };
    await assertCodeAsync(
      () => inMemory({ agent, inputs, treeManifest: encodeTreeManifest(new Map()), modules, tree: new Map(entries.map((e) => [e.path, e])), content: wrong }),
      "SIZE_MISMATCH",
    );
  });
});

describe("guest image size", () => {
  it("is refused before anything else above the named limit vm.image-bytes, with the default and hint of the root used", async () => {
    assert.equal(IMAGE_BYTES.initramfs.default, 100 * 1024 * 1024);
    const fakeKit = {
      dir: mkdtempSync(join(tmpdir(), "cairn-nokit-")),
      qemu: "x",
      kernel: { digest: sha256("k"), package: "p", file: "f", modules: [] },
      agent: { digest: sha256("a"), source: sha256("s"), compiler: "c" },
    };
    const prepare = (list: FsEntry[], scenario: Scenario = DEFAULT_SCENARIO) =>
      prepareGuest({ tree: new Map(list.map((e) => [e.path, e])), content, launch, scenario }, { kit: fakeKit, qemu: "x" });
    const file = (size: number): FsEntry => ({ type: "file", path: "/big", mode: 0o644, uid: 0, gid: 0, mtime: 0, size, sha256: sha256(exe) });
    // an initramfs root (the spec's choice) keeps the RAM-sized default, and its hint speaks of guest RAM
    const inRam = { ...DEFAULT_SCENARIO, root: "initramfs" as const };
    const e = await assertCodeAsync(() => prepare([...entries, file(IMAGE_BYTES.initramfs.default + 1)], inRam), "LIMIT_EXCEEDED");
    assert.match(e.message, /vm\.image-bytes/);
    assert.match(e.hint ?? "", /initramfs, which lives in guest RAM/);
    // the same tree without a root named goes on a disk (above 64 MiB), whose default is sized for disk: past the limit
    await assertCodeAsync(() => prepare([...entries, file(IMAGE_BYTES.initramfs.default + 1)]), "VM_MISMATCH");
    // a disk root is refused above its own default, and its hint speaks of the disk, not of guest RAM
    const d = await assertCodeAsync(() => prepare([...entries, file(IMAGE_BYTES.disk.default + 1)]), "LIMIT_EXCEEDED");
    assert.equal(d.path, "/tree");
    assert.match(d.hint ?? "", /root disk/);
    assert.doesNotMatch(d.hint ?? "", /guest RAM/);
    // control: a tree within the limit gets past it (and stops at the empty kit)
    await assertCodeAsync(() => prepare(entries), "VM_MISMATCH");
  });
});
