import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256 } from "../../src/core/index.ts";
import { inspectPack, PackCheck, PackEntries, PackWriter, readPacked, Store, type FinishedPack, type PackIndex } from "../../src/store/index.ts";
import { assertCode } from "../helpers/errors.ts";

const fresh = () => new Store(join(mkdtempSync(join(tmpdir(), "cairn-pack-")), "store"));
const CONTENTS = ["alpha\n", "", "beta beta\n", "alpha\n", "x".repeat(3 << 20), "gamma"].map((s) => Buffer.from(s));

function writePack(store: Store, contents: readonly Buffer[] = CONTENTS, options: { checkExisting?: boolean } = {}): FinishedPack {
  const w = new PackWriter(store);
  for (const c of contents) assert.deepEqual(w.add(c), { sha256: sha256(c), size: c.length });
  return w.finish(options);
}

function flipByte(path: string, at: number): void {
  const b = readFileSync(path);
  b.writeUInt8(b.readUInt8(at) ^ 1, at);
  writeFileSync(path, b);
}

test("a pack holds each distinct content once, is private, and reads back verified", () => {
  const store = fresh();
  const pack = writePack(store);
  assert.equal(pack.entries.size, 5, "the repeated content is stored once");
  const path = store.pathOf("packs", pack.digest);
  assert.equal(statSync(path).mode & 0o777, 0o600);
  assert.equal(statSync(join(store.root, "packs", "sha256")).mode & 0o777, 0o700);
  assert.equal(statSync(path).size, pack.size);
  for (const c of CONTENTS) assert.ok(readPacked(store, pack, sha256(c), c.length).equals(c));
  store.close();
  assert.deepEqual(readdirSync(join(store.root, "staging")), [], "nothing left in staging");
});

/** Streams `data` into `w` in chunks of `step` bytes. */
function stream(w: PackWriter, data: Buffer, step: number): { sha256: string; size: number } {
  const c = w.begin(data.length);
  for (let i = 0; i < data.length; i += step) c.write(data.subarray(i, i + step));
  return c.end();
}

test("contents streamed in chunks make the same pack as contents added whole; a repeat or an abandoned content leaves no bytes", () => {
  const whole = writePack(fresh());
  for (const step of [1, 7, 1 << 20, 5 << 20]) {
    const store = fresh();
    const w = new PackWriter(store);
    for (const c of CONTENTS) {
      // an abandoned content (a refused member) before each: its bytes must not stay in the body
      const dropped = w.begin(100);
      dropped.write(Buffer.from("never ended ".repeat(200_000)));
      assert.deepEqual(stream(w, c, step), { sha256: sha256(c), size: c.length });
    }
    const streamed = w.finish();
    assert.equal(streamed.digest, whole.digest, `chunks of ${step}`);
    assert.equal(streamed.size, whole.size);
    assert.equal(statSync(store.pathOf("packs", streamed.digest)).size, whole.size, "no bytes of a dropped content are left past the body");
    assert.equal(inspectPack(store, streamed.digest, Number.MAX_SAFE_INTEGER).entries.size, 5);
    for (const c of CONTENTS) assert.ok(readPacked(store, streamed, sha256(c), c.length).equals(c));
    store.close();
  }
});

test("a content writer used after another began is refused", () => {
  const store = fresh();
  const w = new PackWriter(store);
  const a = w.begin(1);
  const b = w.begin(1);
  assertCode(() => a.write(Buffer.from("a")), "USAGE");
  assertCode(() => a.end(), "USAGE");
  // control: the current writer works
  b.write(Buffer.from("b"));
  assert.equal(b.end().size, 1);
  w.abort();
});

