/**
 * The tree manifest (`cairn.tree-manifest/1`) the agent checks the guest's
 * template against: its bytes against a hand-written oracle, and its
 * derivation from the canonical tree only.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import type { Sha256Digest } from "../../src/core/index.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { encodeTreeManifest, treeManifestBytes } from "../../src/vm/index.ts";

const d = (c: string) => `sha256:${c.repeat(64)}` as Sha256Digest;
const entries: FsEntry[] = [
  { type: "symlink", path: "/l", mode: 0o777, uid: 3, gid: 4, mtime: 9, target: "bin/x" },
  { type: "dir", path: "/", mode: 0o755, uid: 0, gid: 0, mtime: 1 },
  { type: "file", path: "/bin/x", mode: 0o4750, uid: 1000, gid: 100, mtime: 2, size: 300, sha256: d("a") },
  { type: "dir", path: "/bin", mode: 0o700, uid: 0, gid: 0, mtime: 1 },
];

const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b.toString("hex");
};
const u64 = (v: number) => u32(v) + u32(0);
const s = (v: string) => u32(Buffer.byteLength(v)) + Buffer.from(v).toString("hex");

/** An independent encoder: one hex string per field, as the format comment in tree-manifest.ts says. */
function oracle(flags = 0): Buffer {
  const hex = [
    Buffer.from("CAIRNTM1").toString("hex"),
    u32(1),
    u32(flags),
    u32(4),
    `01${u32(0o755)}${u32(0)}${u32(0)}${u64(0)}${s("")}${s("")}`,
    `01${u32(0o700)}${u32(0)}${u32(0)}${u64(0)}${s("bin")}${s("")}`,
    `02${u32(0o4750)}${u32(1000)}${u32(100)}${u64(300)}${s("bin/x")}${s("")}${"a".repeat(64)}`,
    `03${u32(0o777)}${u32(3)}${u32(4)}${u64(5)}${s("l")}${s("bin/x")}`,
  ].join("");
  return Buffer.from(hex, "hex");
}

describe("tree manifest", () => {
  it("encodes every entry in path byte order with type, mode, owner, size and target", () => {
    const m = encodeTreeManifest(new Map(entries.map((e) => [e.path, e])));
    assert.ok(treeManifestBytes(m).equals(oracle()));
    assert.equal(m.size, oracle().length);
    assert.equal(m.entries, 4);
    const digest = createHash("sha256").update(Buffer.from("cairn.tree-manifest/1\0")).update(oracle()).digest("hex");
    assert.equal(m.digest, `sha256:${digest}`);
    // run.verify-tree: content sets flag bit 0 and nothing else, and is another digest
    const c = encodeTreeManifest(new Map(entries.map((e) => [e.path, e])), "content");
    assert.ok(treeManifestBytes(c).equals(oracle(1)));
    assert.notEqual(c.digest, m.digest);
  });

  it("is written in chunks that join to the bytes it hashed, a record larger than a chunk whole in one", () => {
    // 3,000 files (some 200 KB of manifest) and one symlink whose target alone is larger than a 64 KiB chunk
    const many: FsEntry[] = [{ type: "dir", path: "/", mode: 0o755, uid: 0, gid: 0, mtime: 0 }];
    for (let i = 0; i < 3000; i++)
      many.push({ type: "file", path: `/f${String(i).padStart(5, "0")}`, mode: 0o644, uid: 0, gid: 0, mtime: 0, size: i, sha256: d("c") });
    const long = "t".repeat(70_000);
    many.push({ type: "symlink", path: "/zlong", mode: 0o777, uid: 0, gid: 0, mtime: 0, target: long });
    const expected = Buffer.from(
      [
        Buffer.from("CAIRNTM1").toString("hex"),
        u32(1),
        u32(0),
        u32(many.length),
        `01${u32(0o755)}${u32(0)}${u32(0)}${u64(0)}${s("")}${s("")}`,
        ...many
          .slice(1, -1)
          .map((e) => `02${u32(0o644)}${u32(0)}${u32(0)}${u64(e.type === "file" ? e.size : 0)}${s(e.path.slice(1))}${s("")}${"c".repeat(64)}`),
        `03${u32(0o777)}${u32(0)}${u32(0)}${u64(long.length)}${s("zlong")}${s(long)}`,
      ].join(""),
      "hex",
    );
    const m = encodeTreeManifest(new Map(many.map((e) => [e.path, e])));
    const chunks: Uint8Array[] = [];
    m.write((c) => chunks.push(Buffer.from(c))); // a copy: the chunk's buffer is reused after emit returns
    assert.ok(chunks.length > 3, `${chunks.length} chunks`);
    assert.ok(Buffer.concat(chunks).equals(expected));
    assert.equal(m.size, expected.length);
    assert.equal(m.digest, `sha256:${createHash("sha256").update(Buffer.from("cairn.tree-manifest/1\0")).update(expected).digest("hex")}`);
    // every chunk but the one holding the long target within 64 KiB
    assert.deepEqual(
      chunks.filter((c) => c.length > 1 << 16).map((c) => c.length),
      [1 + 4 + 4 + 4 + 8 + 4 + 5 + 4 + long.length],
    );
  });

  it("refuses to write other bytes than it hashed (control: the same tree writes)", () => {
    const mine = entries.map((e) => ({ ...e }));
    const m = encodeTreeManifest(new Map(mine.map((e) => [e.path, e])));
    assert.ok(treeManifestBytes(m).equals(oracle()));
    (mine.find((e) => e.path === "/bin/x") as { uid: number }).uid = 1001; // the same size, another owner
    assert.throws(
      () => treeManifestBytes(m),
      (e: unknown) => (e as { code?: string }).code === "RUN_INFRASTRUCTURE",
    );
  });

  it("a tree differing in one owner, mode, size, target or content digest has another digest (control: the same tree, the same digest)", () => {
    const base = encodeTreeManifest(new Map(entries.map((e) => [e.path, e]))).digest;
    assert.equal(encodeTreeManifest(new Map([...entries].reverse().map((e) => [e.path, e]))).digest, base);
    const edits: Array<(e: FsEntry) => FsEntry> = [
      (e) => (e.path === "/bin/x" ? { ...e, uid: 1001 } : e),
      (e) => (e.path === "/bin" ? { ...e, mode: 0o755 } : e),
      (e) => (e.path === "/bin/x" && e.type === "file" ? { ...e, size: 301 } : e),
      (e) => (e.path === "/l" && e.type === "symlink" ? { ...e, target: "bin/y" } : e),
      (e) => (e.path === "/bin/x" && e.type === "file" ? { ...e, sha256: d("b") } : e),
    ];
    for (const edit of edits) assert.notEqual(encodeTreeManifest(new Map(entries.map(edit).map((e) => [e.path, e]))).digest, base);
  });
});
