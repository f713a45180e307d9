/**
 * cairn's EROFS writer (src/vm/erofs.ts), checked against an independent
 * reader: erofs-utils' `fsck.erofs`, which checks the image and extracts it.
 * The extracted tree must be the canonical tree, entry by entry (type,
 * permission bits, mtime, file bytes, symlink target; owners in a test of
 * their own, which needs root and is a loud skip otherwise), for
 * a tree that exercises every layout the writer chooses (inline and plain
 * data at the block edges, a directory over several blocks, a long symlink,
 * an empty file, UTF-8 names). The image is byte-identical whatever the
 * order the tree was built in. Controls: a flipped byte in a directory block
 * is caught by the same oracle.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { sha256, type Sha256Digest } from "../../src/core/index.ts";
import type { CanonicalTree, FsEntry } from "../../src/tree/entries.ts";
import { EROFS_BLOCK, planErofs, planned, writeErofs } from "../../src/vm/index.ts";
import { needs, needsRoot } from "../helpers/prerequisites.ts";

const FSCK = spawnSync("fsck.erofs", ["-V"]).error === undefined;
const SKIP = needs(FSCK ? undefined : "fsck.erofs (Debian erofs-utils) as the independent EROFS reader");

function world(order: "forward" | "reverse"): { tree: CanonicalTree; blobs: Map<string, Buffer> } {
  const blobs = new Map<string, Buffer>();
  const entries: FsEntry[] = [];
  const dir = (path: string, mode = 0o755, uid = 0, gid = 0, mtime = 1000) => entries.push({ type: "dir", path, mode, uid, gid, mtime });
  const file = (path: string, bytes: Buffer, mode = 0o644, uid = 0, gid = 0, mtime = 2000) => {
    blobs.set(sha256(bytes), bytes);
    entries.push({ type: "file", path, mode, uid, gid, mtime, size: bytes.length, sha256: sha256(bytes) });
  };
  dir("/");
  dir("/etc");
  dir("/srv", 0o750, 7, 8, 1234);
  dir("/srv/many");
  dir("/tmp", 0o1777);
  file("/etc/hostname", Buffer.from("guest\n"), 0o600, 1000, 1001, 1_700_000_000);
  file("/etc/empty", Buffer.alloc(0));
  // the writer's edges: inline up to 4032 bytes after a 64-byte inode, plain above, whole blocks, a tail after blocks
  for (const n of [1, 4031, 4032, 4033, 4095, EROFS_BLOCK, EROFS_BLOCK + 1, 2 * EROFS_BLOCK, 10_000]) {
    file(`/srv/size-${n}`, Buffer.alloc(n, n % 251));
  }
  file("/srv/ünïcødé-名前", Buffer.from("utf-8 name\n"));
  entries.push({ type: "symlink", path: "/srv/rel", mode: 0o777, uid: 5, gid: 6, mtime: 9, target: "../etc/hostname" });
  entries.push({ type: "symlink", path: "/srv/long", mode: 0o777, uid: 0, gid: 0, mtime: 9, target: `/${"t".repeat(4090)}` });
  // names of many lengths, so the directory spans several blocks and names sort around "." and ".."
  for (let i = 0; i < 600; i++) file(`/srv/many/${String(i).padStart(4, "0")}-${"n".repeat(i % 60)}`, Buffer.from(`file ${i}\n`), 0o755);
  file("/srv/many/-dash", Buffer.from("sorts before .\n"));
  file("/srv/many/+plus", Buffer.from("sorts before .\n"));
  file("/srv/many/.-between", Buffer.from("sorts between . and ..\n"));
  file("/srv/many/.after", Buffer.from("sorts after ..\n"));
  if (order === "reverse") entries.reverse();
  return { tree: new Map(entries.map((e) => [e.path, e])), blobs };
}

async function image(w: ReturnType<typeof world>): Promise<{ bytes: Buffer; digest: Sha256Digest }> {
  const chunks: Buffer[] = [];
  const r = await writeErofs(w.tree, { get: async (d) => w.blobs.get(d)! }, { write: (c) => void chunks.push(Buffer.from(c)) });
  const bytes = Buffer.concat(chunks);
  assert.equal(bytes.length, r.size);
  assert.equal(sha256(bytes), r.digest, "the digest is the one of the bytes written");
  return { bytes, digest: r.digest };
}

function fsck(bytes: Buffer, owners = false): { status: number | null; out: string; dir: string } {
  const root = mkdtempSync(join(tmpdir(), "cairn-erofs-"));
  writeFileSync(join(root, "img"), bytes);
  const dir = join(root, "x");
  const r = spawnSync("fsck.erofs", [`--extract=${dir}`, "--preserve-perms", ...(owners ? ["--preserve-owner"] : []), join(root, "img")], {
    encoding: "utf8",
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}`, dir };
}

/** How the extracted directory differs from the tree; owners only when asked (fsck.erofs preserves them for root alone). */
function readBack(dir: string, tree: CanonicalTree, owners = false): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const walk = (rel: string) => {
    const st = lstatSync(join(dir, rel));
    const path = rel === "" ? "/" : rel;
    seen.add(path);
    const e = tree.get(path);
    if (e === undefined) return void problems.push(`${path}: not in the tree`);
    const type = st.isDirectory() ? "dir" : st.isSymbolicLink() ? "symlink" : st.isFile() ? "file" : "other";
    if (type !== e.type) return void problems.push(`${path}: ${type}, the tree says ${e.type}`);
    if (e.type !== "symlink" && (st.mode & 0o7777) !== e.mode) problems.push(`${path}: mode ${(st.mode & 0o7777).toString(8)}`);
    if (owners && (st.uid !== e.uid || st.gid !== e.gid)) problems.push(`${path}: owner ${st.uid}:${st.gid}`);
    if (e.type !== "dir" && Math.floor(st.mtimeMs / 1000) !== e.mtime) problems.push(`${path}: mtime ${st.mtimeMs / 1000}`);
    if (e.type === "file" && sha256(readFileSync(join(dir, rel))) !== e.sha256) problems.push(`${path}: content differs`);
    if (e.type === "symlink" && readlinkSync(join(dir, rel)) !== e.target) problems.push(`${path}: target differs`);
    if (e.type === "dir") for (const n of readdirSync(join(dir, rel))) walk(`${rel === "" ? "" : rel}/${n}`);
  };
  walk("");
  for (const p of tree.keys()) if (!seen.has(p)) problems.push(`${p}: missing`);
  return problems;
}