test("the pack name is a function of the contents and their order, and pins every byte", () => {
  const a = writePack(fresh());
  const b = writePack(fresh());
  assert.equal(a.digest, b.digest);
  assert.deepEqual([...a.entries], [...b.entries]);
  const reordered = writePack(fresh(), [...CONTENTS].reverse());
  assert.notEqual(reordered.digest, a.digest, "control: another order is another pack");
  const store = fresh();
  const p = writePack(store);
  assert.equal(inspectPack(store, p.digest, Number.MAX_SAFE_INTEGER).digest, p.digest);
  assert.deepEqual([...inspectPack(store, p.digest, Number.MAX_SAFE_INTEGER).entries], [...p.entries]);
});

test("an empty pack is valid", () => {
  const store = fresh();
  const p = writePack(store, []);
  assert.equal(p.entries.size, 0);
  assert.equal(inspectPack(store, p.digest, 1000).size, p.size);
});

test("reads refuse tampered, truncated, grown, symlinked and missing packs, and unknown contents", () => {
  const store = fresh();
  const pack = writePack(store);
  const path = store.pathOf("packs", pack.digest);
  const beta = sha256(Buffer.from("beta beta\n"));
  const gamma = sha256(Buffer.from("gamma"));
  assert.equal(readPacked(store, pack, beta, 100).toString(), "beta beta\n"); // control
  flipByte(path, pack.entries.get(beta)!.offset);
  assertCode(() => readPacked(store, pack, beta, 100), "STORE_CORRUPT");
  assert.equal(readPacked(store, pack, gamma, 100).toString(), "gamma", "other contents still read");
  assertCode(() => readPacked(store, pack, sha256("not packed"), 100), "STORE_MISSING");
  assertCode(() => readPacked(store, pack, gamma, 2), "LIMIT_EXCEEDED");
  writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.from("more")]));
  assertCode(() => readPacked(store, pack, gamma, 100), "STORE_CORRUPT");
  rmSync(path);
  assertCode(() => readPacked(store, pack, gamma, 100), "STORE_MISSING");
  writeFileSync(join(store.root, "elsewhere"), "gamma");
  symlinkSync(join(store.root, "elsewhere"), path);
  assertCode(() => readPacked(store, pack, gamma, 100), "STORE_CORRUPT");
});

const packEdits: Array<[string, (path: string, p: PackIndex) => void]> = [
  ["a body byte", (path, p) => flipByte(path, p.entries.get(sha256(Buffer.from("gamma")))!.offset)],
  ["an index digest byte", (path, p) => flipByte(path, p.size - 20 - 40 * 5 + 2)],
  ["an index size byte", (path, p) => flipByte(path, p.size - 20 - 40 * 4 + 39)],
  ["the entry count", (path, p) => flipByte(path, p.size - 13)],
  ["the magic", (path, p) => flipByte(path, p.size - 1)],
];
for (const [what, edit] of packEdits) {
  test(`inspectPack refuses a pack with ${what} changed`, () => {
    const store = fresh();
    const p = writePack(store);
    inspectPack(store, p.digest, Number.MAX_SAFE_INTEGER); // control
    edit(store.pathOf("packs", p.digest), p);
    assertCode(() => inspectPack(store, p.digest, Number.MAX_SAFE_INTEGER), "STORE_CORRUPT");
  });
}

test("inspectPack bounds the pack and validates the name it is given", () => {
  const store = fresh();
  const p = writePack(store);
  assertCode(() => inspectPack(store, p.digest, p.size - 1), "LIMIT_EXCEEDED");
  assertCode(() => inspectPack(store, "../../etc/passwd", 100), "DIGEST_INVALID");
});

test("finish keeps a present pack, and replaces a corrupt one only when checking existing packs; it says which", () => {
  const store = fresh();
  const p = writePack(store);
  assert.equal(p.published, "written");
  const path = store.pathOf("packs", p.digest);
  const ino = statSync(path).ino;
  assert.equal(writePack(store, CONTENTS, { checkExisting: true }).published, "compared");
  assert.equal(statSync(path).ino, ino, "a pack holding the same bytes is left in place");
  flipByte(path, 0); // same size, wrong bytes
  assert.equal(writePack(store).published, "kept");
  assertCode(() => inspectPack(store, p.digest, Number.MAX_SAFE_INTEGER), "STORE_CORRUPT"); // control: a plain finish trusts the size
  assert.equal(writePack(store, CONTENTS, { checkExisting: true }).published, "written");
  inspectPack(store, p.digest, Number.MAX_SAFE_INTEGER);
  store.close();
  assert.deepEqual(readdirSync(join(store.root, "staging")), []);
});

