import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { CpioWriter, S_IFDIR, S_IFLNK, S_IFREG, type CpioEntry } from "../../src/vm/index.ts";
import { assertCode } from "../helpers/errors.ts";
import { readNewc } from "./fixtures/newc.ts";

function write(entries: CpioEntry[]): Buffer {
  const chunks: Buffer[] = [];
  const w = new CpioWriter({ write: (c) => void chunks.push(Buffer.from(c)) });
  for (const e of entries) w.add(e);
  w.finish();
  return Buffer.concat(chunks);
}

const sample: CpioEntry[] = [
  { name: "d", mode: S_IFDIR | 0o1777, uid: 0, gid: 0, mtime: 5 },
  { name: "d/f", mode: S_IFREG | 0o640, uid: 1000, gid: 42, mtime: 1_600_000_000, data: Buffer.from("hello") },
  { name: "d/l", mode: S_IFLNK | 0o777, uid: 7, gid: 8, mtime: 9, data: Buffer.from("../x") },
];

describe("cpio newc writer", () => {
  it("writes every field as given, with sequential inodes, zero padding and a 512-byte-aligned trailer", () => {
    const bytes = write(sample);
    assert.equal(bytes.length % 512, 0);
    const { entries, end } = readNewc(bytes);
    assert.ok(bytes.subarray(end).every((b) => b === 0));
    assert.deepEqual(
      entries.map((e) => [e.name, e.ino, e.mode, e.uid, e.gid, e.nlink, e.mtime, e.data.toString()]),
      [
        ["d", 1, S_IFDIR | 0o1777, 0, 0, 2, 5, ""],
        ["d/f", 2, S_IFREG | 0o640, 1000, 42, 1, 1_600_000_000, "hello"],
        ["d/l", 3, S_IFLNK | 0o777, 7, 8, 1, 9, "../x"],
      ],
    );
  });

  it("is deterministic: same entries, same bytes (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.stringMatching(/^[a-z]{1,12}$/), fc.uint8Array({ maxLength: 70 }), fc.nat(0xffffffff)), { maxLength: 8 }), (items) => {
        const uniq = [...new Map(items.map((i) => [i[0], i])).values()];
        const entries = uniq.map(([name, data, mtime]) => ({ name, mode: S_IFREG | 0o644, uid: 0, gid: 0, mtime, data }));
        const a = write(entries);
        assert.ok(a.equals(write(entries)));
        assert.deepEqual(
          readNewc(a).entries.map((e) => [e.name, e.data.length, e.mtime]),
          entries.map((e) => [e.name, e.data.length, e.mtime]),
        );
      }),
    );
  });

  it("refuses names and values newc cannot carry (control: the sample is accepted)", () => {
    assert.ok(write(sample).length > 0);
    assertCode(() => write([{ name: "/abs", mode: S_IFREG, uid: 0, gid: 0, mtime: 0 }]), "PATH_UNSAFE");
    assertCode(() => write([{ name: "TRAILER!!!", mode: S_IFREG, uid: 0, gid: 0, mtime: 0 }]), "PATH_UNSAFE");
    assertCode(() => write([sample[0]!, sample[0]!]), "RUN_INVALID");
    assertCode(() => write([{ name: "x", mode: S_IFREG, uid: 0, gid: 0, mtime: -1 }]), "RUN_INVALID");
    assertCode(() => write([{ name: "x", mode: S_IFREG, uid: 2 ** 32, gid: 0, mtime: 0 }]), "RUN_INVALID");
    assertCode(() => write([{ name: "x", mode: S_IFDIR, uid: 0, gid: 0, mtime: 0, data: Buffer.from("no") }]), "RUN_INVALID");
  });

  it("an ordered run keeps no names: the same bytes, and a repeat, a step back or a name outside its prefix refused", () => {
    const dir = (name: string): CpioEntry => ({ name, mode: S_IFDIR | 0o755, uid: 0, gid: 0, mtime: 0 });
    const run = (before: string[], names: string[]): Buffer => {
      const chunks: Buffer[] = [];
      const w = new CpioWriter({ write: (c) => void chunks.push(Buffer.from(c)) });
      for (const n of before) w.add(dir(n));
      w.beginOrdered("t/");
      for (const n of names) w.add(dir(n));
      w.finish();
      return Buffer.concat(chunks);
    };
    // control: ascending names under the prefix give the bytes the unordered writer gives
    const names = ["t/a", "t/a-", "t/a/b", "t/b", "t/\u00e9"]; // "-" is below "/" in byte order
    assert.ok(run(["init", "t"], names).equals(write(["init", "t", ...names].map(dir))));
    assertCode(() => run(["t"], ["t/a", "t/a"]), "RUN_INVALID"); // a repeat
    assertCode(() => run(["t"], ["t/b", "t/a"]), "RUN_INVALID"); // a step back
    assertCode(() => run(["t"], ["t/a", "u"]), "RUN_INVALID"); // outside the prefix
    assertCode(() => run(["t/a"], ["t/b"]), "RUN_INVALID"); // a name under the prefix written before the run
  });
});