describe("EROFS writer", { skip: SKIP }, () => {
  it("writes an image fsck.erofs accepts and extracts to exactly the canonical tree", async () => {
    const w = world("forward");
    const img = await image(w);
    const r = fsck(img.bytes);
    assert.equal(r.status, 0, r.out);
    assert.deepEqual(readBack(r.dir, w.tree), []);
    // the layout used every form it has: inline tails, plain blocks, a multi-block directory
    const plan = planErofs(w.tree);
    const many = planned(plan, "/srv/many")!;
    assert.ok(many.size > 2 * EROFS_BLOCK, "the directory spans several blocks");
    assert.equal(planned(plan, "/srv/size-4032")!.tail, 4032);
    assert.equal(planned(plan, "/srv/size-4033")!.tail, 0);
    assert.equal(planned(plan, "/srv/size-10000")!.tail, 10_000 - 2 * EROFS_BLOCK);
  });

  // fsck.erofs keeps owners only for root: when not root this is a loud skip, never an owner check left out silently.
  it("extracts every entry with the tree's owner (uid and gid, fsck.erofs --preserve-owner)", { skip: needsRoot("fsck.erofs --preserve-owner") }, async () => {
    const w = world("forward");
    const r = fsck((await image(w)).bytes, true);
    assert.equal(r.status, 0, r.out);
    assert.deepEqual(readBack(r.dir, w.tree, true), []);
    // control: the owners are not all root, so the check compares something
    assert.ok([...w.tree.values()].some((e) => e.uid !== 0 && e.gid !== 0));
  });

  it("control: the oracle catches a damaged directory block", async () => {
    const w = world("forward");
    const img = await image(w);
    const many = planned(planErofs(w.tree), "/srv/many")!;
    const damaged = Buffer.from(img.bytes);
    // the first dirent of the directory's first block: its nid now points elsewhere
    damaged[many.blkaddr * EROFS_BLOCK] = damaged[many.blkaddr * EROFS_BLOCK]! ^ 0x41;
    const r = fsck(damaged);
    assert.ok(r.status !== 0 || readBack(r.dir, w.tree).length > 0, "a damaged image must not read back as the tree");
  });

  it("is byte-identical whatever order the tree was built in", async () => {
    const a = await image(world("forward"));
    const b = await image(world("reverse"));
    assert.equal(a.digest, b.digest);
    // control: one changed mtime changes the image
    const w = world("forward");
    const e = w.tree.get("/etc/empty")!;
    const changed = new Map(w.tree);
    changed.set("/etc/empty", { ...e, mtime: e.mtime + 1 });
    assert.notEqual((await image({ tree: changed, blobs: w.blobs })).digest, a.digest);
  });

  it("writes a metadata area of several 1 MiB windows (20,000 entries, inline tails) that fsck.erofs extracts to exactly the tree", async () => {
    const blobs = new Map<string, Buffer>();
    const entries: FsEntry[] = [{ type: "dir", path: "/", mode: 0o755, uid: 0, gid: 0, mtime: 1 }];
    for (let d = 0; d < 20; d++) entries.push({ type: "dir", path: `/d${d}`, mode: 0o755, uid: 0, gid: 0, mtime: 2 });
    for (let i = 0; i < 20_000; i++) {
      const bytes = Buffer.from(`file ${i}\n`.repeat(1 + (i % 9)));
      blobs.set(sha256(bytes), bytes);
      entries.push({ type: "file", path: `/d${i % 20}/f${i}`, mode: 0o644, uid: 0, gid: 0, mtime: 3, size: bytes.length, sha256: sha256(bytes) });
    }
    const w = { tree: new Map(entries.map((e) => [e.path, e])) as CanonicalTree, blobs };
    assert.ok(planErofs(w.tree).dataStart > 2 * 1024 * 1024, "the metadata area spans more than two windows");
    const img = await image(w);
    const r = fsck(img.bytes);
    assert.equal(r.status, 0, r.out);
    assert.deepEqual(readBack(r.dir, w.tree), []);
  });
});
