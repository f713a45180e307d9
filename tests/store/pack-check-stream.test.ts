/**
 * PackCheck given the pack it expects (claim W57): each content's bytes are
 * compared with that pack's as they stream, and the hint must turn out to be
 * the rebuilt index's name. The same pack edits the hashed check refuses
 * (tests/store/pack.test.ts) are refused here, across 1 MiB windows, with
 * repeated and abandoned contents; a wrong or missing hint falls back to the
 * hashed check, and nothing is left open.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256, type Sha256Digest } from "../../src/core/index.ts";
import { PackCheck, PackWriter, Store, type PackIndex } from "../../src/store/index.ts";

const fresh = () => new Store(join(mkdtempSync(join(tmpdir(), "cairn-packcheck-")), "store"));
const STRADDLING = [Buffer.alloc(0), Buffer.alloc((1 << 20) - 3, 1), Buffer.from("across"), Buffer.alloc(0), Buffer.alloc(2 << 20, 2), Buffer.from("end")];
const MANY = Array.from({ length: 3000 }, (_, i) => Buffer.from(`content ${i % 2500} `.repeat(1 + (i % 97)))); // the last 500 repeat earlier ones

function writePack(store: Store, contents: readonly Buffer[]): PackIndex {
  const w = new PackWriter(store);
  for (const c of contents) w.add(c);
  return w.finish();
}

/** Streams every content in chunks of `step` bytes, each after an abandoned content (a refused member), as applyLayers may. */
function check(store: Store, contents: readonly Buffer[], hint: Sha256Digest | undefined, step = 1 << 16): PackIndex | undefined {
  const c = new PackCheck(store, hint);
  for (const d of contents) {
    c.begin(7).write(Buffer.from("abandoned"));
    const w = c.begin(d.length);
    for (let i = 0; i < d.length; i += step) w.write(d.subarray(i, i + step));
    assert.deepEqual(w.end(), { sha256: sha256(d), size: d.length });
  }
  return c.finish();
}

const openFds = () => readdirSync("/proc/self/fd").length;

for (const [name, contents] of [
  ["contents straddling 1 MiB windows", STRADDLING],
  ["3,000 small contents, 500 repeated", MANY],
] as const) {
  test(`PackCheck with the expected pack: accepts the intact pack of ${name}, refuses any one content's first or last byte changed`, () => {
    const store = fresh();
    const p = writePack(store, contents);
    const fds = openFds();
    for (const step of [1 << 16, 1 << 20, 3 << 20]) assert.deepEqual(check(store, contents, p.digest, step)?.entries, p.entries, `control: chunks of ${step}`);
    const path = store.pathOf("packs", p.digest);
    const original = readFileSync(path);
    const sized = contents.filter((c) => c.length > 0);
    for (const c of [sized[0]!, sized[Math.floor(sized.length / 2)]!, sized[sized.length - 1]!]) {
      const e = p.entries.get(sha256(c))!;
      for (const at of [e.offset, e.offset + e.size - 1]) {
        const b = Buffer.from(original);
        b[at]! ^= 1;
        writeFileSync(path, b);
        assert.equal(check(store, contents, p.digest), undefined, `a byte changed at ${at}`);
      }
    }
    writeFileSync(path, original);
    assert.ok(check(store, contents, p.digest) !== undefined, "control: restored");
    assert.equal(openFds(), fds, "nothing left open");
  });
}

test("PackCheck with the expected pack refuses a changed tail, a grown or truncated pack, and a symlink", () => {
  const contents = STRADDLING;
  const edits: Array<[string, (path: string, b: Buffer) => void]> = [
    ["the magic changed", (path, b) => writeFileSync(path, Buffer.concat([b.subarray(0, -1), Buffer.from("X")]))],
    [
      "an index byte changed",
      (path, b) => writeFileSync(path, Buffer.concat([b.subarray(0, b.length - 30), Buffer.from([b[b.length - 30]! ^ 1]), b.subarray(b.length - 29)])),
    ],
    ["grown", (path, b) => writeFileSync(path, Buffer.concat([b, Buffer.from("x")]))],
    ["truncated in the body", (path, b) => writeFileSync(path, b.subarray(0, 1 << 20))],
    ["removed", (path) => rmSync(path)],
  ];
  for (const [what, edit] of edits) {
    const store = fresh();
    const p = writePack(store, contents);
    assert.ok(check(store, contents, p.digest) !== undefined, `control for ${what}`);
    const path = store.pathOf("packs", p.digest);
    edit(path, readFileSync(path));
    assert.equal(check(store, contents, p.digest), undefined, what);
  }
});

test("PackCheck with a wrong or missing expected pack falls back to the hashed check of the rebuilt name", () => {
  const store = fresh();
  const p = writePack(store, MANY);
  const other = writePack(store, STRADDLING);
  for (const hint of [other.digest, `sha256:${"0".repeat(64)}` as Sha256Digest, undefined]) {
    assert.deepEqual(check(store, MANY, hint)?.entries, p.entries, `intact, hint ${hint}`);
    const path = store.pathOf("packs", p.digest);
    const original = readFileSync(path);
    const b = Buffer.from(original);
    b[p.entries.get(sha256(MANY[1500]!))!.offset]! ^= 1;
    writeFileSync(path, b);
    assert.equal(check(store, MANY, hint), undefined, `changed, hint ${hint}`);
    writeFileSync(path, original);
  }
  assert.equal(check(store, MANY.slice(1), p.digest), undefined, "other contents name another pack, which is not stored");
});

test("PackCheck.abort closes the expected pack after a refused derivation; abort and finish are safe to repeat", () => {
  const store = fresh();
  const p = writePack(store, STRADDLING);
  const fds = openFds();
  const c = new PackCheck(store, p.digest);
  assert.equal(openFds(), fds + 1, "the expected pack is open while contents stream");
  c.add(STRADDLING[1]!);
  c.abort();
  c.abort();
  assert.equal(openFds(), fds);
  const d = new PackCheck(store, p.digest);
  for (const s of STRADDLING) d.add(s);
  assert.ok(d.finish() !== undefined);
  d.abort();
  assert.equal(openFds(), fds);
});