test("an aborted pack publishes nothing", () => {
  const store = fresh();
  const w = new PackWriter(store);
  w.add(Buffer.from("partial"));
  w.abort();
  w.abort();
  assert.deepEqual(readdirSync(join(store.root, "packs", "sha256")), []);
  assert.deepEqual(readdirSync(store.stagingDir), []);
  assertCode(() => w.add(Buffer.from("more")), "USAGE");
});

function checkPack(store: Store, contents: readonly Buffer[] = CONTENTS): PackIndex | undefined {
  const c = new PackCheck(store);
  for (const d of contents) assert.deepEqual(c.add(d), { sha256: sha256(d), size: d.length });
  return c.finish();
}

test("PackCheck accepts exactly the stored pack its contents name, and writes nothing", () => {
  const store = fresh();
  assert.equal(checkPack(store), undefined, "no pack stored yet");
  const p = writePack(store);
  const ok = checkPack(store);
  assert.ok(ok !== undefined);
  assert.equal(ok.digest, p.digest);
  assert.deepEqual([...ok.entries], [...p.entries]);
  assert.equal(checkPack(store, CONTENTS.slice(1)), undefined, "other contents name another pack");
  assert.deepEqual(readdirSync(store.stagingDir), []);
});

const checkEdits: Array<[string, (path: string, p: PackIndex) => void]> = [
  ["a body byte changed", (path, p) => flipByte(path, p.entries.get(sha256(Buffer.from("gamma")))!.offset)],
  ["the first byte changed", (path) => flipByte(path, 0)],
  ["the magic changed", (path, p) => flipByte(path, p.size - 1)],
  ["removed", (path) => rmSync(path)],
  ["grown", (path) => writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.from("x")]))],
];
for (const [what, edit] of checkEdits) {
  test(`PackCheck refuses a stored pack with ${what}`, () => {
    const store = fresh();
    const p = writePack(store);
    assert.ok(checkPack(store) !== undefined); // control
    edit(store.pathOf("packs", p.digest), p);
    assert.equal(checkPack(store), undefined);
  });
}

// PackCheck reads the body front to back in 1 MiB blocks (claim W42): contents that straddle a block
// boundary, empty ones between them, and a pack of many small contents are all checked byte for byte.
const STRADDLING = [Buffer.alloc(0), Buffer.alloc((1 << 20) - 3, 1), Buffer.from("across"), Buffer.alloc(0), Buffer.alloc(2 << 20, 2), Buffer.from("end")];
const MANY = Array.from({ length: 3000 }, (_, i) => Buffer.from(`content ${i} `.repeat(1 + (i % 97))));
/** The intact pack of `contents` is accepted; a byte changed in the first, a middle or the last content is refused. */
function checkEveryChange(contents: readonly Buffer[]): void {
  const store = fresh();
  const p = writePack(store, contents);
  assert.ok(checkPack(store, contents) !== undefined, "control: the intact pack");
  const path = store.pathOf("packs", p.digest);
  const original = readFileSync(path);
  const sized = contents.filter((c) => c.length > 0);
  for (const c of [sized[0]!, sized[Math.floor(sized.length / 2)]!, sized[sized.length - 1]!]) {
    const e = p.entries.get(sha256(c))!;
    for (const at of [e.offset, e.offset + e.size - 1]) {
      flipByte(path, at);
      assert.equal(checkPack(store, contents), undefined, `a byte changed at ${at}`);
      writeFileSync(path, original);
    }
  }
  assert.ok(checkPack(store, contents) !== undefined, "control: restored");
}

