// The tar gate's header parsing, field by field (src/tree/tar-gate.ts): each
// header is built by tests/workload/fixtures/tar-writer.ts, one byte range is
// edited and the checksum recomputed, so exactly one thing is wrong; the
// unedited header is the control. Written to kill StrykerJS survivors
// (bench/mutation/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import type { ErrorCode } from "../../src/core/index.ts";
import type { GateRecord } from "../../src/tree/tar-gate.ts";
import { DEFAULT_LIMITS, type LayerLimits } from "../../src/tree/layer-limits.ts";
import { assertCode } from "../helpers/errors.ts";
import { capturingGate } from "./gate-capture.ts";
import { dir, file, hardlink, symlink, type TarItem, writeTar } from "../workload/fixtures/tar-writer.ts";

function gate(bytes: Buffer, limits: LayerLimits = DEFAULT_LIMITS): GateRecord[] {
  const { gate: g, records } = capturingGate(limits);
  g.push(bytes);
  g.end();
  return records;
}

/** One header block of `item`, with `edit` applied to it and the checksum recomputed (unless `keepSum`). */
function header(item: TarItem, edit: (h: Buffer) => void = () => {}, keepSum = false): Buffer {
  const h = Buffer.from(writeTar([item], { eof: false }).subarray(-512));
  edit(h);
  if (!keepSum) {
    h.fill(0x20, 148, 156);
    let sum = 0;
    for (const x of h) sum += x;
    h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "latin1");
  }
  return h;
}
const archive = (...blocks: Buffer[]) => Buffer.concat([...blocks, Buffer.alloc(1024)]);
const field = (off: number, len: number, text: string) => (h: Buffer) => {
  h.fill(0, off, off + len);
  h.write(text, off, len, "latin1");
};
const refused = (bytes: Buffer, code: ErrorCode, path?: string) => assertCode(() => gate(bytes), code, path);

