/**
 * Guest sizing by root (issue 31, case 15; src/vm/sizing.ts): with a root
 * disk the defaults follow disk, not RAM, and the ceiling is EROFS's and
 * the host's free space (statfs, checked before the disk is hashed or
 * written), not 1 GiB. No VM: the trees here name sizes, and a refusal must
 * come before any content is read (the content source fails if asked).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { CairnError, sha256 } from "../../src/core/index.ts";
import type { FsEntry } from "../../src/tree/entries.ts";
import { checkRoom, DEFAULT_SCENARIO, IMAGE_BYTES_CEILING, parseScenario, prepareGuest, sizeGuest, type Scenario } from "../../src/vm/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const TiB = 1024 * GiB;
const work = mkdtempSync(join(tmpdir(), "cairn-sizing-"));
after(() => rmSync(work, { recursive: true, force: true }));

const dirEntry = (path: string): FsEntry => ({ type: "dir", path, mode: 0o755, uid: 0, gid: 0, mtime: 0 });
const fileEntry = (path: string, size: number): FsEntry => ({ type: "file", path, mode: 0o644, uid: 0, gid: 0, mtime: 0, size, sha256: sha256(path) });
const tree = (...files: FsEntry[]) => new Map<string, FsEntry>([["/", dirEntry("/")], ...files.map((f) => [f.path, f] as const)]);
const withLimits = (limits: Partial<Scenario["limits"]>, root?: Scenario["root"]): Scenario => ({
  ...DEFAULT_SCENARIO,
  limits: { ...DEFAULT_SCENARIO.limits, ...limits },
  ...(root !== undefined ? { root } : {}),
});

function free(dir: string): number {
  const st = statfsSync(dir);
  return Number(st.bavail) * Number(st.bsize);
}

describe("sizing by root", () => {
  it("an image of 8 GiB runs from a disk with no limit named; the same tree in an initramfs is refused with a RAM hint", () => {
    const big = tree(fileEntry("/data", 8 * GiB));
    const s = sizeGuest(big, DEFAULT_SCENARIO);
    assert.equal(s.root, "disk", "above 64 MiB of files the tree goes on a disk when the spec names no root");
    assert.ok(s.plan !== undefined && s.plan.size > 8 * GiB);
    let e: unknown;
    try {
      sizeGuest(big, withLimits({}, "initramfs"));
    } catch (x) {
      e = x;
    }
    assert.ok(e instanceof CairnError && e.code === "LIMIT_EXCEEDED" && e.path === "/tree", String(e));
    assert.match(e.message, /vm\.image-bytes exceeded \(8\.0 GiB > 100\.0 MiB\)/);
    assert.match(e.hint ?? "", /guest RAM/);
  });

  it("a disk's limit can be raised past 1 GiB up to EROFS's ceiling; past that the spec is refused", () => {
    const s = parseScenario({ limits: { "image-bytes": 64 * GiB } });
    assert.equal(sizeGuest(tree(fileEntry("/data", 40 * GiB)), s).root, "disk", "past the 32 GiB default, within the spec's 64 GiB");
    assert.throws(
      () => sizeGuest(tree(fileEntry("/data", 40 * GiB)), DEFAULT_SCENARIO),
      (e: unknown) => e instanceof CairnError && /root disk/.test(e.hint ?? ""),
    );
    assert.equal(IMAGE_BYTES_CEILING, 0xffffffff * 4096);
    assert.throws(
      () => parseScenario({ limits: { "image-bytes": IMAGE_BYTES_CEILING + 1 } }),
      (e: unknown) => e instanceof CairnError && e.path === "/run/limits/image-bytes",
    );
  });

  it("checkRoom refuses a size the host's file system lacks, naming vm.image-bytes and the free bytes (control: one that fits)", () => {
    checkRoom(work, MiB, "the root disk");
    const room = free(work);
    let e: unknown;
    try {
      checkRoom(work, room + 1, "the root disk");
    } catch (x) {
      e = x;
    }
    assert.ok(e instanceof CairnError && e.code === "LIMIT_EXCEEDED", String(e));
    assert.equal(e.path, work);
    assert.match(e.message, /vm\.image-bytes/);
    assert.match(e.message, /\(\d+ bytes\) free/);
    const named = Number(/\((\d+) bytes\) free/.exec(e.message)![1]);
    assert.ok(Math.abs(named - room) < 64 * MiB, `the free bytes named (${named}) are the file system's (${room})`);
  });

  it("a root disk larger than the host's free space is refused before it is hashed (no content read)", async () => {
    const st = statfsSync(work);
    const size = Number(st.blocks) * Number(st.bsize) + TiB; // more than the whole file system
    const scenario = withLimits({ imageBytes: 2 * size });
    const fakeKit = {
      dir: work,
      qemu: "x",
      kernel: { digest: sha256("k"), package: "p", file: "f", modules: [] },
      agent: { digest: sha256("a"), source: sha256("s"), compiler: "c" },
    };
    const content = {
      get: async (): Promise<Buffer> => {
        throw new Error("content was read: the room should have been checked first");
      },
    };
    const launch = { path: "/data", argv: ["/data"], env: [], workdir: "/", uid: 0, gid: 0 };
    const prepare = (room?: string) =>
      prepareGuest({ tree: tree(fileEntry("/data", size)), content, launch, scenario, ...(room ? { room } : {}) }, { kit: fakeKit, qemu: "x" });
    const e = await assertCodeAsync(() => prepare(work), "LIMIT_EXCEEDED");
    assert.equal(e.path, work);
    assert.match(e.message, /the root disk .* free on the file system holding/);
    // control: without a room to check, the same tree gets past sizing (and stops at the empty kit)
    await assertCodeAsync(() => prepare(), "VM_MISMATCH");
  });
});