test("PackCheck accepts the stored pack of contents straddling 1 MiB blocks and refuses it with any one content's byte changed", () =>
  checkEveryChange(STRADDLING));
test("PackCheck accepts the stored pack of 3,000 small contents and refuses it with any one content's byte changed", () => checkEveryChange(MANY));

test("a pack index holds its contents as columns and answers like a map in body order", () => {
  const e = new PackEntries();
  const digests = Array.from({ length: 5000 }, (_, i) => sha256(`content ${i}`));
  let offset = 0;
  digests.forEach((d, i) => {
    assert.equal(e.add(d, offset, i), true);
    offset += i;
  });
  assert.equal(e.add(digests[17]!, offset, 3), false, "a digest already present is not added again");
  assert.equal(e.size, 5000);
  assert.deepEqual(e.get(digests[4999]!), { offset: (4999 * 4998) / 2, size: 4999 });
  assert.equal(e.indexOf(digests[123]!), 123);
  digests.forEach((d, i) => {
    assert.equal(e.indexOf(d), i, `every content is found after the table grew (${d})`);
  });
  // a digest one bit away from a present one is another digest (the last byte, then the first)
  for (const at of [70, 7]) {
    const d = digests[42]!;
    const near = `${d.slice(0, at)}${(Number.parseInt(d[at]!, 16) ^ 1).toString(16)}${d.slice(at + 1)}`;
    assert.equal(e.indexOf(near), -1, near);
  }
  assert.equal(e.digestAt(123), digests[123]);
  assert.deepEqual([...e.keys()], digests, "iteration is in body order");
  // absent, uppercase, truncated and non-sha256 digests are not found (control: present ones are, above)
  const d0 = digests[0]!;
  const swap = (at: number, c: string) => `${d0.slice(0, at)}${c}${d0.slice(at + 1)}`;
  for (const d of [
    sha256("other"),
    d0.toUpperCase(),
    swap(40, d0[40]!.toUpperCase() === d0[40] ? "G" : d0[40]!.toUpperCase()), // one upper-case digit (or a non-digit)
    swap(40, "g"),
    swap(70, "\u00e9"),
    swap(6, ";"),
    `${d0}0`,
    d0.slice(0, 40),
    `blake3:${d0.slice(7)}`,
  ]) {
    assert.equal(e.has(d as (typeof digests)[0]), false, d);
    assert.equal(e.indexOf(d), -1, d);
  }
  // addRaw takes the same digest as its 32 bytes: one index, whichever form added it
  const raw = Buffer.from(sha256("raw content").slice(7), "hex");
  assert.equal(e.addRaw(raw, offset, 11), true);
  assert.equal(e.add(sha256("raw content"), offset, 11), false, "the digest added raw is found by its string");
  assert.equal(e.addRaw(Buffer.from(digests[17]!.slice(7), "hex"), offset, 3), false, "a digest added as a string is found raw");
  assert.equal(e.digestAt(5000), sha256("raw content"));
  assert.throws(() => e.addRaw(raw.subarray(0, 31), offset, 1), TypeError, "31 bytes are not a sha256 digest");
});

test("a pack index made for an expected count finds every content, also past that count", () => {
  const digests = Array.from({ length: 3000 }, (_, i) => sha256(`sized ${i}`));
  for (const expected of [0, 1, 1000, 3000, 10_000]) {
    const e = new PackEntries(expected);
    digests.forEach((d, i) => {
      assert.equal(e.add(d, i, 1), true, `${expected}: ${d}`);
    });
    assert.equal(e.add(digests[5]!, 0, 1), false, `${expected}: a digest already present is not added again`);
    assert.equal(e.size, digests.length);
    digests.forEach((d, i) => {
      assert.equal(e.indexOf(d), i, `${expected}: ${d}`);
    });
    assert.equal(e.indexOf(sha256("absent")), -1, `${expected}: an absent digest is not found`);
  }
});
