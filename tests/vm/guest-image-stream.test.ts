/**
 * The guest image written as a stream (issue 15, item 3): writeGuestImage
 * gives the bytes the in-memory builder gave before it (digests pinned from
 * that builder, at commit a24f387), whether the source streams its files or
 * only returns them whole, so run identities do not move; writeGuestImageFile
 * puts exactly those bytes in a private file that appears only when whole
 * and named, and refuses (nothing published) a source that lies about size
 * or bytes.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CairnError, sha256, type Sha256Digest } from "../../src/core/index.ts";
import type { ContentSource, FsEntry } from "../../src/tree/index.ts";
import {
  DEFAULT_SCENARIO,
  encodeInputs,
  encodeTreeManifest,
  writeErofs,
  writeGuestImage,
  writeGuestImageFile,
  type GuestImageParts,
} from "../../src/vm/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";

const exe = Buffer.from("\x7fELF pretend");
const big = Buffer.alloc(3 * 1024 * 1024 + 5);
for (let i = 0; i < big.length; i++) big[i] = (i * 31 + (i >> 12)) & 0xff;
const blobs = new Map<string, Buffer>([
  [sha256(exe), exe],
  [sha256(big), big],
]);
/** The EROFS root disk's edges: a tail inline after whole blocks, a tail too long to inline, inline and plain small files. */
const diskEntries: FsEntry[] = [
  { type: "dir", path: "/", mode: 0o755, uid: 0, gid: 0, mtime: 10 },
  { type: "dir", path: "/d", mode: 0o750, uid: 1, gid: 2, mtime: 11 },
  { type: "symlink", path: "/d/l", mode: 0o777, uid: 0, gid: 0, mtime: 9, target: "big" },
];
for (const [path, bytes] of [
  ["/d/big", big],
  ["/d/big-plain", big.subarray(0, 2 * 1024 * 1024 + 4090)],
  ...[0, 1, 4032, 4033, 8192, 10000].map((n) => [`/d/size-${n}`, Buffer.alloc(n, n % 251)] as const),
] as const) {
  blobs.set(sha256(bytes), bytes);
  diskEntries.push({ type: "file", path, mode: 0o644, uid: 0, gid: 0, mtime: 3, size: bytes.length, sha256: sha256(bytes) });
}
/** Only whole reads, as the in-memory builder used. */
const whole: ContentSource = { get: async (d: Sha256Digest) => blobs.get(d)! };
/** `n` bytes as a first piece of `first`, then pieces of `step`, the last one shorter. */
function split(n: number, first: number, step: number): number[] {
  const out = [Math.min(n, first)];
  for (let at = out[0]!; at < n; at += step) out.push(Math.min(step, n - at));
  return out;
}
/** Streamed from one reused buffer, overwritten after each piece (a writer that kept a piece would keep garbage); /big in `pieces`. */
function streaming(pieces: (size: number) => number[] = (n) => split(n, 7, 1 << 20)): ContentSource {
  return {
    get: whole.get,
    async stream(d, chunk) {
      const data = blobs.get(d)!;
      const list = d === sha256(big) ? pieces(data.length) : [data.length];
      const buf = Buffer.alloc(Math.max(...list));
      let at = 0;
      for (const p of list) {
        // a piece past the end hands over zeros (a source that lies about the size)
        const n = at >= data.length ? p : Math.min(p, data.length - at);
        buf.fill(0);
        data.copy(buf, 0, at, Math.min(data.length, at + n));
        chunk(buf.subarray(0, n));
        buf.fill(0xee);
        at += n;
      }
      return at;
    },
  };
}

const entries: FsEntry[] = [
  { type: "dir", path: "/", mode: 0o755, uid: 0, gid: 0, mtime: 10 },
  { type: "dir", path: "/a-b", mode: 0o700, uid: 5, gid: 6, mtime: 11 },
  { type: "dir", path: "/a", mode: 0o1777, uid: 0, gid: 0, mtime: 12 },
  { type: "file", path: "/a/x", mode: 0o750, uid: 1000, gid: 1000, mtime: 13, size: exe.length, sha256: sha256(exe) },
  { type: "symlink", path: "/a/l", mode: 0o777, uid: 3, gid: 4, mtime: 14, target: "x" },
  { type: "dir", path: "/tmp", mode: 0o1777, uid: 0, gid: 0, mtime: 15 },
];
const bigEntry: FsEntry = { type: "file", path: "/big", mode: 0o644, uid: 0, gid: 0, mtime: 1, size: big.length, sha256: sha256(big) };
const launch = { path: "/a/x", argv: ["/a/x"], env: ["K=v"], workdir: "/", uid: 1000, gid: 1000 };
const modules = [
  { name: "virtio_ring", bytes: Buffer.from("m1") },
  { name: "virtio", bytes: Buffer.from("m2") },
];

function parts(list: FsEntry[], content: ContentSource, extra: Partial<GuestImageParts> = {}): GuestImageParts {
  const tree = new Map(list.map((e) => [e.path, e]));
  const inputs = encodeInputs(launch, DEFAULT_SCENARIO);
  return { agent: Buffer.from("agent bytes"), inputs, treeManifest: encodeTreeManifest(tree), modules, tree, content, ...extra };
}