test("a header's numbers: leading spaces, NUL or space terminators and base-256 parse; anything else is TAR_INVALID", () => {
  const d = dir("d");
  const uid = (text: string) => archive(header(d, field(108, 8, text)));
  assert.equal(gate(uid("0000017\0"))[0]!.uid, 15);
  assert.equal(gate(uid("   17 \0\0"))[0]!.uid, 15);
  assert.equal(gate(uid("17 "))[0]!.uid, 15);
  assert.equal(gate(uid(""))[0]!.uid, 0);
  assert.equal(gate(uid("7777777"))[0]!.uid, 0o7777777);
  for (const bad of ["0000018\0", "00000/7\0", "17 1", "1\0" + "2", "-1", "0x1"]) refused(uid(bad), "TAR_INVALID", "/layers/0@0");
  const b256 = (bytes: number[]) => archive(header(d, (h) => Buffer.from(bytes).copy(h, 108)));
  assert.equal(gate(b256([0x80, 0, 0, 0, 0, 0, 1, 2]))[0]!.uid, 258);
  refused(b256([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), "TAR_INVALID");
  refused(b256([0x81, 0, 0, 0, 0, 0, 0, 0]), "TAR_INVALID");
  // base-256 in a 12-byte field: 2^53 is too large, 2^53-1 is not
  const mtime = (bytes: number[]) => archive(header(d, (h) => Buffer.from(bytes).copy(h, 136)));
  assert.equal(gate(mtime([0x80, 0, 0, 0, 0, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))[0]!.mtime, Number.MAX_SAFE_INTEGER);
  refused(mtime([0x80, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0]), "TAR_INVALID");
  // A negative base-256 mtime is a timestamp refusal; a negative uid is not.
  refused(mtime([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), "TAR_TIMESTAMP");
  // Octal too large for a safe integer (12 octal digits fit; 0o77777777777 is fine).
  assert.equal(gate(mtime([...Buffer.from("77777777777\0")]))[0]!.mtime, 0o77777777777);
});

test("the record carries each header field: mode (permission bits only), uid, gid, mtime, size, link name, ordinal", () => {
  const bytes = writeTar([
    dir("d", { mode: 0o40755, uid: 7, gid: 8, mtime: 9 }),
    file("d/f", "abc", { mode: 0o100644 }),
    symlink("d/l", "f"),
    hardlink("d/h", "d/f"),
    file("d/e", ""),
  ]);
  const r = gate(bytes);
  assert.deepEqual(
    r.map((x) => [x.ordinal, x.name, x.type, x.mode, x.uid, x.gid, x.mtime, x.size, x.linkname]),
    [
      [0, "d/", "dir", 0o755, 7, 8, 9, 0, undefined],
      [1, "d/f", "file", 0o644, 0, 0, 0, 3, undefined],
      [2, "d/l", "symlink", 0o777, 0, 0, 0, 0, "f"],
      [3, "d/h", "hardlink", 0o644, 0, 0, 0, 0, "d/f"],
      [4, "d/e", "file", 0o644, 0, 0, 0, 0, undefined],
    ],
  );
  assert.ok(Object.isFrozen(r[0]));
  // A NUL typeflag is a regular file (old tars); the ustar prefix joins the name with "/".
  assert.equal(gate(archive(header(file("a", ""), (h) => (h[156] = 0))))[0]!.type, "file");
  assert.equal(gate(archive(header(file("n", ""), field(345, 155, "p/q"))))[0]!.name, "p/q/n");
});

test("a header's own name reads the same whether it is ASCII (read in place) or not (decoded strictly), with and without the ustar prefix", () => {
  const bytesAt = (off: number, len: number, bytes: number[]) => (h: Buffer) => {
    h.fill(0, off, off + len);
    Buffer.from(bytes).copy(h, off);
  };
  const named = (name: number[], prefix: number[] = []) =>
    archive(
      header(file("x", ""), (h) => {
        bytesAt(0, 100, name)(h);
        bytesAt(345, 155, prefix)(h);
      }),
    );
  const utf8 = (s: string) => [...Buffer.from(s, "utf8")];
  // controls: ASCII names with and without a prefix, and UTF-8 in either field, give the decoded text
  assert.equal(gate(named(utf8("plain.txt")))[0]!.name, "plain.txt");
  assert.equal(gate(named(utf8("n"), utf8("p/q")))[0]!.name, "p/q/n");
  assert.equal(gate(named(utf8("café")))[0]!.name, "café");
  assert.equal(gate(named(utf8("n"), utf8("über")))[0]!.name, "über/n");
  assert.equal(gate(named(utf8("文件"), utf8("d")))[0]!.name, "d/文件");
  // a latin1 byte is not UTF-8, in the name or in the prefix (the ASCII path must not take it as latin1)
  refused(named([0x63, 0x61, 0x66, 0xe9]), "TAR_NAME_UTF8");
  refused(named(utf8("n"), [0x70, 0xe9]), "TAR_NAME_UTF8");
  // a multi-byte character split by the "/" the prefix is joined with is not UTF-8 either
  const e = utf8("é");
  refused(named([e[1]!], [e[0]!]), "TAR_NAME_UTF8");
});

test("pax records override size, uid, gid, mtime, path and linkpath; an unknown key is refused naming the member", () => {
  const r = gate(writeTar([file("f", "xy", { pax: { uid: "5", gid: "6", mtime: "7", path: "renamed" } }), symlink("l", "x", { pax: { linkpath: "y" } })]));
  assert.deepEqual(
    r.map((x) => [x.name, x.uid, x.gid, x.mtime, x.size, x.linkname]),
    [
      ["renamed", 5, 6, 7, 2, undefined],
      ["l", 0, 0, 0, 0, "y"],
    ],
  );
  refused(writeTar([file("f", "", { pax: { "SCHILY.acl.access": "x" } })]), "TAR_XATTR", "/layers/0:f");
});

test("checksum and magic: one byte off or a v7 header is TAR_INVALID; the checksum skips its own field", () => {
  const d = dir("d");
  assert.equal(gate(archive(header(d))).length, 1);
  refused(archive(header(d, (h) => (h[0] = 0x65), true)), "TAR_INVALID", "/layers/0@0");
  refused(archive(header(d, (h) => (h[511] = 1), true)), "TAR_INVALID");
  refused(archive(header(d, (h) => (h[147] = 1), true)), "TAR_INVALID");
  refused(archive(header(d, (h) => (h[156] = 0x35 + 1), true)), "TAR_INVALID");
  // The checksum field's own bytes count as spaces: "0000000\0" vs "       \0" do not change the sum.
  const spaced = header(d, () => {}, false);
  const text = spaced.subarray(148, 156).toString("latin1");
  assert.match(text, /^[0-7]{6}\0 $/);
  const stored = header(d, (h) => h.write(`${text.slice(0, 6)} \0`, 148, 8, "latin1"), true);
  assert.equal(gate(archive(stored)).length, 1);
  refused(archive(header(d, field(257, 8, "ustar\0" + "01"))), "TAR_INVALID");
  refused(archive(header(d, (h) => h.fill(0, 257, 265))), "TAR_INVALID");
  assert.equal(gate(archive(header(dir("g", { format: "gnu" })))).length, 1);
});

test("member types: directories, files, symlinks and hard links, and devices and FIFOs as records for the policy; each other type is refused naming the member", () => {
  // devices and FIFOs pass the gate as records: layer application refuses or skips them by policy (devices: skip)
  for (const [flag, type] of [
    ["3", "chardev"],
    ["4", "blockdev"],
    ["6", "fifo"],
  ] as const) {
    assert.equal(gate(archive(header(file("m", ""), (h) => h.write(flag, 156, "latin1"))))[0]!.type, type);
  }
  for (const flag of ["7", "Z"]) {
    refused(archive(header(file("m", ""), (h) => h.write(flag, 156, "latin1"))), "TAR_UNSUPPORTED_TYPE", "/layers/0:m");
  }
  refused(archive(header(file("m", ""), (h) => h.write("S", 156, "latin1"))), "TAR_SPARSE", "/layers/0@0");
  refused(archive(header(file("m", ""), (h) => h.write("g", 156, "latin1"))), "TAR_PAX", "/layers/0@0");
});

test("member rules: a name, no trailing / on a file, no size on a non-file, a target on a link", () => {
  refused(archive(header(file("x", ""), (h) => h.fill(0, 0, 100))), "TAR_UNSAFE_PATH", "/layers/0@0");
  refused(writeTar([file("f/", "")]), "TAR_INVALID", "/layers/0:f/");
  assert.equal(gate(writeTar([file("f", "")]))[0]!.name, "f");
  refused(writeTar([dir("d", { size: 512 })]), "TAR_INVALID", "/layers/0:d/");
  refused(writeTar([symlink("l", "", {})]), "TAR_INVALID", "/layers/0:l");
  refused(writeTar([hardlink("h", "")]), "TAR_INVALID", "/layers/0:h");
  refused(writeTar([symlink("l", "t", { pax: { linkpath: "" } })]), "TAR_INVALID", "/layers/0:l");
  refused(writeTar([file("n", "", { pax: { path: "n\u0000x" } })]), "TAR_UNSAFE_PATH");
  refused(writeTar([file(Buffer.from([0x66, 0xff]) as unknown as string, "")]), "TAR_NAME_UTF8");
  refused(writeTar([symlink("l", Buffer.from([0xc3]) as unknown as string)]), "TAR_NAME_UTF8", "/layers/0:l");
});

test("GNU headers: atime and ctime must be zero; long names and links apply to the next member only", () => {
  refused(writeTar([dir("d", { format: "gnu", gnuTimes: { atime: 1 } })]), "TAR_TIMESTAMP", "/layers/0@0");
  refused(writeTar([dir("d", { format: "gnu", gnuTimes: { ctime: 1 } })]), "TAR_TIMESTAMP", "/layers/0@0");
  assert.equal(gate(writeTar([dir("d", { format: "gnu", gnuTimes: { atime: 0, ctime: 0 } })])).length, 1);
  // GNU headers have no prefix field: bytes at 345 are atime, so a "prefix" there is an error, not a name.
  const long = "n".repeat(120);
  const r = gate(writeTar([file(long, "", { longName: "gnu" }), file("short", "")]));
  assert.deepEqual(
    r.map((x) => x.name),
    [long, "short"],
  );
});

test("extended headers: two of one kind for one member, or one with no member, are refused; limits apply", () => {
  const pax = writeTar([file("a", "", { pax: { mtime: "1" } })], { eof: false });
  const paxHeader = pax.subarray(0, pax.length - 512);
  refused(Buffer.concat([paxHeader, paxHeader, writeTar([file("a", "")])]), "TAR_PAX");
  refused(Buffer.concat([paxHeader, Buffer.alloc(1024)]), "TAR_INVALID");
  assert.equal(gate(Buffer.concat([paxHeader, writeTar([file("a", "")])]))[0]!.mtime, 1);
  const small = { ...DEFAULT_LIMITS, extendedHeaderBytes: 8 };
  assertCode(() => gate(pax, small), "LIMIT_EXCEEDED");
  assert.equal(gate(writeTar([file("a", "")]), small).length, 1);
  assertCode(() => gate(writeTar([file("a", "123")]), { ...DEFAULT_LIMITS, fileSize: 2 }), "LIMIT_EXCEEDED");
  assert.equal(gate(writeTar([file("a", "12")]), { ...DEFAULT_LIMITS, fileSize: 2 }).length, 1);
  assertCode(() => gate(writeTar([dir("a"), dir("b")]), { ...DEFAULT_LIMITS, entries: 1 }), "LIMIT_EXCEEDED");
  assert.equal(gate(writeTar([dir("a")]), { ...DEFAULT_LIMITS, entries: 1 }).length, 1);
});

test("the end: two zero blocks and only zeros after them; one zero block or a cut stream is TAR_INVALID", () => {
  const one = writeTar([dir("d")], { eof: false });
  assert.equal(gate(Buffer.concat([one, Buffer.alloc(1024), Buffer.alloc(700)])).length, 1);
  refused(Buffer.concat([one, Buffer.alloc(512)]), "TAR_INVALID");
  refused(one, "TAR_INVALID");
  refused(Buffer.concat([one, Buffer.alloc(100)]), "TAR_INVALID");
  refused(Buffer.concat([one, Buffer.alloc(1024), Buffer.from([0, 0, 1])]), "TAR_TRAILING");
  refused(Buffer.concat([one, Buffer.alloc(512), header(dir("x"))]), "TAR_TRAILING");
  const cut = writeTar([file("f", "abc")]).subarray(0, 600);
  refused(cut, "TAR_INVALID");
});

/** A GNU extended header of `type` ("L" long name, "K" long link) holding `body`, as header and padded body blocks. */
function gnuExt(type: "L" | "K", body: Buffer): Buffer {
  const blocks = writeTar([file("x".repeat(101), "", { longName: "gnu" })], { eof: false });
  const h = header({ raw: blocks.subarray(0, 512) }, (b) => {
    b.write(type, 156, "latin1");
    b.fill(0, 124, 136);
    b.write(`${body.length.toString(8).padStart(11, "0")}\0`, 124, 12, "latin1");
  });
  const padded = Buffer.alloc(Math.ceil(body.length / 512) * 512);
  body.copy(padded);
  return Buffer.concat([h, padded]);
}

test("numbers fill their whole field without a terminator; a 100-byte name fills its field", () => {
  assert.equal(gate(archive(header(dir("d"), field(108, 8, "00000017"))))[0]!.uid, 15);
  assert.equal(gate(archive(header(dir("d"), field(136, 12, "000000000017"))))[0]!.mtime, 15);
  const name = "n".repeat(100);
  assert.equal(gate(writeTar([file(name, "")]))[0]!.name, name);
});

test("refusals name the byte offset of their header, past data, extended headers and zero blocks", () => {
  const bad = header(dir("z"), (h) => (h[0] = 0x79), true);
  refused(Buffer.concat([writeTar([file("f", "abc")], { eof: false }), bad, Buffer.alloc(1024)]), "TAR_INVALID", "/layers/0@1024");
  refused(Buffer.concat([writeTar([dir("d")], { eof: false }), bad, Buffer.alloc(1024)]), "TAR_INVALID", "/layers/0@512");
  const pax = writeTar([file("a", "", { pax: { mtime: "1" } })], { eof: false });
  refused(Buffer.concat([pax.subarray(0, 1024), bad, Buffer.alloc(1024)]), "TAR_INVALID", "/layers/0@1024");
  const one = writeTar([dir("d")], { eof: false });
  refused(Buffer.concat([one, Buffer.alloc(512), header(dir("x"))]), "TAR_TRAILING", "/layers/0@1024");
  refused(Buffer.concat([one, Buffer.alloc(1024), Buffer.from([0, 0, 1])]), "TAR_TRAILING", "/layers/0@1536");
  // Zero bytes after the marker, in another chunk, move the offset on.
  const { gate: g } = capturingGate();
  g.push(Buffer.concat([one, Buffer.alloc(1024), Buffer.alloc(100)]));
  assertCode(() => g.push(Buffer.from([1])), "TAR_TRAILING", "/layers/0@1636");
  // A member name longer than 200 characters is cut to 200 in the path.
  const long = "m".repeat(250);
  refused(writeTar([{ name: long, typeflag: "V" }]), "TAR_UNSUPPORTED_TYPE", `/layers/0:${long.slice(0, 200)}`);
});

test("chunks that end exactly at a header or data boundary deliver every member and its bytes (control: one chunk)", () => {
  const tar = writeTar([dir("d"), file("d/a", "x".repeat(600)), file("d/b", "y".repeat(512)), symlink("l", "d/a"), file("e", "")]);
  const delivered = (size: number) => {
    const c = capturingGate();
    for (let at = 0; at < tar.length; at += size) c.gate.push(tar.subarray(at, at + size));
    c.gate.end();
    return { names: c.records.map((r) => r.name), bodies: [...c.bodies].map(([k, v]) => [k, v.toString()]) };
  };
  const whole = delivered(tar.length);
  assert.deepEqual(whole, {
    names: ["d/", "d/a", "d/b", "l", "e"],
    bodies: [
      [1, "x".repeat(600)],
      [2, "y".repeat(512)],
      [4, ""],
    ],
  });
  for (const size of [1, 88, 512, 1024, 1112, 1536]) assert.deepEqual(delivered(size), whole, `chunks of ${size}`);
});

test("GNU long names and links: each applies to the next member once; two of a kind, or one with no member, are refused", () => {
  const longName = "L".repeat(150);
  const longLink = "K".repeat(150);
  const nameExt = gnuExt("L", Buffer.from(`${longName}\0`));
  const linkExt = gnuExt("K", Buffer.from(`${longLink}\0\0`));
  const link = writeTar([symlink("s", "t")], { eof: false });
  const r = gate(Buffer.concat([nameExt, linkExt, link, writeTar([symlink("s2", "t2")])]));
  assert.deepEqual(
    r.map((x) => [x.name, x.linkname]),
    [
      [longName, longLink],
      ["s2", "t2"],
    ],
  );
  // A pax header and a GNU long name for one member are two kinds, not two of one kind.
  const pax = writeTar([file("a", "", { pax: { mtime: "1" } })], { eof: false }).subarray(0, 1024);
  assert.equal(gate(Buffer.concat([pax, nameExt, writeTar([file("a", "")])]))[0]!.name, longName);
  refused(Buffer.concat([nameExt, nameExt, writeTar([file("a", "")])]), "TAR_PAX", "/layers/0@1024");
  refused(Buffer.concat([linkExt, linkExt, link, Buffer.alloc(1024)]), "TAR_PAX", "/layers/0@1024");
  refused(Buffer.concat([nameExt, Buffer.alloc(1024)]), "TAR_INVALID", "/layers/0@1024");
  refused(Buffer.concat([linkExt, Buffer.alloc(1024)]), "TAR_INVALID", "/layers/0@1024");
  // A NUL inside a long name (not only at its end) is refused.
  refused(Buffer.concat([gnuExt("L", Buffer.from("ab\0cd\0")), writeTar([file("a", "")])]), "TAR_UNSAFE_PATH", "/layers/0@1024");
  refused(Buffer.concat([gnuExt("K", Buffer.from("ab\0cd\0")), link, Buffer.alloc(1024)]), "TAR_UNSAFE_PATH", "/layers/0@1024");
  // A long link then a long name (the other order) is accepted too.
  assert.deepEqual(
    gate(Buffer.concat([linkExt, nameExt, link, Buffer.alloc(1024)])).map((x) => [x.name, x.linkname]),
    [[longName, longLink]],
  );
});

test("pax: an empty extended header is accepted; a pax size replaces the header's size", () => {
  const empty = header(file("PaxHeaders/x", ""), (h) => h.write("x", 156, "latin1"));
  assert.equal(gate(Buffer.concat([empty, writeTar([file("a", "")])]))[0]!.name, "a");
  const r = gate(writeTar([file("f", "abc", { size: 0, pax: { size: "3" } }), file("g", "")]));
  assert.deepEqual(
    r.map((x) => [x.name, x.size]),
    [
      ["f", 3],
      ["g", 0],
    ],
  );
});

test("device members carry their major and minor numbers, block devices as well as character devices; a plain member has no device", () => {
  for (const flag of ["3", "4"]) {
    const h = header(file("m", ""), (b) => {
      b.write(flag, 156, "latin1");
      field(329, 8, "0000010\0")(b);
      field(337, 8, "0000002\0")(b);
    });
    assert.deepEqual(gate(archive(h))[0]!.device, { major: 8, minor: 2 }, flag);
  }
  assert.equal("device" in gate(archive(header(file("m", ""))))[0]!, false, "control");
});

test("a member's own pax problem (an unknown key): refused by default; in collect mode put on that member's record, and the stream reads on; control: the next member has no issues", () => {
  const bytes = writeTar([file("a", "x", { pax: { "cairn.unknown": "1" } }), file("b", "y")]);
  const code = assertCode(() => gate(bytes), "TAR_PAX").code;
  const { gate: g, records } = capturingGate(DEFAULT_LIMITS, "/layers/0", true);
  g.push(bytes);
  g.end();
  assert.deepEqual(
    records.map((r) => [r.name, (r as { issues?: { code: string }[] }).issues?.map((i) => i.code)]),
    [
      ["a", [code]],
      ["b", undefined],
    ],
  );
});