async function inMemory(p: GuestImageParts) {
  const chunks: Buffer[] = [];
  const img = await writeGuestImage(p, { write: (c) => void chunks.push(Buffer.from(c)) });
  return { ...img, bytes: Buffer.concat(chunks) };
}

/** Digests, sizes and entry counts the in-memory builder (buildGuestImage, commit a24f387) gave for these parts. */
const PINNED = {
  ram: ["sha256:1b3466a0cfc2bcfd66ab7f39ebed23b98db0d2644b4e3776e0f45e68411af9c4", 2560, 15],
  disk: ["sha256:b0167f3dff778931da772ffb279b47c6db67e5f5d35e53901098783440f1fbab", 2560, 14],
  big: ["sha256:a88182c0e7269587923c08ffaf0a4784349532f07bf262afcf31fd258451033f", 3148800, 16],
} as const;
/** The EROFS writer's image of diskEntries before it streamed file contents (commit a24f387). */
const PINNED_DISK = ["sha256:d5c86f57fde432e2d95e7187db45b854965ed02c0f396208da2014ff77cfc7e9", 5279744, 11] as const;
const diskExtra = { disk: true, overlay: { proc: true, urandom: true }, network: "10.0.2.15/24 10.0.2.2\n" };

describe("the guest image written as a stream", () => {
  it("has the bytes the in-memory builder had (pinned digests), from a streaming source or a whole one", async () => {
    for (const content of [whole, streaming(), streaming((n) => [n]), streaming((n) => split(n, 1021, 1021))]) {
      for (const [name, p] of [
        ["ram", parts(entries, content)],
        ["disk", parts(entries, content, diskExtra)],
        ["big", parts([...entries, bigEntry], content)],
      ] as const) {
        const img = await inMemory(p);
        assert.deepEqual([img.digest, img.size, img.entries], PINNED[name], name);
        assert.equal(sha256(img.bytes), img.digest);
        assert.equal(img.bytes.length, img.size);
      }
    }
  });

  it("the EROFS root disk has the bytes it had when files were read whole (pinned digest), from a streaming source or a whole one", async () => {
    const tree = new Map(diskEntries.map((e) => [e.path, e]));
    for (const content of [whole, streaming(), streaming((n) => split(n, 1021, 1021)), streaming((n) => split(n, 4096, 4096))]) {
      const chunks: Buffer[] = [];
      const r = await writeErofs(tree, content, { write: (c) => void chunks.push(Buffer.from(c)) });
      assert.deepEqual([r.digest, r.size, r.inodes], PINNED_DISK);
      assert.equal(sha256(Buffer.concat(chunks)), r.digest);
    }
    // a source that hands over more than the tree's size is refused there too (control: the loop above)
    await assertCodeAsync(
      () =>
        writeErofs(
          tree,
          streaming((n) => [n, 1]),
          { write() {} },
        ),
      "SIZE_MISMATCH",
      "/d/big",
    );
  });

  it("writeGuestImageFile publishes exactly those bytes, 0600, with nothing else left in the directory", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-image-file-"));
    const path = join(dir, "initramfs.img");
    const p = parts([...entries, bigEntry], streaming());
    const expected = await inMemory(p);
    const img = await writeGuestImageFile(p, path, expected);
    assert.deepEqual([img.digest, img.size], [expected.digest, expected.size]);
    assert.ok(readFileSync(path).equals(expected.bytes));
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(dir), ["initramfs.img"]);
    // a second boot in the same directory replaces the copy
    await writeGuestImageFile(p, path, expected);
    assert.deepEqual(readdirSync(dir), ["initramfs.img"]);
  });

  it("refuses an image that is not the one named, and a source that lies about size or bytes, publishing nothing (controls above)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-image-refused-"));
    const path = join(dir, "initramfs.img");
    const p = parts([...entries, bigEntry], streaming());
    const named = await inMemory(p);
    await assertCodeAsync(() => writeGuestImageFile(p, path, { digest: sha256("other"), size: named.size }), "RUN_INFRASTRUCTURE", "/guest_image/initramfs");
    assert.deepEqual(readdirSync(dir), []);
    const longer = streaming((n) => [n, 1]);
    await assertCodeAsync(() => writeGuestImageFile(parts([...entries, bigEntry], longer), path, named), "SIZE_MISMATCH", "/big");
    const shorter = streaming((n) => [n - 1]);
    await assertCodeAsync(() => writeGuestImageFile(parts([...entries, bigEntry], shorter), path, named), "SIZE_MISMATCH", "/big");
    // a source that refuses once its bytes passed (as the store does for a changed byte)
    const corrupt: ContentSource = {
      get: whole.get,
      async stream(d, chunk) {
        await streaming().stream!(d, chunk);
        throw new CairnError("STORE_CORRUPT", "changed", { path: d });
      },
    };
    await assertCodeAsync(() => writeGuestImageFile(parts([...entries, bigEntry], corrupt), path, named), "STORE_CORRUPT");
    assert.deepEqual(readdirSync(dir), [], "nothing published, no temporary file left");
  });
});
